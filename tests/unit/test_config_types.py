"""Config objects refuse values of the wrong type when they are made, so that every config accepted is one an
index stores and opens again: FingerprintConfig, IngestOptions and the thresholds, each checked by the one
rule of `esdedup.util.fieldtypes` from the fields' annotations."""
from __future__ import annotations

import dataclasses
import math
import re
import uuid
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from esdedup.errors import ConfigError
from esdedup.fingerprint.bands import BandLayout
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.ingest.options import IngestOptions
from esdedup.match.thresholds import ThresholdOverrides, Thresholds
from esdedup.quality.synth import SynthOptions
from esdedup.store.local import LocalStore
from esdedup.util.fieldtypes import check_value


@pytest.mark.parametrize("field, value, message", [
    ("t2s", 1, "config field t2s must be True or False, got int 1; write True instead"),
    ("t2s", 0, "config field t2s must be True or False, got int 0; write False instead"),
    ("t2s", "yes", "config field t2s must be True or False, got str 'yes'; pass True or False, not a string"),
    ("t2s", None, "config field t2s must be True or False, got NoneType None"),
    ("minhash_perm", 128.0, "config field minhash_perm must be a whole number, got float 128.0; write 128"),
    ("minhash_bands", True, "config field minhash_bands must be a whole number, got bool True"),
    ("bits", "64", "config field bits must be a whole number, got str '64'; write 64 as a number, without quotes"),
    ("hamming_k", 3.5, "config field hamming_k must be a whole number, got float 3.5; give a whole number"),
    ("cosine_threshold", "0.8", "config field cosine_threshold must be a number, got str '0.8'; write 0.8"),
    ("cosine_threshold", True, "config field cosine_threshold must be a number, got bool True"),
    ("jaccard_threshold", [0.5], "config field jaccard_threshold must be a number, got list [0.5]"),
    ("tokenizer", b"jieba", "config field tokenizer must be a string, got bytes b'jieba'"),
    ("tokenizer", "ik", "config field tokenizer must be one of jieba, rjieba, char, got 'ik'"),
    ("weighting", "TF", "config field weighting must be one of tf, tfidf, tf_length, got 'TF'"),
    ("vector_index", None, "config field vector_index must be a string, got NoneType None"),
    ("synonyms_path", Path("syn.dict"), "config field synonyms_path must be a string or None, got PosixPath"),
    ("synonyms_sha256", 5, "config field synonyms_sha256 must be a string or None, got int 5"),
    ("extra", [("a", 1)], "config field extra must be a dict with string keys, got list"),
    ("extra", {1: "a"}, "config field extra must be a dict with string keys, got dict {1: 'a'}"),
    ("extra", {"a": {1, 2}}, "config field extra must hold JSON values only"),
    ("extra", {"a": math.nan}, "config field extra must hold JSON values only"),
    ("extra", {"a": (1, 2)}, "config field extra must hold JSON values only"),
    ("tokenizer_version", "1.0\udc80", "config field tokenizer_version holds a lone surrogate"),
    ("schema", "4", "config field schema must be a whole number, got str '4'"),
])
def test_a_value_of_the_wrong_type_is_refused_when_the_config_is_made(field, value, message):
    """Each of these was accepted before, written into an index's metadata, and refused on every later open."""
    with pytest.raises(ConfigError, match=re.escape(message)):
        FingerprintConfig(**{field: value})


def test_every_field_has_a_checked_type():
    """No field escapes the rule: each one refuses an object of no JSON type at all."""
    for f in dataclasses.fields(FingerprintConfig):
        with pytest.raises(ConfigError, match=f"config field {f.name} "):
            FingerprintConfig(**{f.name: object()})


def test_values_that_mean_the_same_are_stored_as_their_json_type():
    config = FingerprintConfig(minhash_perm=np.int64(256), cosine_threshold=1, jaccard_threshold=np.float32(0.5),
                               containment_threshold=0)
    assert type(config.minhash_perm) is int and config.minhash_perm == 256
    assert type(config.cosine_threshold) is float and config.cosine_threshold == 1.0
    assert type(config.jaccard_threshold) is float and type(config.containment_threshold) is float
    assert FingerprintConfig.from_json(config.to_json()) == config
    assert FingerprintConfig().replace(t2s=True).t2s is True
    with pytest.raises(ConfigError, match="config field t2s must be True or False, got int 1"):
        FingerprintConfig().replace(t2s=1)


