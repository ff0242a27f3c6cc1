"""Each document's ``dedup`` members made by the native core from a batch's columns
(`esdedup.schema.native_dedup_members`, through `esdedup.schema.dedup_members_many`) are the bytes the
Python path gives (`esdedup.schema.dedup_members`), and whatever the core would not write as orjson does goes
back to Python. Skips without the extension unless ESDEDUP_REQUIRE_NATIVE=1 (the `extension` fixture,
tests/unit/conftest.py)."""
from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Sequence
from itertools import chain

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprinter
from esdedup.fingerprint.values import FingerprintColumns
from esdedup.ingest import workers
from esdedup.schema import band_fields, content_sha1, dedup_members, dedup_members_many, native_dedup_members
from tests.corpus import make_corpus

#: The configs whose documents the core encodes: SimHash bands and signatures (64 and 128 bits), and
#: signatures alone.
ENCODED = {
    "auto": FingerprintConfig(),
    "auto-128": FingerprintConfig(bits=128),
    "char-minhash": FingerprintConfig(tokenizer="char", shingle=2, strategy="minhash"),
}
#: Stores the vector: encoded in Python.
VECTOR = FingerprintConfig(tokenizer="rjieba", strategy="simhash", bits=128)
EDGE_TEXTS = ["", "。。", "短", "ok", "  \n", "臺灣居民明日起" * 60, "The quick brown fox, 1998. " * 12]


def _columns(config: FingerprintConfig, texts: list[str]) -> tuple[list[FingerprintColumns], list[str]]:
    fper = Fingerprinter(config)
    norms = fper.normalize_many(texts)
    return fper.fingerprint_columns(norms), [content_sha1(norm) for norm in norms]


def _in_python(batches: list[FingerprintColumns], config: FingerprintConfig,
               sha1s: Sequence[str | None]) -> list[bytes]:
    fps = chain.from_iterable(columns.fingerprints() for columns in batches)
    return [dedup_members(fp, config, sha1) for fp, sha1 in zip(fps, sha1s, strict=True)]


def _natively(batches: list[FingerprintColumns], config: FingerprintConfig, sha1s: list[str]) -> list[bytes]:
    """The core's bytes, batch by batch; fails when it hands a batch back."""
    out: list[bytes] = []
    for columns in batches:
        encoded = native_dedup_members(columns, sha1s[len(out):len(out) + len(columns)], config,
                                       band_fields(config))
        assert encoded is not None
        out.extend(encoded)
    return out


@pytest.mark.parametrize("config", ENCODED.values(), ids=ENCODED.keys())
def test_the_core_writes_the_python_bytes_of_a_corpus(extension, switch_on, config: FingerprintConfig) -> None:
    texts = [d["text"] for d in make_corpus(300, 60)[0]] + EDGE_TEXTS
    batches, sha1s = _columns(config, texts)
    assert len(batches) > 1  # across the Fingerprinter's internal batches
    got = _natively(batches, config, sha1s)
    assert got == _in_python(batches, config, sha1s)
    assert dedup_members_many(batches, config, sha1s) == got
    # Every kind of member was written: a signature, LSH keys, an empty text and, but for minhash, bands.
    joined = b"\n".join(got)
    assert b'"minhash":"' in joined and b'"lsh_keys":[' in joined and b'"empty":true' in joined
    assert (b'"band_0":"0:' in joined) == (config.strategy != "minhash")


def test_a_config_that_stores_the_vector_is_encoded_in_python(extension, switch_on) -> None:
    texts = [d["text"] for d in make_corpus(20, 5)[0]] + EDGE_TEXTS
    batches, sha1s = _columns(VECTOR, texts)
    assert all(native_dedup_members(columns, sha1s, VECTOR, band_fields(VECTOR)) is None for columns in batches)
    got = dedup_members_many(batches, VECTOR, sha1s)
    assert got == _in_python(batches, VECTOR, sha1s)
    assert sum(b'"vector":[' in members for members in got) == sum(not e for c in batches for e in c.empties) > 0


SCRIPTS = st.characters(codec="utf-8", categories=("L", "N", "P", "Z", "S")) | st.sampled_from(
    "中文臺灣的了。，！？「」한국어にほんご ＡＢＣ１２３ aé ß İ ﬁ ¼ 𠀀 🙂\n\t")
