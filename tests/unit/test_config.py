"""FingerprintConfig: JSON round trip, immutability, validation messages, identity and differences."""
from __future__ import annotations

import dataclasses
import json
import re

import pytest

from esdedup.errors import ConfigError
from esdedup.fingerprint.config import SCHEMA_VERSION, FingerprintConfig, file_digest


@pytest.fixture
def synonyms_file(tmp_path):
    path = tmp_path / "synonyms.dict"
    path.write_text("台胞 台湾居民 台湾同胞\n", encoding="utf-8")
    return path


def test_json_round_trip_default():
    cfg = FingerprintConfig()
    text = cfg.to_json()
    back = FingerprintConfig.from_json(text)
    assert back == cfg
    assert back.to_json() == text
    assert json.loads(text)["schema"] == SCHEMA_VERSION


def test_json_round_trip_non_default_fields(synonyms_file):
    cfg = FingerprintConfig(bits=128, hamming_k=5, tokenizer="char", shingle=3, weighting="tf_length",
                            dims=512, t2s=True, stopwords="none", cosine_threshold=0.9, strategy="auto",
                            short_text_chars=120, minhash_perm=64, minhash_bands=16, minhash_ngram=3,
                            synonyms_path=str(synonyms_file))
    back = FingerprintConfig.from_json(cfg.to_json())
    assert back == cfg
    assert back.synonyms_sha256 == file_digest(synonyms_file)
    # JSON keeps Chinese readable (ensure_ascii=False) and the keys sorted (stable text for _meta).
    assert list(json.loads(cfg.to_json())) == sorted(json.loads(cfg.to_json()))


def test_round_trip_does_not_rehash_a_moved_file(synonyms_file):
    cfg = FingerprintConfig(synonyms_path=str(synonyms_file))
    data = cfg.to_dict()
    synonyms_file.unlink()  # the digest travels with the config; the file is not needed to read it back
    back = FingerprintConfig.from_dict(data)
    assert back.synonyms_sha256 == cfg.synonyms_sha256


def test_frozen():
    cfg = FingerprintConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.bits = 128  # type: ignore[misc]
    assert cfg.bits == 64


def test_replace_revalidates():
    cfg = FingerprintConfig()
    assert cfg.replace(hamming_k=5).hamming_k == 5
    with pytest.raises(ConfigError, match="bits must be 64 or 128"):
        cfg.replace(bits=32)


@pytest.mark.parametrize("changes, message", [
    ({"bits": 32}, r"bits must be 64 or 128, got 32"),
    ({"bits": 100}, r"bits must be 64 or 128"),
    ({"hamming_k": 32}, r"hamming_k must be between 0 and 31, got 32"),
    ({"hamming_k": -1}, r"hamming_k must be between 0 and 31"),
    ({"tokenizer": "ik"}, r"tokenizer must be one of jieba, rjieba, char, got 'ik'"),
    ({"weighting": "bm25"}, r"weighting must be one of tf, tfidf, tf_length"),
    ({"weighting": "tfidf"}, r"tfidf.*needs a document-frequency table.*idf_path"),
    ({"tokenizer": "char"}, r"tokenizer 'char' needs shingle >= 1"),
    ({"shingle": 2}, r"shingle .* goes with tokenizer 'char'"),
    ({"dims": 4}, r"dims must be between 8 and 4096"),
    ({"stopwords": "file"}, r"stopwords 'file' needs stopwords_path"),
    ({"stopwords": "some"}, r"stopwords must be one of default, none, file"),
    ({"cosine_threshold": 0.0}, r"cosine_threshold must be in \(0, 1\]"),
    ({"strategy": "lsh"}, r"strategy must be one of auto, simhash, minhash"),
    ({"minhash_bands": 64}, r"minhash_bands \(64\) >= 1 and minhash_rows \(3\) >= 1 with minhash_bands \* "
                            r"minhash_rows at most minhash_perm \(128\): lower minhash_bands or minhash_rows"),
    ({"minhash_perm": 40}, r"minhash_bands \(16\).*minhash_rows \(3\).*minhash_perm \(40\)"),
    ({"minhash_bands": 0}, r"minhash_bands \(0\) >= 1"),
    ({"minhash_rows": 0}, r"minhash_rows \(0\) >= 1"),
    ({"minhash_ngram": 0}, r"minhash_ngram must be >= 1"),
    ({"schema": SCHEMA_VERSION + 1}, r"config schema .* is not supported .*upgrade esdedup"),
    ({"schema": SCHEMA_VERSION - 1}, r"not supported .*older esdedup.*ingest the documents .*again into a new index"),
])
def test_validation_errors_are_config_errors_with_helpful_text(changes, message):
    with pytest.raises(ConfigError, match=message):
        FingerprintConfig(**changes)


