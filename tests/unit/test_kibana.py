"""`esdedup.es.kibana` and ``esdedup kibana export``: the NDJSON is well formed for Kibana's saved-objects
import, its references resolve, and every field it names exists in the esdedup mapping."""
from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

import pytest

from esdedup.errors import ConfigError
from esdedup.es.kibana import INDEX_REF, UNDESCRIBED, field_descriptions, object_id, saved_objects, to_ndjson
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.schema import LSH_KEYS, band_fields, mapping_for
from esdedup.store.local import LocalStore
from tests.cli_runner import cli_runner

CONFIGS = {
    "default": FingerprintConfig(),
    "128-bit": FingerprintConfig(bits=128, hamming_k=5),
    "multi-table": FingerprintConfig(hamming_k=3, band_blocks=6),
    "probing": FingerprintConfig(hamming_k=3, band_blocks=3, probe_radius=1),
    "simhash-only": FingerprintConfig(strategy="simhash"),
    "minhash": FingerprintConfig(strategy="minhash", minhash_perm=64, minhash_bands=16),
}
TYPES = {"index-pattern", "search", "visualization"}
REQUIRED = {"type", "id", "attributes", "references", "coreMigrationVersion", "typeMigrationVersion"}
SEMVER = re.compile(r"^\d+\.\d+\.\d+$")


# -- helpers ---------------------------------------------------------------------------------------------
def mapping_field_names(config: FingerprintConfig) -> set[str]:
    """Dotted names of the leaf fields of ``mapping_for(config)`` (``dedup.band_0``, ``title``, ...)."""
    out: set[str] = set()

    def walk(props: dict[str, Any], prefix: str) -> None:
        for name, spec in props.items():
            if "properties" in spec:
                walk(spec["properties"], f"{prefix}{name}.")
            else:
                out.add(prefix + name)

    walk(mapping_for(config)["properties"], "")
    return out


def kql_fields(query: str) -> set[str]:
    return set(re.findall(r"([A-Za-z_][\w.]*)\s*:", query))


def referenced_fields(obj: dict[str, Any]) -> set[str]:
    """Every field name an object mentions: data view field attributes, source filters and time field,
    saved-search columns, sort and query, visualisation aggregation fields and queries."""
    attrs = obj["attributes"]
    names: set[str] = set()
    if obj["type"] == "index-pattern":
        names |= set(json.loads(attrs["fieldAttrs"]))
        names |= {f["value"] for f in json.loads(attrs["sourceFilters"])}
        if "timeFieldName" in attrs:
            names.add(attrs["timeFieldName"])
        return names
    source = json.loads(attrs["kibanaSavedObjectMeta"]["searchSourceJSON"])
    names |= kql_fields(source["query"]["query"])
    if obj["type"] == "search":
        names |= set(attrs["columns"])
        names |= {field for field, _direction in attrs["sort"]}
    else:
        for agg in json.loads(attrs["visState"])["aggs"]:
            if "field" in agg["params"]:
                names.add(agg["params"]["field"])
    return names


def parse_ndjson(text: str) -> list[dict[str, Any]]:
    assert text.endswith("\n")
    lines = text.splitlines()
    assert lines and all(line.strip() for line in lines), "no blank lines in NDJSON"
    return [json.loads(line) for line in lines]


