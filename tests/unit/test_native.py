"""The native core (esdedup_native, built from native/) gives the Python path's MinHash parts bit for bit.

These tests need the extension. Without it they skip, saying how to build it, unless
ESDEDUP_REQUIRE_NATIVE=1 is set: then they fail, so a CI that is meant to build the extension can not lose
them silently.
"""
from __future__ import annotations

import multiprocessing
import re
import sys
import types

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from esdedup.fingerprint import FingerprintConfig, Fingerprinter, fingerprinter, native_steps
from esdedup.fingerprint import minhash as mh
from esdedup.util import native
from esdedup.util.arrays import unique_sorted


def _cfg(perm: int = 128, bands: int = 16, rows: int = 3, ngram: int = 2, **kw: object) -> FingerprintConfig:
    return FingerprintConfig(tokenizer="char", shingle=2, minhash_perm=perm, minhash_bands=bands, minhash_rows=rows,
                             minhash_ngram=ngram, **kw)  # type: ignore[arg-type]


#: (minhash_perm, minhash_bands, minhash_rows, minhash_ngram): the default, other n-gram sizes, permutation
#: counts that are and are not a multiple of the native core's 16 lanes, one band of one row, bands taking
#: every value, and signature values past the bands.
CONFIGS = [(128, 16, 3, 2), (128, 32, 4, 3), (64, 8, 8, 1), (16, 1, 1, 5), (200, 50, 4, 2), (257, 20, 5, 4),
           (1, 1, 1, 2), (130, 13, 10, 16)]


def _span(lo: int, hi: int) -> st.SearchStrategy[str]:
    return st.text(st.characters(min_codepoint=lo, max_codepoint=hi, exclude_categories=()), max_size=12)


#: Pieces of text by script: common and extension CJK ideographs, Latin (with case folding and ligatures),
#: digits of several scripts, emoji, control characters, invisible format characters, combining marks,
#: full-width forms, lone surrogates, spaces and punctuation, and anything at all.
PIECES = st.one_of(
    st.text("北京欢迎你中国人民日报", max_size=40),  # few characters: repeated n-grams
    _span(0x4E00, 0x9FFF), _span(0x3400, 0x4DBF), _span(0x20000, 0x2A6DF), _span(0x30000, 0x3134F),
    st.text("abcxyzABCXYZéüßİıǅﬁÅω", max_size=20), st.text("0123456789٠١٢३४５⑤²½", max_size=12),
    _span(0x1F300, 0x1FAFF), _span(0x0, 0x1F), _span(0x7F, 0x9F),
    st.text("\u00ad\u034f\u061c\u200b\u200c\u200d\u200e\u202a\u2060\ufe0f\ufeff\U000e0041\U0001d173", max_size=8),
    _span(0x300, 0x36F), _span(0xFF01, 0xFF5E), _span(0xD800, 0xDFFF),
    st.text(" \t\n\r，。！、_-·…「」", max_size=6),
    st.text(st.characters(exclude_categories=()), max_size=20),
)
TEXTS = st.lists(PIECES, max_size=10).map("".join)
BATCHES = st.lists(TEXTS, min_size=1, max_size=8)


def _reference(text: str, cfg: FingerprintConfig) -> native_steps.MinHashPart:
    """The MinHash parts of one text from esdedup.fingerprint.minhash alone, one text at a time."""
    chars = "".join(filter(str.isalnum, text))
    hashes = unique_sorted(mh.ngram_hashes(chars, cfg.minhash_ngram))
    if not len(hashes):
        return [], None, 0
    sig = mh.signatures([hashes], cfg.minhash_perm)[0]
    return mh.lsh_keys(sig, cfg.minhash_bands, cfg.minhash_rows), sig, len(hashes)


def _assert_same_parts(got: list[native_steps.MinHashPart], want: list[native_steps.MinHashPart]) -> None:
    assert len(got) == len(want)
    for (keys, sig, count), (want_keys, want_sig, want_count) in zip(got, want):
        assert keys == want_keys and count == want_count
        if want_sig is None:
            assert sig is None
        else:
            assert sig is not None and sig.dtype == want_sig.dtype and sig.shape == want_sig.shape
            assert np.array_equal(sig, want_sig)