#: A config as an index's ``_meta`` (or the local store) held it when written before ``minhash_rows`` existed (such
#: an index is now refused for its schema; a config given without ``minhash_rows`` still reads so).
_STORED_BEFORE_ROWS = (
    '{"band_blocks": 0, "band_key_blocks": 0, "bits": 64, "containment_threshold": 0.8, "cosine_threshold": 0.8, '
    '"dims": 256, "hamming_k": 3, "idf_path": null, "idf_sha256": null, "jaccard_threshold": 0.5, '
    '"minhash_bands": 32, "minhash_ngram": 2, "minhash_perm": 128, "probe_radius": 0, "schema": SCHEMA, "shingle": 0, '
    '"short_text_chars": 200, "stopwords": "default", "stopwords_path": null, "stopwords_sha256": null, '
    '"strategy": "auto", "synonyms_path": null, "synonyms_sha256": null, "t2s": false, "tokenizer": "jieba", '
    '"tokenizer_version": "0.42.1", "user_dict_path": null, "user_dict_sha256": null, "vector_index": "auto", '
    '"weighting": "tf"}').replace("SCHEMA", str(SCHEMA_VERSION))
#: The LSH keys of `_POEM` under that config, computed by esdedup before ``minhash_rows`` existed.
_POEM = "床前明月光，疑是地上霜。举头望明月，低头思故乡。"
_POEM_KEYS_32X4 = [
    "674810912044", "1006281018634", "619217008113", "450778231333", "106680093860", "303555309540", "973738485409",
    "653199392266", "507034028921", "815208760091", "563579777784", "208415918218", "787491760538", "1018509784560",
    "634933388442", "929710413575", "510454954182", "258791111066", "992926227765", "319391616843", "470729042914",
    "187496287305", "109609062535", "339607682384", "1029133884069", "828980764751", "494829649435", "548631267535",
    "277082107364", "370713867586", "363303896611", "446740622201"]


def test_a_stored_config_without_minhash_rows_keeps_its_lsh_keys():
    """Schema 4 configs written before minhash_rows was a field read as perm // bands rows, so an existing
    index's LSH keys stay the ones it holds (no schema change, no sentinel)."""
    from esdedup.fingerprint.fingerprinter import Fingerprinter

    cfg = FingerprintConfig.from_json(_STORED_BEFORE_ROWS)
    assert (cfg.minhash_bands, cfg.minhash_rows) == (32, 4)
    assert Fingerprinter(cfg).fingerprint(_POEM).lsh == _POEM_KEYS_32X4
    assert FingerprintConfig.from_json(cfg.to_json()) == cfg and json.loads(cfg.to_json())["minhash_rows"] == 4
    assert FingerprintConfig.from_dict({"minhash_perm": 64, "minhash_bands": 16}).minhash_rows == 4
    assert FingerprintConfig.from_dict({"minhash_bands": 16, "minhash_rows": 2}).minhash_rows == 2
    default = FingerprintConfig.from_dict({})
    assert (default.minhash_bands, default.minhash_rows) == (16, 3)
    assert Fingerprinter(default).fingerprint(_POEM).lsh != _POEM_KEYS_32X4[:16]
    assert not default.compatible_with(cfg) and default.differences(cfg)["minhash_rows"] == (3, 4)


def test_config_error_is_a_value_error():
    with pytest.raises(ValueError):
        FingerprintConfig(bits=7)


@pytest.mark.parametrize("changes", [
    {"hamming_k": 8, "band_blocks": 3, "band_key_blocks": 1},              # needs radius 2
    {"hamming_k": 3, "band_blocks": 3},                                     # blocks <= k, key_blocks -> 1
    {"hamming_k": 4, "band_blocks": 6, "band_key_blocks": 3},              # 6 choose 3, needs radius 1
])
def test_incompatible_band_layout_names_the_fix(changes):
    with pytest.raises(ConfigError) as info:
        FingerprintConfig(**changes)
    text = str(info.value)
    assert "can miss pairs at Hamming distance" in text
    assert "needs radius >=" in text and "pigeonhole" in text


def test_band_layout_with_enough_radius_is_accepted():
    cfg = FingerprintConfig(hamming_k=8, band_blocks=3, band_key_blocks=1, probe_radius=2)
    layout = cfg.band_layout()
    assert (layout.blocks, layout.key_blocks, layout.radius) == (3, 1, 2)