texts_st = st.lists(
    st.text(SCRIPTS, max_size=60)
    | st.sampled_from(["", "。。", "短"])
    # Long enough for SimHash bands under ``auto`` (200 normalised characters and more).
    | st.builds(lambda text, times: text * times, st.text(SCRIPTS, min_size=8, max_size=40), st.integers(25, 60)),
    max_size=12)


@pytest.mark.parametrize("config", ENCODED.values(), ids=ENCODED.keys())
def test_the_core_writes_the_python_bytes_of_any_texts(extension, switch_on, config: FingerprintConfig) -> None:
    fper = Fingerprinter(config)
    fields = band_fields(config)

    @settings(max_examples=150, deadline=None)
    @given(texts_st)
    def check(texts: list[str]) -> None:
        norms = fper.normalize_many(texts)
        sha1s = [content_sha1(norm) for norm in norms]
        [columns] = fper.fingerprint_columns(norms)
        assert native_dedup_members(columns, sha1s, config, fields) == _in_python([columns], config, sha1s)

    check()


def _real_columns() -> tuple[list[FingerprintColumns], list[str]]:
    """A batch of three: a long text (bands and LSH keys), a short one (LSH keys) and an empty one."""
    return _columns(ENCODED["auto"], ["臺灣居民明日起" * 60, "今天天气很好，我们去公园散步。", ""])


@pytest.mark.parametrize("change", [
    {"bands": [['0:"quoted"', "1:2"], [], []]},   # needs escaping
    {"bands": [["0:\\", "1:2"], [], []]},
    {"bands": [["0:é", "1:2"], [], []]},          # orjson writes it raw, the core leaves non-ASCII alone
    {"bands": [["0:\x1f", "1:2"], [], []]},
    {"bands": [["0:\ud800", "1:2"], [], []]},     # a lone surrogate: the standard library writes it
    {"lsh": [["007"], ["1"], []]},                # int("007") is written 7
    {"lsh": [["+5"], ["1"], []]},
    {"lsh": [["1_000"], ["1"], []]},
    {"lsh": [["١٢"], ["1"], []]},                 # Arabic-Indic digits: int() reads them
    {"lsh": [["18446744073709551616"], ["1"], []]},  # beyond orjson's integers
    {"simhashes": [1 << 128, 5, 0]},              # beyond the core's 128 bits
], ids=lambda change: repr(change)[:40])
def test_what_the_core_would_not_write_as_orjson_goes_back_to_python(extension, switch_on, change) -> None:
    config = ENCODED["auto"]
    [columns], sha1s = _real_columns()
    odd = dataclasses.replace(columns, **change)
    assert native_dedup_members(columns, sha1s, config, band_fields(config)) is not None
    assert native_dedup_members(odd, sha1s, config, band_fields(config)) is None
    assert dedup_members_many([odd], config, sha1s) == _in_python([odd], config, sha1s)


def test_a_missing_sha1_is_left_out_on_both_paths(extension, switch_on) -> None:
    config = ENCODED["auto"]
    [columns], _ = _real_columns()
    sha1s = [None, "", "a" * 40]
    got = native_dedup_members(columns, sha1s, config, band_fields(config))
    assert got == _in_python([columns], config, sha1s)
    assert [b"content_sha1" in members for members in got or []] == [False, False, True]


def test_a_worker_encodes_without_a_fingerprint_object(extension, switch_on, monkeypatch) -> None:
    """With the core, a worker goes from the Fingerprinter's columns to the encoded documents and the packed
    columns it sends, and makes no `Fingerprint`; the run reads back the same fingerprints and bytes."""
    config = ENCODED["auto"]
    texts = [d["text"] for d in make_corpus(30, 10)[0]] + EDGE_TEXTS
    batches, sha1s = _columns(config, texts)
    want = _in_python(batches, config, sha1s)
    monkeypatch.setattr(workers, "_WORKER", Fingerprinter(config))

    def refused(self: FingerprintColumns) -> list:
        raise AssertionError("a Fingerprint was made in the worker")

    with monkeypatch.context() as m:
        m.setattr(FingerprintColumns, "fingerprints", refused)
        sent = pickle.dumps(workers._fingerprint_batch(texts, True, True, True), pickle.HIGHEST_PROTOCOL)
    got = pickle.loads(sent)
    assert got.dedup_json == want
    want_fps = Fingerprinter(config).fingerprint_many(texts)
    assert [(fp.simhash, fp.lsh) for fp in got.fingerprints()] == [(fp.simhash, fp.lsh) for fp in want_fps]