def test_config_read_from_json_names_json_words():
    with pytest.raises(ConfigError, match=re.escape("config field t2s must be true or false, got int 1; write true")):
        FingerprintConfig.from_dict({"t2s": 1})
    with pytest.raises(ConfigError, match=re.escape("config field synonyms_path must be a string or null")):
        FingerprintConfig.from_dict({"synonyms_path": 5})
    with pytest.raises(ConfigError, match=re.escape("config field minhash_perm must be a whole number, got str")):
        FingerprintConfig.from_dict({"minhash_bands": 16, "minhash_perm": "128"})


# -- whatever config can be made is stored and opens again -------------------------------------------------

#: Values of every kind a careless caller passes; most fields refuse most of them.
_LOOSE = st.one_of(
    st.booleans(), st.integers(-3, 300), st.sampled_from([0, 1, 2, 3, 4, 8, 16, 64, 128, 200, 256]),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.5, 0.8, 1.0, 128.0, 64.0, 3.0]),
    st.sampled_from(["jieba", "rjieba", "char", "tf", "tfidf", "tf_length", "auto", "simhash", "minhash", "none",
                     "default", "file", "int8_flat", "hnsw", "", "1", "true", "64", "0.8", "x\udc80"]),
    st.none(), st.lists(st.integers(0, 3), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.builds(np.int64, st.integers(0, 300)), st.builds(np.float64, st.floats(0, 1)),
)
_FIELDS = [f.name for f in dataclasses.fields(FingerprintConfig) if not f.name.endswith("_path")]