def test_too_many_tables_is_rejected():
    with pytest.raises(ConfigError, match="tables"):
        FingerprintConfig(hamming_k=6, band_blocks=14, band_key_blocks=8)  # C(14, 8) = 3003 tables


def test_missing_resource_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="synonyms file .*missing.dict"):
        FingerprintConfig(synonyms_path=str(tmp_path / "missing.dict"))


def test_unknown_fields_and_bad_json():
    with pytest.raises(ConfigError, match="unknown config field.*colour"):
        FingerprintConfig.from_dict({"colour": "red"})
    with pytest.raises(ConfigError, match="not valid JSON"):
        FingerprintConfig.from_json("{bits: 64")
    with pytest.raises(ConfigError, match="must be an object"):
        FingerprintConfig.from_json("[1, 2]")


@pytest.mark.parametrize("data, message", [
    ({"bits": "64"}, "bits must be a whole number, got str '64'"),
    ({"hamming_k": True}, "hamming_k must be a whole number, got bool True"),
    ({"dims": 256.0}, "dims must be a whole number, got float 256.0"),
    ({"t2s": 1}, "t2s must be true or false, got int 1"),
    ({"cosine_threshold": "0.8"}, "cosine_threshold must be a number, got str '0.8'"),
    ({"synonyms_path": 5}, "synonyms_path must be a string or null, got int 5"),
    ({"tokenizer": ["jieba"] * 20}, "tokenizer must be a string, got list ['jieba', 'jieba', 'jieba', 'jieba', ..."),
])
def test_values_of_the_wrong_json_type_are_refused_by_name(data, message):
    with pytest.raises(ConfigError, match=re.escape(f"config field {message}")):
        FingerprintConfig.from_dict(data)


def test_json_types_that_mean_the_same_value_are_accepted():
    cfg = FingerprintConfig.from_dict({"cosine_threshold": 1, "synonyms_path": None, "extra": {"a": 1}})
    assert cfg.cosine_threshold == 1 and cfg.extra == {"a": 1}


def test_identity_ignores_paths(tmp_path, synonyms_file):
    copy = tmp_path / "elsewhere" / "syn.dict"
    copy.parent.mkdir()
    copy.write_bytes(synonyms_file.read_bytes())
    a = FingerprintConfig(synonyms_path=str(synonyms_file))
    b = FingerprintConfig(synonyms_path=str(copy))
    assert a != b  # the dataclasses differ (paths) ...
    assert a.identity() == b.identity()  # ... but the fingerprints they make are the same
    assert "synonyms_path" not in a.identity()
    assert a.identity()["synonyms_sha256"] == file_digest(copy)
    assert a.compatible_with(b)
    assert a.differences(b) == {}


def test_identity_ignores_cosine_threshold():
    a, b = FingerprintConfig(cosine_threshold=0.8), FingerprintConfig(cosine_threshold=0.95)
    assert a.identity() == b.identity()
    assert a.compatible_with(b)
    assert "cosine_threshold" not in a.identity()


def test_identity_keeps_digests(tmp_path, synonyms_file):
    edited = tmp_path / "edited.dict"
    edited.write_text("台胞 台湾居民\n", encoding="utf-8")
    a = FingerprintConfig(synonyms_path=str(synonyms_file))
    b = FingerprintConfig(synonyms_path=str(edited))
    assert not a.compatible_with(b)
    diff = a.differences(b)
    assert set(diff) == {"synonyms_sha256"}
    assert diff["synonyms_sha256"] == (file_digest(synonyms_file), file_digest(edited))
    # a config without the dictionary differs in the digest too
    assert FingerprintConfig().differences(a) == {"synonyms_sha256": (None, a.synonyms_sha256)}


def test_identity_keeps_everything_that_changes_bits():
    base = FingerprintConfig()
    for changes in ({"bits": 128}, {"hamming_k": 4}, {"tokenizer": "rjieba"}, {"weighting": "tf_length"},
                    {"dims": 128}, {"t2s": True}, {"stopwords": "none"}, {"tokenizer_version": "0.0.1"}):
        other = base.replace(**changes)
        assert not base.compatible_with(other), changes
        assert set(base.differences(other)) >= set(changes), changes


def test_differences_lists_each_field_with_both_values():
    a = FingerprintConfig(hamming_k=3, dims=256)
    b = FingerprintConfig(hamming_k=4, dims=512, cosine_threshold=0.9)
    assert a.differences(b) == {"hamming_k": (3, 4), "dims": (256, 512)}
    assert b.differences(a) == {"hamming_k": (4, 3), "dims": (512, 256)}