def _python_fingerprinter(cfg: FingerprintConfig, monkeypatch: pytest.MonkeyPatch) -> Fingerprinter:
    with monkeypatch.context() as m:
        m.setenv(native.ENV_SWITCH, "0")
        fper = Fingerprinter(cfg)
    assert fper._native_minhash is None
    return fper


#: Every compiled form of the loops (portable, AVX2, AVX-512) that this CPU runs, each checked on its own.
KERNELS = native.kernels() or ["portable"]


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("perm, bands, rows, ngram", CONFIGS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=BATCHES)
def test_native_parts_equal_the_minhash_module(extension: None, perm: int, bands: int, rows: int, ngram: int,
                                               kernel: str, batch: list[str]) -> None:
    cfg = _cfg(perm, bands, rows, ngram)
    core = native_steps.NativeMinHash.for_config(cfg, chunk=1 << 16, kernel=kernel)
    assert core.kernel == kernel
    _assert_same_parts(core.parts(batch), [_reference(t, cfg) for t in batch])


@pytest.mark.parametrize("perm, bands, rows, ngram", CONFIGS[:4])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=BATCHES)
def test_fingerprints_are_the_same_with_and_without_the_extension(extension: None, switch_on: None,
                                                                  monkeypatch: pytest.MonkeyPatch, perm: int,
                                                                  bands: int, rows: int, ngram: int,
                                                                  batch: list[str]) -> None:
    cfg = _cfg(perm, bands, rows, ngram)
    fast, slow = Fingerprinter(cfg), _python_fingerprinter(cfg, monkeypatch)
    assert fast._native_minhash is not None
    for norms in (batch, [fast.normalize(t) for t in batch]):  # raw text (lone surrogates and all) too
        got, want = fast.fingerprint_normalized(norms), slow.fingerprint_normalized(norms)
        assert got == want
        _assert_same_parts([(f.lsh, f.minhash, f.shingles) for f in got],
                           [(f.lsh, f.minhash, f.shingles) for f in want])


@pytest.mark.parametrize("ngram", [1, 3, 8, 11])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(st.text("北京欢迎你abc1 ,", max_size=40), min_size=1, max_size=6))
def test_long_texts_read_a_chunk_at_a_time_give_the_python_parts(extension: None, monkeypatch: pytest.MonkeyPatch,
                                                                 ngram: int, batch: list[str]) -> None:
    """With a chunk of 8 characters most texts take the Python path's chunked reading, and an n-gram longer
    than a chunk (n = 11) meets its rule for long texts shorter than n (no n-gram at all)."""
    cfg = _cfg(64, 16, 4, ngram)
    with monkeypatch.context() as m:
        m.setattr(fingerprinter, "_SHINGLE_CHUNK", 8)
        want = _python_fingerprinter(cfg, monkeypatch)._minhash_parts(batch)
    _assert_same_parts(native_steps.NativeMinHash.for_config(cfg, chunk=8).parts(batch), want)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("ngram", [2, 7])
def test_a_text_longer_than_a_chunk_and_one_with_many_distinct_ngrams(extension: None, kernel: str, ngram: int,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Real chunk size; a set large enough that its minima are taken on several threads; n-grams across the
    blocks the native core reads a text in."""
    rng = np.random.default_rng(7)
    many = "".join(map(chr, rng.integers(0x4E00, 0x4E00 + 3000, 200_000).tolist()))
    mixed = "".join(rng.choice(list("北京欢迎你ab1 ,。😀\u200b"), 30_000).tolist())
    batch = ["北京欢迎你。" * 20_000, many, mixed, "短", "", "x" * 5000]
    cfg = _cfg(ngram=ngram)
    want = _python_fingerprinter(cfg, monkeypatch)._minhash_parts(batch)
    assert want[1][2] > 100_000
    core = native_steps.NativeMinHash.for_config(cfg, chunk=fingerprinter._SHINGLE_CHUNK, kernel=kernel)
    _assert_same_parts(core.parts(batch), want)


def _lsh_keys(texts: list[str]) -> list[list[str]]:
    return [fp.lsh for fp in Fingerprinter(_cfg()).fingerprint_many(texts)]


@pytest.mark.skipif(sys.platform == "win32", reason="fork() is POSIX")
def test_a_forked_child_fingerprints_after_its_parent_did(extension: None, switch_on: None) -> None:
    """The parent's threads do not exist in a child made by fork() (ingest's worker processes on Linux): the
    child must make its own, not wait for the parent's."""
    texts = [f"北京欢迎你{i}" for i in range(64)]
    want = _lsh_keys(texts)  # the parent's threads exist now
    pool = multiprocessing.get_context("fork").Pool(1)
    try:
        assert pool.apply_async(_lsh_keys, (texts,)).get(timeout=120) == want
    finally:
        pool.terminate()  # a child that hangs is killed, not waited for