# -- the library ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
def test_ndjson_is_importable_shape(config: FingerprintConfig) -> None:
    objects = parse_ndjson(to_ndjson(saved_objects("news", config)))
    assert objects[0]["type"] == "index-pattern", "referenced objects come first"
    by_key = {(o["type"], o["id"]): o for o in objects}
    assert len(by_key) == len(objects), "ids are unique"
    for obj in objects:
        assert REQUIRED <= set(obj), obj.keys()
        assert obj["type"] in TYPES
        assert isinstance(obj["attributes"], dict) and isinstance(obj["references"], list)
        assert SEMVER.match(obj["coreMigrationVersion"]) and SEMVER.match(obj["typeMigrationVersion"])
        for ref in obj["references"]:
            assert set(ref) == {"name", "type", "id"}
            assert (ref["type"], ref["id"]) in by_key, f"unresolved reference {ref}"
        if obj["type"] == "index-pattern":
            attrs = obj["attributes"]
            assert attrs["title"] == "news"
            for key in ("fields", "fieldAttrs", "fieldFormatMap", "runtimeFieldMap", "sourceFilters"):
                json.loads(attrs[key])  # stored as JSON strings
            continue
        # Searches and visualisations point at the data view through searchSourceJSON.indexRefName.
        source = json.loads(obj["attributes"]["kibanaSavedObjectMeta"]["searchSourceJSON"])
        assert source["indexRefName"] == INDEX_REF
        assert [r for r in obj["references"] if r["name"] == source["indexRefName"]] == [
            {"name": INDEX_REF, "type": "index-pattern", "id": objects[0]["id"]}]
        assert source["query"]["language"] == "kuery" and source["filter"] == []
        assert obj["attributes"]["title"]
        if obj["type"] == "visualization":
            vis = json.loads(obj["attributes"]["visState"])
            assert vis["title"] == obj["attributes"]["title"] and vis["type"] == "table"
            assert {a["schema"] for a in vis["aggs"]} == {"metric", "bucket"}
            json.loads(obj["attributes"]["uiStateJSON"])


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
def test_every_referenced_field_exists_in_the_mapping(config: FingerprintConfig) -> None:
    known = mapping_field_names(config)
    assert {"dedup.simhash", "dedup.cluster_id", "dedup.duplicate_of", "title"} <= known
    for obj in saved_objects("news", config, time_field="timestamp"):
        missing = referenced_fields(obj) - known
        assert not missing, f"{obj['type']} {obj['attributes'].get('title')!r} names unknown fields {missing}"


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
def test_every_dedup_field_is_described(config: FingerprintConfig) -> None:
    dedup_fields = {n for n in mapping_field_names(config) if n.startswith("dedup.")}
    pattern = saved_objects("news", config)[0]
    attrs = json.loads(pattern["attributes"]["fieldAttrs"])
    assert set(attrs) == dedup_fields
    for name, attr in attrs.items():
        assert attr["customLabel"] and attr["customDescription"], name
        # A new mapping field gets a generic text; give it a real one in esdedup.es.kibana.field_descriptions.
        assert not attr["customDescription"].startswith(UNDESCRIBED), f"{name} has no real description"


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
def test_band_descriptions_name_the_right_bits(config: FingerprintConfig) -> None:
    layout = config.band_layout()
    descriptions = field_descriptions(config)
    for i, name in enumerate(band_fields(config)):
        label, text = descriptions[f"dedup.{name}"]
        assert text.startswith(f"SimHash band key of table {i}: bits ")
        assert "equal values = candidate near-duplicates" in text
        ranges = re.search(r"bits ([\d., ]+), stored", text)
        assert ranges is not None
        bits = set()
        for part in ranges.group(1).split(", "):
            lo, hi = map(int, part.split(".."))
            bits |= set(range(lo, hi + 1))
        expected = {s + k for b in layout.tables[i] for s, w in [layout.spans[b]] for k in range(w)}
        assert bits == expected and len(bits) == layout.key_widths[i]
        assert f"SimHash band {i}" in label
    if config.gets_signatures:
        label, text = descriptions[f"dedup.{LSH_KEYS}"]
        assert label == "MinHash LSH keys"
        assert f"{config.minhash_bands} bands of {config.minhash_rows} rows" in text


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
def test_visualisations_cover_clusters_and_every_band(config: FingerprintConfig) -> None:
    objects = saved_objects("news", config)
    terms = [next(a["params"]["field"] for a in json.loads(o["attributes"]["visState"])["aggs"] if a["type"] == "terms")
             for o in objects if o["type"] == "visualization"]
    assert terms == (["dedup.cluster_id"] + [f"dedup.{n}" for n in band_fields(config)]
                     + (["dedup.lsh_keys"] if config.gets_signatures else []))
    (search,) = [o for o in objects if o["type"] == "search"]
    attrs = search["attributes"]
    assert attrs["columns"] == ["title", "dedup.cluster_id", "dedup.duplicate_of", "dedup.simhash"]
    assert attrs["sort"] == [["dedup.cluster_id", "asc"]]
    query = json.loads(attrs["kibanaSavedObjectMeta"]["searchSourceJSON"])["query"]["query"]
    assert kql_fields(query) == {"dedup.duplicate_of"} and query.endswith("*")  # "field exists"