def test_tokenizer_version_is_recorded():
    cfg = FingerprintConfig(tokenizer="rjieba")
    assert cfg.tokenizer_version and cfg.tokenizer_version[0].isdigit()
    assert FingerprintConfig(tokenizer="char", shingle=2).tokenizer_version == "builtin"


def test_extra_is_not_compared_and_not_in_identity():
    a = FingerprintConfig(extra={"note": "x"})
    b = FingerprintConfig()
    assert a == b
    assert "extra" not in a.identity()
    assert "extra" not in b.to_dict()
    assert a.to_dict()["extra"] == {"note": "x"}


def test_vector_stored_only_where_the_config_needs_it():
    default = FingerprintConfig()
    assert default.vector_index == "auto" and not default.stores_vector  # the n-gram rule never reads it
    assert not FingerprintConfig(strategy="minhash").stores_vector
    simhash = FingerprintConfig(strategy="simhash")  # its rule reads cosines
    assert simhash.stores_vector and simhash.knn_index == "int8_flat"
    for index in ("int8_flat", "flat", "int8_hnsw", "hnsw", "none"):
        cfg = FingerprintConfig(vector_index=index)
        assert cfg.stores_vector and cfg.knn_index == index


def test_identity_keeps_whether_documents_carry_the_vector():
    """How the vector is indexed is a mapping detail; whether documents carry one is not: a writer that
    sends vectors into an index mapped without them would have every document rejected."""
    base = FingerprintConfig()
    assert base.compatible_with(base.replace(vector_index="auto"))
    assert base.differences(base.replace(vector_index="int8_flat")) == {"stores_vector": (False, True)}
    knn = base.replace(vector_index="int8_flat")
    assert knn.compatible_with(base.replace(vector_index="hnsw"))
    simhash = FingerprintConfig(strategy="simhash")
    assert simhash.compatible_with(simhash.replace(vector_index="int8_flat"))


def test_require_vector_names_the_setting():
    FingerprintConfig(vector_index="none").require_vector("news")
    with pytest.raises(ConfigError, match=r"index 'news' carry none .*vector_index such as 'int8_flat'"):
        FingerprintConfig().require_vector("news")


# -- resource files and hostile stored configs --------------------------------------------------------------
@pytest.mark.parametrize("field", ["synonyms_path", "user_dict_path", "stopwords_path", "idf_path"])
@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "fifo"])
def test_a_resource_file_that_is_a_device_or_fifo_is_refused_at_once(tmp_path, field, device):
    import os

    if device == "fifo":
        device = str(tmp_path / "pipe")
        os.mkfifo(device)
    extra = {"stopwords": "file"} if field == "stopwords_path" else {"weighting": "tfidf"} if field == "idf_path" \
        else {}
    with pytest.raises(ConfigError, match=re.escape(f"file {device} is not a regular file")):
        FingerprintConfig(**{field: device}, **extra)


def test_a_resource_file_over_the_limit_is_refused(tmp_path, monkeypatch):
    from esdedup.fingerprint import config as config_module

    monkeypatch.setattr(config_module, "RESOURCE_FILE_LIMIT", 100)
    big = tmp_path / "big.dict"
    big.write_text("台胞 台湾居民\n" * 20, encoding="utf-8")
    with pytest.raises(ConfigError, match="synonyms file .*big.dict has 400 bytes, over the limit of 100 bytes"):
        FingerprintConfig(synonyms_path=str(big))


def test_a_stored_config_naming_a_device_fails_when_its_resources_load(tmp_path):
    """A stored config (index metadata) carries the digest, so the path is only opened to load it: a device
    there is a ConfigError too, not a read that never ends."""
    from esdedup.fingerprint.resources import load_resources

    cfg = FingerprintConfig.from_dict({"synonyms_path": "/dev/zero", "synonyms_sha256": "0" * 64})
    with pytest.raises(ConfigError, match="synonyms file /dev/zero is not a regular file"):
        load_resources(cfg)