def test_the_word_table_keeps_what_the_python_path_keeps() -> None:
    """Word characters are what the fingerprinter's regex keeps, for every code point."""
    table = native_steps.word_table()
    everything = "".join(map(chr, range(0x110000)))
    kept = "".join(ch for ch, word in zip(everything, table) if word)
    assert kept == fingerprinter._NOT_ALNUM.sub("", everything)
    assert set(table) == {0, 1}


def test_the_fingerprinter_uses_the_extension_when_it_is_there(extension: None, switch_on: None) -> None:
    fper = Fingerprinter(_cfg())
    assert native.enabled() and native.unavailable_reason() == ""
    assert isinstance(fper._native_minhash, native_steps.NativeMinHash)
    assert Fingerprinter(_cfg(ngram=3))._native_minhash is not fper._native_minhash
    assert Fingerprinter(_cfg())._native_minhash is fper._native_minhash  # one per layout, shared
    fp = fper.fingerprint("北京欢迎你，北京欢迎你")
    assert fp.shingles == 5 and len(fp.lsh) == 16 and fp.minhash is not None and fp.minhash.dtype == np.uint32


def test_the_switch_set_to_0_runs_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(native.ENV_SWITCH, "0")
    cfg = _cfg()
    assert not native.enabled() and native_steps.minhash_step(cfg, 1 << 16) is None
    assert Fingerprinter(cfg)._native_minhash is None
    if not native.extension_missing():
        assert native.unavailable_reason() == "ESDEDUP_NATIVE=0 turns the native core off"
    fp = Fingerprinter(cfg).fingerprint("北京欢迎你")
    assert fp.shingles == 4 and len(fp.lsh) == 16


def test_a_config_without_signatures_has_no_native_step(switch_on: None) -> None:
    cfg = FingerprintConfig(tokenizer="char", shingle=2, strategy="simhash")
    assert not native_steps.reproduces(cfg) and native_steps.minhash_step(cfg, 1 << 16) is None
    assert native_steps.reproduces(_cfg()) and native_steps.reproduces(_cfg(strategy="minhash"))


def test_an_extension_of_another_version_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "esdedup_native", types.SimpleNamespace(API_VERSION=native.API_VERSION + 1))
    module, reason = native._import_extension()
    assert module is None
    assert re.search(rf"API version {native.API_VERSION + 1}, this esdedup needs {native.API_VERSION}; "
                     r"to rebuild it, native/README\.md", reason)


def test_without_the_extension_the_reason_says_how_to_build_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "esdedup_native", None)  # import raises ImportError
    module, reason = native._import_extension()
    assert module is None and "not installed" in reason and "maturin" in reason


@pytest.mark.parametrize("args, message", [
    ((b"\x01" * 10, [1], [2], 2, 1, 1, 8), "one byte per code point"),
    ((None, [1, 3], [2], 2, 1, 1, 8), "one coefficient per permutation"),
    ((None, [1], [2], 0, 1, 1, 8), r"ngram \(0\) and chunk \(8\) must be >= 1"),
    ((None, [1, 3], [2, 4], 2, 2, 2, 8), "2 bands of 2 rows need 4 signature values, the permutations give 2"),
])
def test_the_core_refuses_bad_settings_by_name(extension: None, args: tuple, message: str) -> None:
    import esdedup_native

    table, *rest = args
    with pytest.raises(ValueError, match=message):
        esdedup_native.MinHashCore(native_steps.word_table() if table is None else table, *rest)