def _near(f: dataclasses.Field) -> st.SearchStrategy:
    """Values of the field's own type around its default (so that many drawn configs are valid), and the
    loose forms of those values (1 for True, 128.0 for 128, "0.8" for 0.8)."""
    default = f.default_factory() if f.default is dataclasses.MISSING else f.default  # type: ignore[misc]
    if "choices" in f.metadata:
        return st.sampled_from(f.metadata["choices"])
    if isinstance(default, bool):
        return st.sampled_from([True, False, 0, 1, "true"])
    if isinstance(default, int):
        return st.one_of(st.integers(max(default // 2, 0), default * 2 + 1), st.just(float(default)))
    if isinstance(default, float):
        return st.one_of(st.floats(0.05, 1.0), st.just(int(default)), st.just(str(default)))
    if isinstance(default, dict):
        return st.dictionaries(st.text(max_size=3), st.one_of(st.integers(), st.text(max_size=3), st.none()),
                               max_size=2)
    return st.one_of(st.none(), st.text(max_size=8))


_FIELD_VALUES = {f.name: st.one_of(_near(f), _LOOSE) for f in dataclasses.fields(FingerprintConfig)}
_CHANGES = st.lists(st.sampled_from(_FIELDS), min_size=1, max_size=4, unique=True).flatmap(
    lambda names: st.fixed_dictionaries({n: _FIELD_VALUES[n] for n in names}))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(changes=_CHANGES)
def test_any_config_that_can_be_made_round_trips_through_json(changes):
    try:
        config = FingerprintConfig(**changes)
    except ConfigError:
        return  # refused by name when made: never written anywhere
    back = FingerprintConfig.from_json(config.to_json())
    assert back == config and back.identity() == config.identity() and back.extra == config.extra
    assert back.to_json() == config.to_json()
    config.to_json().encode("utf-8")  # what is stored as text



@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(changes=_CHANGES)
def test_any_config_that_can_be_made_is_stored_and_opens_again(tmp_path, changes):
    """The embedded store writes the config into its meta table; a later open reads it back as the same."""
    try:
        config = FingerprintConfig(**changes)
    except ConfigError:
        return
    name = f"c{uuid.uuid4().hex[:8]}"
    store = LocalStore(name, tmp_path)
    try:
        assert store.open(config).created
    finally:
        store.close()
    again = LocalStore(name, tmp_path)
    try:
        opened = again.open(None, create=False)
        assert opened.config == config and opened.config.identity() == config.identity()
        again.open(config)  # the same config opens it too (no mismatch)
    finally:
        again.close()


@pytest.mark.parametrize("changes", [{"t2s": 1}, {"minhash_perm": 128.0}, {"t2s": "yes"}, {"dims": "256"}])
def test_the_configs_of_the_report_never_reach_a_store(tmp_path, changes):
    with pytest.raises(ConfigError, match="config field"):
        FingerprintConfig(**changes)
    assert not list(tmp_path.iterdir())


# -- the other config objects the API takes ------------------------------------------------------------------

@pytest.mark.parametrize("changes, message", [
    ({"workers": "2"}, "IngestOptions field workers must be a whole number, got str '2'; write 2 as a number"),
    ({"workers": None}, "IngestOptions field workers must be a whole number, got NoneType None"),
    ({"workers": 2.0}, "IngestOptions field workers must be a whole number, got float 2.0; write 2"),
    ({"resume": "yes", "checkpoint": "c"}, "IngestOptions field resume must be True or False, got str 'yes'"),
    ({"batch": "x"}, "IngestOptions field batch must be a whole number, got str 'x'"),
    ({"batch": 0}, "batch must be >= 1, got 0"),
    ({"max_record_bytes": 0}, "max_record_bytes must be >= 1, got 0"),
    ({"on_duplicate": None}, "IngestOptions field on_duplicate must be a string, got NoneType None"),
    ({"on_duplicate": "drop"}, "IngestOptions field on_duplicate must be one of index, label, skip, got 'drop'"),
    ({"format": None}, "IngestOptions field format must be a string, got NoneType None"),
    ({"format": "xml"}, "IngestOptions field format must be one of "),
    ({"text_field": None}, "IngestOptions field text_field must be a string, got NoneType None"),
    ({"thresholds": 0.5}, "IngestOptions field thresholds must be a Thresholds or a ThresholdOverrides or None, "
                          "got float 0.5"),
    ({"dead_letter": 5}, "IngestOptions field dead_letter must be a string or a Path or a Named or None, got int 5"),
])
def test_ingest_options_of_the_wrong_type_are_refused_by_name(changes, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        IngestOptions(**changes)


def test_ingest_options_of_the_right_types_are_kept():
    opts = IngestOptions(workers=np.int64(2), dead_letter=Path("d.jsonl"), thresholds=ThresholdOverrides(jaccard=0.6))
    assert type(opts.workers) is int and opts.dead_letter == Path("d.jsonl")


@pytest.mark.parametrize("make, message", [
    (lambda: Thresholds(hamming_k=3.0), "hamming_k must be a whole number from 0 to 128, or None, got 3.0"),
    (lambda: Thresholds(cosine="0.8"), "cosine threshold must be a number in (0, 1], or None, got '0.8'"),
    (lambda: Thresholds(cosine=True), "cosine threshold must be a number in (0, 1], or None, got True"),
    (lambda: ThresholdOverrides(jaccard=[0.5]), "jaccard threshold must be a number in (0, 1], or None"),
])
def test_thresholds_of_the_wrong_type_are_refused(make, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        make()


def test_the_rule_of_containers_and_unions():
    assert check_value("x", tuple[int, ...], [1, np.int32(2)]) == (1, 2)
    assert check_value("x", list[str], ("a",)) == ["a"]
    with pytest.raises(ConfigError, match=re.escape("field x must be a list or tuple of whole numbers, got str")):
        check_value("x", tuple[int, ...], "12", owner="field")
    with pytest.raises(ConfigError, match=re.escape("must be a list or tuple of whole numbers, got list [1, 2.5]")):
        check_value("x", list[int], [1, 2.5])
    assert check_value("x", int | str | None, None) is None
    with pytest.raises(ConfigError, match=re.escape("must be a whole number or a string or None, got float")):
        check_value("x", int | str | None, 1.5)


@pytest.mark.parametrize("make, message", [
    (lambda: BandLayout(64.0, 3, 4, 1), "BandLayout field bits must be a whole number, got float 64.0; write 64"),
    (lambda: BandLayout(64, True, 4, 1), "BandLayout field k must be a whole number, got bool True"),
    (lambda: SynthOptions(sources="10"), "SynthOptions field sources must be a whole number, got str '10'"),
    (lambda: SynthOptions(recipes="char"), "SynthOptions field recipes must be a list or tuple of strings, got str"),
    (lambda: SynthOptions(affix_rate=(0.1,)), "SynthOptions field affix_rate must be a list or tuple of numbers"),
    (lambda: SynthOptions(char_rate=None), "SynthOptions field char_rate must be a number, got NoneType None"),
])
def test_the_other_option_objects_follow_the_same_rule(make, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        make()
    assert SynthOptions(affix_rate=[0.1, 0.4]).affix_rate == (0.1, 0.4)  # a list where a pair goes: a pair


def test_numpy_bools_and_string_subclasses_are_stored_as_plain_json_values():
    import enum

    class Strategy(str, enum.Enum):
        MINHASH = "minhash"

    config = FingerprintConfig(t2s=np.bool_(True), strategy=Strategy.MINHASH, tokenizer=np.str_("rjieba"))
    assert config.t2s is True and type(config.strategy) is str and config.strategy == "minhash"
    assert type(config.tokenizer) is str
    assert FingerprintConfig.from_json(config.to_json()) == config