@pytest.mark.parametrize("data, message", [
    ({"minhash_perm": 100_000_000}, "minhash_perm must be between 1 and 1024"),
    ({"minhash_perm": 0, "minhash_bands": 1, "minhash_rows": 1}, "minhash_perm must be between 1 and 1024"),
    ({"probe_radius": 10**9}, "probe_radius must be between 0 and 64"),
    ({"probe_radius": -1}, "probe_radius must be between 0 and 64"),
    ({"short_text_chars": -5}, "short_text_chars must be between 0 and"),
    ({"short_text_chars": 10**30}, "short_text_chars must be between 0 and"),
    ({"minhash_ngram": 10**6}, "minhash_ngram must be between 1 and 16"),
    ({"band_blocks": 10**12}, "band_blocks must be between 0 (the default) and bits (64)"),
    ({"band_key_blocks": -3}, "band_key_blocks must be between 0 (the default) and bits (64)"),
    ({"dims": 10**9}, "dims must be between 8 and 4096"),
    ({"shingle": 10**9, "tokenizer": "char"}, "shingle must be between 0 and 16"),
    ({"minhash_bands": 10**9}, "minhash_bands"),
    ({"minhash_rows": 10**9}, "minhash_rows"),
    ({"hamming_k": 10**9}, "hamming_k must be between"),
])
def test_every_numeric_field_has_an_upper_and_a_lower_bound(data, message):
    import time

    started = time.monotonic()
    with pytest.raises(ConfigError, match=re.escape(message)):
        FingerprintConfig.from_dict(data)
    assert time.monotonic() - started < 2


@pytest.mark.parametrize("meta", [
    {"esdedup": "hello"},
    {"esdedup": {}},
    {"esdedup": []},
    {"esdedup": {"config": "bits=64"}},
    {"esdedup": {"config": ["bits", 64]}},
    {"esdedup": {"config": None}},
    {"esdedup": {"config": {"bits": "64"}}},
    {"esdedup": {"config": {"colour": "red"}}},
    {"esdedup": {"config": {"minhash_perm": 100_000_000}}},
])
def test_hostile_index_metadata_is_a_config_error(meta):
    from esdedup.schema import config_from_meta

    with pytest.raises(ConfigError, match="^index 'news' has .*rebuild the index"):
        config_from_meta(meta, "index 'news'")


def test_metadata_without_an_esdedup_block_is_no_config():
    from esdedup.schema import config_from_meta, meta_for

    assert config_from_meta(None) is None and config_from_meta({}) is None and config_from_meta("x") is None
    assert config_from_meta({"other": 1}) is None
    assert config_from_meta(meta_for(FingerprintConfig())) == FingerprintConfig()


def test_a_t2s_index_carries_the_opencc_version_and_another_installed_one_is_told(caplog):
    """t2s output depends on OpenCC's dictionaries: the version that converted an index's texts travels in its
    `_meta`, and opening it where another version is installed warns, naming both and the fix."""
    from esdedup.fingerprint.normalize import t2s_version
    from esdedup.schema import OPENCC_VERSION, config_from_meta, meta_for

    installed = t2s_version()
    assert installed is not None  # OpenCC is a dependency of esdedup
    meta = meta_for(FingerprintConfig(t2s=True))
    assert meta["esdedup"][OPENCC_VERSION] == installed
    assert OPENCC_VERSION not in meta_for(FingerprintConfig())["esdedup"]  # no t2s: OpenCC plays no part
    with caplog.at_level("WARNING", logger="esdedup.schema"):
        assert config_from_meta(meta, "index 'news'") == FingerprintConfig(t2s=True)
        assert not caplog.records
        meta["esdedup"][OPENCC_VERSION] = "0.9.1"
        assert config_from_meta(meta, "index 'news'") == FingerprintConfig(t2s=True)
    [warning] = caplog.records
    assert warning.getMessage().startswith("index 'news' was fingerprinted with OpenCC 0.9.1 converting")
    assert f"OpenCC {installed} is installed" in warning.getMessage()
    assert "pip install 'OpenCC==0.9.1'" in warning.getMessage()


@pytest.mark.parametrize("value", ["not json {", '"hello"', "[]", '{"config": 5}', "null"])
def test_a_local_store_whose_meta_is_not_a_config_is_a_config_error(tmp_path, value):
    import sqlite3

    from esdedup.store.local import LocalStore

    store = LocalStore("news", tmp_path)
    store.open(FingerprintConfig())
    store.close()
    db = sqlite3.connect(tmp_path / "news.sqlite3") if (tmp_path / "news.sqlite3").exists() else None
    if db is None:
        [path] = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix in (".db", ".sqlite", ".sqlite3")]
        db = sqlite3.connect(path)
    with db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'esdedup'", (value,))
    db.close()
    store = LocalStore("news", tmp_path)
    try:
        with pytest.raises(ConfigError, match="local index"):
            store.open(None, create=False)
    finally:
        store.close()
