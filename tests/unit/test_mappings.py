"""The shipped mapping files are the library's output: a change to fields, band count or vector size that
is not regenerated into mappings/ fails here."""
from __future__ import annotations

import json
from pathlib import Path

from esdedup import FingerprintConfig
from esdedup.schema import LSH_KEYS, band_fields, mapping_for, shipped_template, template_for

ROOT = Path(__file__).resolve().parents[2]
# Fields that record where the template was made, not what it means.
_VOLATILE = ("tokenizer_version",)


def _strip(template: dict) -> dict:
    t = json.loads(json.dumps(template))
    meta = t["template"]["mappings"]["_meta"]["esdedup"]
    meta.pop("esdedup_version", None)
    for k in _VOLATILE:
        meta["config"].pop(k, None)
    return t


def test_shipped_template_is_the_default_configs_template():
    shipped = json.loads((ROOT / "mappings" / "esdedup-template.json").read_text("utf-8"))
    assert _strip(shipped) == _strip(template_for(FingerprintConfig(), ["esdedup-*"]))
    assert shipped == shipped_template()  # the copy inside the installed package is the same file


def _dedup_props(config: FingerprintConfig) -> dict:
    return mapping_for(config)["properties"]["dedup"]["properties"]


def test_mapping_has_one_keyword_field_per_band_and_one_long_field_for_lsh_keys():
    config = FingerprintConfig(hamming_k=5, dims=128)
    props = _dedup_props(config)
    assert band_fields(config) == tuple(f"band_{i}" for i in range(6))
    for name in band_fields(config):
        assert props[name] == {"type": "keyword"}
    assert props[LSH_KEYS] == {"type": "long"}
    assert not [n for n in props if n.startswith("lsh_") and n != LSH_KEYS]
    assert LSH_KEYS not in _dedup_props(config.replace(strategy="simhash"))
    assert mapping_for(config)["_meta"]["esdedup"]["config"] == config.to_dict()


def test_the_vector_is_mapped_where_the_config_stores_it():
    config = FingerprintConfig(dims=128)
    assert "vector" not in _dedup_props(config)  # strategy auto, vector_index auto: the rule never reads it
    assert "vector" not in _dedup_props(config.replace(strategy="minhash"))
    knn = {"type": "dense_vector", "dims": 128, "index": True, "similarity": "cosine",
           "index_options": {"type": "int8_flat"}}
    assert _dedup_props(config.replace(strategy="simhash"))["vector"] == knn
    assert _dedup_props(config.replace(vector_index="int8_flat"))["vector"] == knn
    hnsw = _dedup_props(config.replace(vector_index="hnsw"))["vector"]
    assert hnsw["index_options"] == {"type": "hnsw"}
    flat = _dedup_props(config.replace(vector_index="none"))["vector"]
    assert flat == {"type": "dense_vector", "dims": 128, "index": False}


def test_only_types_of_the_plain_server():
    # All of these are mapped by the server module itself; none is x-pack only.
    allowed = {"keyword", "text", "date", "integer", "long", "boolean", "binary", "dense_vector", "object"}

    def types(props):
        for spec in props.values():
            yield spec.get("type", "object")
            yield from types(spec.get("properties", {}))

    assert set(types(mapping_for(FingerprintConfig())["properties"])) <= allowed