def test_the_core_refuses_a_kernel_this_cpu_does_not_run(extension: None) -> None:
    with pytest.raises(ValueError, match=r"kernel 'sse9' does not run on this CPU, which runs: portable"):
        native_steps.NativeMinHash.for_config(_cfg(), 1 << 16, kernel="sse9")
    assert native_steps.NativeMinHash.for_config(_cfg(), 1 << 16).kernel == native.kernels()[-1]


_WITHOUT_THE_EXTENSION = r"""
import json, sys
sys.modules["esdedup_native"] = None  # as on a machine without a Rust toolchain: the import fails
from pathlib import Path
from esdedup import FingerprintConfig
from esdedup.fingerprint import Fingerprinter
from esdedup.util import native
from esdedup.ingest import IngestOptions, ingest
from esdedup.match.pairs import find_pairs
from esdedup.store.local import LocalStore

texts = json.loads(sys.argv[1])
fps = Fingerprinter(FingerprintConfig()).fingerprint_many(texts)
docs = Path(sys.argv[2]) / "docs.jsonl"
docs.write_text("".join(json.dumps({"id": f"d{i}", "text": t}, ensure_ascii=False) + "\n" for i, t in enumerate(texts)),
                "utf-8")
store = LocalStore("absent", Path(sys.argv[2]) / "data")
summary = ingest([docs], store, FingerprintConfig(), IngestOptions(workers=2))
print(json.dumps({"missing": native.extension_missing(), "indexed": summary.indexed,
                  "fingerprints": [[fp.simhash, fp.bands, fp.lsh, None if fp.minhash is None else fp.minhash.tolist(),
                                   fp.vector.tolist()] for fp in fps],
                  "pairs": [[p.a, p.b, p.decided_by] for p in find_pairs(store)]}))
"""


def test_the_package_works_with_the_extension_absent(tmp_path) -> None:
    """In a process that cannot import ``esdedup_native`` (no Rust toolchain, the extension not built) esdedup
    imports, fingerprints, ingests (worker processes included) and finds pairs, with the answers of this
    process (the native core, where it is built)."""
    import json
    import subprocess

    from esdedup.ingest import IngestOptions, ingest
    from esdedup.match.pairs import find_pairs
    from esdedup.store.local import LocalStore

    texts = ["国家统计局今天发布数据显示，前三季度经济运行总体平稳，消费对增长的贡献率持续提高。",
             "国家统计局今日发布数据显示，前三季度经济运行总体平稳，消费对增长的贡献率持续提高！",
             "氣象臺發布暴雨黃色預警，Ｅａｓｔ　Ｃｏａｓｔ 明天 ２４ 小时大到暴雨。", "Short English text, ÉCOLE ﬁne.",
             "足球联赛第二十轮比赛昨晚结束\u200b，主队逆转客队 🎉", "。。", "。。"]
    proc = subprocess.run([sys.executable, "-c", _WITHOUT_THE_EXTENSION, json.dumps(texts), str(tmp_path)],
                          capture_output=True, text=True, encoding="utf-8", timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    child = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "not installed" in child["missing"]
    fps = Fingerprinter(FingerprintConfig()).fingerprint_many(texts)
    assert child["fingerprints"] == [[fp.simhash, fp.bands, fp.lsh, None if fp.minhash is None else fp.minhash.tolist(),
                                      fp.vector.tolist()] for fp in fps]
    here = tmp_path / "here"
    here.mkdir()
    store = LocalStore("present", here)
    assert ingest([tmp_path / "docs.jsonl"], store, FingerprintConfig(), IngestOptions(workers=2)).indexed == \
        child["indexed"] == len(texts)
    pairs = [[p.a, p.b, p.decided_by] for p in find_pairs(store)]
    assert child["pairs"] == pairs and len(pairs) >= 1