def test_ids_are_deterministic_uuid5() -> None:
    a = saved_objects("news", FingerprintConfig())
    b = saved_objects("news", FingerprintConfig(hamming_k=3))
    assert [o["id"] for o in a] == [o["id"] for o in b]
    assert to_ndjson(a) == to_ndjson(b)
    other = {o["id"] for o in saved_objects("blogs", FingerprintConfig())}
    assert not other & {o["id"] for o in a}
    for o in a:
        assert uuid.UUID(o["id"]).version == 5
    assert a[0]["id"] == object_id("news", "index-pattern")


def test_time_field_must_be_a_date_field() -> None:
    pattern = saved_objects("news", FingerprintConfig(), time_field="timestamp")[0]
    assert pattern["attributes"]["timeFieldName"] == "timestamp"
    assert "timeFieldName" not in saved_objects("news", FingerprintConfig())[0]["attributes"]
    with pytest.raises(ConfigError, match="not a date field"):
        saved_objects("news", FingerprintConfig(), time_field="title")


def test_index_patterns_are_allowed() -> None:
    objects = saved_objects("news-*", FingerprintConfig())
    assert objects[0]["attributes"]["title"] == "news-*"


# -- the command -----------------------------------------------------------------------------------------
@pytest.fixture
def cli_app(clean_env: Path):
    from esdedup_cli.main import app

    return app


def test_cli_export_missing_local_index_uses_options(cli_app, tmp_path: Path) -> None:
    result = cli_runner().invoke(cli_app, ["kibana", "export", "--index", "news", "--data-dir", str(tmp_path),
                                        "--hamming-k", "5"])
    assert result.exit_code == 0, result.stderr
    objects = parse_ndjson(result.stdout)
    expected = saved_objects("news", FingerprintConfig(hamming_k=5))
    assert objects == expected
    assert "not found" in result.stderr and "Error" not in result.stderr
    assert not (tmp_path / "news.sqlite").exists(), "export must not create the index"


def test_cli_export_reads_the_local_index_config(cli_app, tmp_path: Path) -> None:
    config = FingerprintConfig(hamming_k=4, band_blocks=6)  # 6 choose 2 = 15 band tables
    store = LocalStore("news", tmp_path)
    store.open(config)
    store.close()
    runner = cli_runner()
    result = runner.invoke(cli_app, ["kibana", "export", "--index", "news", "--data-dir", str(tmp_path)])
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    objects = parse_ndjson(result.stdout)
    assert objects == saved_objects("news", config)
    assert sum(o["type"] == "visualization" for o in objects) == 2 + len(band_fields(config)) == 17  # + LSH keys

    # Options that contradict the index: a usage error, one line, no traceback.
    bad = runner.invoke(cli_app, ["kibana", "export", "--index", "news", "--data-dir", str(tmp_path),
                                  "--hamming-k", "3"])
    assert bad.exit_code == 2
    assert bad.stdout == ""
    assert bad.stderr.startswith("Error: index 'news' was built with a different fingerprint config")
    assert len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr


def test_cli_export_bad_time_field_is_a_usage_error(cli_app, tmp_path: Path) -> None:
    result = cli_runner().invoke(cli_app, ["kibana", "export", "--index", "news", "--data-dir", str(tmp_path),
                                        "--time-field", "title"])
    assert result.exit_code == 2
    assert "Error: time field 'title' is not a date field" in result.stderr


def test_cli_export_from_elasticsearch(cli_app, es_client, es_url: str, fresh_index: str) -> None:
    """The config comes from the real index's _meta, and every field the objects name is in the real
    index's mapping."""
    from esdedup.store.elastic.store import ElasticStore

    config = FingerprintConfig(hamming_k=5, band_blocks=7, strategy="simhash")  # 7 choose 2 = 21 tables
    store = ElasticStore(es_client, fresh_index, replicas=0)
    store.open(config)
    result = cli_runner().invoke(cli_app, ["kibana", "export", "--index", fresh_index, "--es", es_url])
    assert result.exit_code == 0, result.stderr
    objects = parse_ndjson(result.stdout)
    assert objects == saved_objects(fresh_index, config)

    mapping = es_client.indices.get_field_mapping(index=fresh_index, fields="*").body
    real = set(mapping[fresh_index]["mappings"])
    for obj in objects:
        assert referenced_fields(obj) <= real, obj["attributes"].get("title")
    assert len([f for f in real if f.startswith("dedup.band_")]) == 21
