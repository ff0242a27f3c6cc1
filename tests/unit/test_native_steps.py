"""The native term step (esdedup_native.TermCore: token counts, weights, SimHash, TF vector sums) gives the
Python path's fingerprints bit for bit, under every weighting, both widths and each tokenizer (``rjieba``
and ``jieba`` segmented by the core itself, esdedup_native.JiebaCore; test_native_jieba.py checks the
``jieba`` cuts on their own); the native cleaning step
(esdedup_native.CleanCore) gives `_clean_nfkc`'s text on every BMP code point, and the folding step
(esdedup_native.FoldCore) what ``casefold`` and ``split`` make of every code point.

The Python path is the oracle: each test fingerprints the same texts with a Fingerprinter made with
ESDEDUP_NATIVE=0 and compares every field, the weights and vectors by their bits. The tests skip without the
extension unless ESDEDUP_REQUIRE_NATIVE=1 (the `extension` fixture, tests/unit/conftest.py).
"""
from __future__ import annotations

import types
import unicodedata

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from esdedup.errors import InputError
from esdedup.fingerprint import FingerprintConfig, Fingerprinter, fingerprinter, native_steps
from esdedup.fingerprint import normalize as nz
from esdedup.fingerprint.bands import BandLayout
from esdedup.fingerprint.features import DocumentFrequency
from esdedup.util import native
from tests.unit.test_native import PIECES

TEXTS = st.lists(PIECES, max_size=10).map("".join)
#: Batches with words repeated across texts (warm rows) and texts without any word.
BATCHES = st.lists(st.one_of(TEXTS, st.sampled_from(["", "，。！", "北京欢迎你，北京欢迎你。", "台湾居民明起来北京"])),
                   min_size=1, max_size=8)


SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def resources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A synonyms file (variants map to a term; one variant is itself another token), stopwords and idf."""
    root = tmp_path_factory.mktemp("native_terms")
    syn, stop, idf, user = root / "syn.dict", root / "stop.txt", root / "idf.json", root / "user.dict"
    user.write_text("欢迎你 5\n中国人民 200000 n\n北京欢 3\nabc中 10\n", encoding="utf-8")
    syn.write_text("台胞 台湾居民 台湾同胞\n明日 明天 明起 明日起\n中国 中华\nabc ABC xyz\n", encoding="utf-8")
    stop.write_text("的\n了\n北京\nx\n", encoding="utf-8")
    idf.write_text(DocumentFrequency.build([["中国", "北京"], ["中国"], ["台胞"], ["欢迎", "你"]] * 3).to_json(),
                   encoding="utf-8")
    return {"synonyms_path": str(syn), "stopwords_path": str(stop), "idf_path": str(idf), "user_dict_path": str(user)}


#: (name, config fields): every weighting, both widths, each tokenizer, synonyms, stopwords from a file and
#: none, t2s, every strategy (which decides band keys and signatures beside the term step).
CASES = [
    ("rjieba-tf-64", {"tokenizer": "rjieba"}),
    ("rjieba-tf-128-simhash", {"tokenizer": "rjieba", "bits": 128, "strategy": "simhash"}),
    ("rjieba-tf_length-synonyms-t2s", {"tokenizer": "rjieba", "weighting": "tf_length", "t2s": True,
                                       "synonyms": True}),
    ("rjieba-tfidf-128", {"tokenizer": "rjieba", "weighting": "tfidf", "bits": 128, "idf": True,
                          "strategy": "simhash", "short_text_chars": 0}),
    ("rjieba-tfidf-64-stopwords", {"tokenizer": "rjieba", "weighting": "tfidf", "idf": True, "stopwords": "file"}),
    ("rjieba-user-dict-synonyms", {"tokenizer": "rjieba", "user_dict": True, "synonyms": True, "t2s": True}),
    ("char-1-tf_length", {"tokenizer": "char", "shingle": 1, "weighting": "tf_length", "strategy": "minhash"}),
    ("char-3-tfidf-128", {"tokenizer": "char", "shingle": 3, "weighting": "tfidf", "idf": True, "bits": 128}),
    ("jieba-tf-nostop-dims", {"tokenizer": "jieba", "stopwords": "none", "dims": 8, "strategy": "simhash"}),
]


def _config(fields: dict[str, object], resources: dict[str, str]) -> FingerprintConfig:
    fields = dict(fields)
    if fields.pop("synonyms", False):
        fields["synonyms_path"] = resources["synonyms_path"]
    if fields.pop("idf", False):
        fields["idf_path"] = resources["idf_path"]
    if fields.pop("user_dict", False):
        fields["user_dict_path"] = resources["user_dict_path"]
    if fields.get("stopwords") == "file":
        fields["stopwords_path"] = resources["stopwords_path"]
    return FingerprintConfig(**fields)  # type: ignore[arg-type]


_PAIRS: dict[str, tuple[Fingerprinter, Fingerprinter]] = {}


def _pair(name: str, cfg: FingerprintConfig, monkeypatch: pytest.MonkeyPatch) -> tuple[Fingerprinter, Fingerprinter]:
    """(native, Python) Fingerprinters of a config, kept across examples: the native one's rows then come from
    earlier batches too, as in a long ingest."""
    if name not in _PAIRS:
        monkeypatch.delenv(native.ENV_SWITCH, raising=False)
        fast = Fingerprinter(cfg)
        with monkeypatch.context() as m:
            m.setenv(native.ENV_SWITCH, "0")
            slow = Fingerprinter(cfg)
        assert fast._native_terms is not None and slow._native_terms is None
        assert (fast._native_cut is not None) == (cfg.tokenizer in ("rjieba", "jieba")) and slow._native_cut is None
        _PAIRS[name] = fast, slow
    return _PAIRS[name]


def assert_same_term_parts(got: tuple, want: tuple) -> None:
    """What two runs of the native term step gave (`native_steps.TermParts`): the SimHash values and total counts,
    and the rows, weights, kept counts and vectors as arrays."""
    assert got[0] == want[0] and got[4] == want[4]
    assert all(np.array_equal(a, b) for a, b in zip(got[1:4] + got[5:], want[1:4] + want[5:], strict=True))


def assert_same_bits(got: list[fingerprinter.Fingerprint], want: list[fingerprinter.Fingerprint]) -> None:
    """Every field of each fingerprint, the term weights in order and by their float bits, the vector by its
    bytes."""
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        assert (a.simhash, a.bands, a.lsh, a.length, a.empty, a.chars, a.bits, a.shingles) == \
               (b.simhash, b.bands, b.lsh, b.length, b.empty, b.chars, b.bits, b.shingles)
        assert list(a.tf) == list(b.tf)
        assert np.array(list(a.tf.values()), dtype=np.float64).tobytes() == \
               np.array(list(b.tf.values()), dtype=np.float64).tobytes()
        assert a.vector.dtype == b.vector.dtype == np.float32 and a.vector.tobytes() == b.vector.tobytes()
        assert (a.minhash is None) == (b.minhash is None)
        if a.minhash is not None:
            assert np.array_equal(a.minhash, b.minhash)
        assert a == b


@pytest.mark.parametrize("name, fields", CASES, ids=[c[0] for c in CASES])
@SETTINGS
@given(batch=BATCHES)
def test_native_terms_equal_the_python_path(extension: None, resources: dict[str, str],
                                            monkeypatch: pytest.MonkeyPatch, name: str, fields: dict[str, object],
                                            batch: list[str]) -> None:
    fast, slow = _pair(name, _config(fields, resources), monkeypatch)
    assert_same_bits(fast.fingerprint_many(batch), slow.fingerprint_many(batch))
    # Text that did not go through normalize (controls, upper case; lone surrogates too where the tokenizer
    # takes them) gives tokens all the same.
    if fields["tokenizer"] != "char":
        batch = [t.encode("utf-8", "ignore").decode("utf-8") for t in batch]
    assert_same_bits(fast.fingerprint_normalized(batch), slow.fingerprint_normalized(batch))


@pytest.mark.parametrize("bits", [64, 128])
@SETTINGS
@given(batch=st.lists(st.lists(st.sampled_from("甲乙丙丁戊己庚辛壬癸子丑"), max_size=60).map("".join), min_size=1,
                      max_size=6),
       factors=st.lists(st.one_of(st.integers(1, 2**20).map(lambda k: k / 2048),  # ties at 1/1024 steps
                                  st.floats(1e-6, 1e6, allow_nan=False), st.just(2.0**40)),
                        min_size=12, max_size=12))
def test_votes_with_rounding_ties_and_large_weights(extension: None, switch_on: None,
                                                    monkeypatch: pytest.MonkeyPatch, bits: int,
                                                    batch: list[str], factors: list[float]) -> None:
    """Per-term factors chosen to fall halfway between two 1/1024 steps (rounded to even on both sides), tiny
    and huge; one-character tokens, so each text repeats terms many times."""
    cfg = FingerprintConfig(tokenizer="char", shingle=1, weighting="tf_length", bits=bits, strategy="simhash")
    by_char = dict(zip("甲乙丙丁戊己庚辛壬癸子丑", factors, strict=True))
    fast = Fingerprinter(cfg)
    # A core that asks the Fingerprinter for new terms, so that the factors below are the ones it uses.
    fast._native_terms = native_steps.NativeTerms(bits, cfg.dims, True)
    with monkeypatch.context() as m:
        m.setenv(native.ENV_SWITCH, "0")
        slow = Fingerprinter(cfg)
    for f in (fast, slow):
        f._factors = lambda terms: [by_char[t] for t in terms]  # type: ignore[method-assign]
    assert_same_bits(fast.fingerprint_many(batch), slow.fingerprint_many(batch))


def test_rows_made_by_terms_and_a_cleared_table(extension: None, switch_on: None,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows that `terms` registered (outside the batch path) reach the core with the next batch; a table
    cleared between chunks is cleared in the core too."""
    cfg = FingerprintConfig(tokenizer="rjieba", weighting="tf_length", short_text_chars=0)
    fast = Fingerprinter(cfg)
    with monkeypatch.context() as m:
        m.setenv(native.ENV_SWITCH, "0")
        slow = Fingerprinter(cfg)
    texts = [f"北京欢迎你，第{i}次来中国。台湾居民明起来北京{i % 7}" for i in range(600)]
    for f in (fast, slow):
        f.terms("今天天气很好，我们去公园散步。北京")
    assert_same_bits(fast.fingerprint_many(texts[:10]), slow.fingerprint_many(texts[:10]))
    assert fast._native_terms is not None and fast._native_terms.rows == len(fast._table)
    monkeypatch.setattr(fingerprinter, "MAX_CACHED_TERMS", 5)
    assert_same_bits(fast.fingerprint_many(texts), slow.fingerprint_many(texts))  # cleared between chunks
    assert fast._native_terms.rows == len(fast._table) < 600


def test_terms_the_core_decided_are_taken_in_when_read(extension: None, switch_on: None) -> None:
    """What the core decided itself waits until it is read: columns sent on (a worker's) leave it waiting;
    their fingerprints, `terms` and the core's next question take it in first, in order, and give what a
    Fingerprinter that took it in at once gives."""
    cfg = FingerprintConfig(short_text_chars=0)  # every text segmented
    texts = [f"北京欢迎你，第{i}次来中国。台湾居民明起来北京看长城{i % 7}" for i in range(40)]
    fper, reference = Fingerprinter(cfg), Fingerprinter(cfg)
    columns = fper.fingerprint_columns(fper.normalize_many(texts))
    step = fper._native_terms
    assert step is not None and step.learned_rows > 0 and len(fper._table) + step.learned_rows == step.rows
    got, want = [fp for c in columns for fp in c.fingerprints()], reference.fingerprint_many(texts)
    assert step.learned_rows == 0 and len(fper._table) == step.rows
    assert_same_bits(got, want)
    assert [dict(fp.tf) for fp in got] == [dict(fp.tf) for fp in want]
    fper.fingerprint_columns(fper.normalize_many(["上海欢迎你，第一次来浦东"]))
    assert step.learned_rows > 0
    assert fper.terms("上海欢迎你，第一次来浦东") == reference.terms("上海欢迎你，第一次来浦东")
    assert step.learned_rows == 0 and fper._codes == reference._codes


#: Pieces of tokens of every kind `term_of` tells apart: whitespace of several kinds (what ``str.strip`` takes),
#: characters that only look like it (zero-width space, a file separator), letters, digits of two scripts,
#: ideographs, punctuation, emoji, a combining mark, the resources' synonyms and stopwords (see `resources`).
TOKEN_PIECES = [" ", "\u3000", "\xa0", "\t", "\u2028", "\u200b", "\x1c", "a", "Z", "5", "\u0663", "北", "京", "，",
                "😀", "\u0301", "台胞", "台湾居民", "明起", "明日", "中华", "的", "北京", "x", "ABC", "abc"]
TOKEN_LISTS = st.lists(st.lists(st.lists(st.sampled_from(TOKEN_PIECES), max_size=3).map("".join), max_size=12),
                       min_size=1, max_size=5)


@pytest.mark.parametrize("fields", [
    {"tokenizer": "rjieba", "stopwords": "file", "synonyms": True},
    {"tokenizer": "rjieba", "weighting": "tf_length", "bits": 128},
    {"tokenizer": "char", "shingle": 2, "weighting": "tf_length"},
], ids=["stopwords-synonyms", "tf_length-128", "char"])
@SETTINGS
@given(token_lists=TOKEN_LISTS)
def test_the_core_decides_new_tokens_as_python_does(extension: None, switch_on: None, resources: dict[str, str],
                                                    fields: dict[str, object], token_lists: list[list[str]]) -> None:
    """A core that decides new tokens itself gives every token the code Python's `_register` gives it (no
    term, a term, a term it stands for), every new term its row in the same order, with the same hash data
    and factor, and hands them to the Fingerprinter, whose codes and table end up as Python's own."""
    cfg = _config(fields, resources)
    decided = Fingerprinter(cfg)
    asked = Fingerprinter(cfg)
    asked._native_terms = native_steps.NativeTerms(cfg.bits, cfg.dims, cfg.weighting != "tf")  # asks Python
    assert decided._native_terms is not None and decided._native_terms.decides
    for f in (decided, asked):  # rows made outside a batch, which the core is handed first
        f.terms("北京欢迎你，台胞明起")
        f._native_terms.add_rows(f._table.terms, f._table.row_data)  # type: ignore[union-attr]

    def must_not_register(tokens: list[str], have: int, learned: object) -> None:
        raise AssertionError(f"the core asked about {tokens!r}")

    got = decided._native_terms.run(token_lists, must_not_register)
    want = asked._native_terms.run(token_lists, asked._native_register)
    decided._take_learned()
    assert_same_term_parts(got, want)
    assert decided._codes == asked._codes
    assert decided._table.terms == asked._table.terms and decided._table.index == asked._table.index
    assert decided._table.row_data(0) == asked._table.row_data(0)


def test_python_decides_a_batch_with_a_token_that_is_no_utf8(extension: None, switch_on: None) -> None:
    """A lone surrogate has no UTF-8: the Fingerprinter decides all of that batch's new tokens, in batch order
    (the rows stay those of the Python path), and the core takes its terms for the batches after; what the
    core decided before such a batch reaches the table first, so every row keeps its number."""
    fper = Fingerprinter(FingerprintConfig(tokenizer="rjieba"))
    asked: list[list[str]] = []
    handed: list[object] = []

    def register(tokens: list[str], have: int, learned: tuple | None) -> tuple:
        asked.append(tokens)
        handed.append(learned and learned[0])
        return fper._native_register(tokens, have, learned)

    assert fper._native_terms is not None
    fper._native_terms.run([["北京", "a\ud800"], ["欢迎", "北京"]], register)
    assert asked == [["北京", "a\ud800", "欢迎"]] and handed == [None]
    fper._native_terms.run([["欢迎", "长城"]], register)
    assert fper._native_terms.learned_rows == 1 and len(fper._table) == 3
    fper._native_terms.run([["长城", "b\ud800", "故宫"]], register)
    assert asked[1:] == [["b\ud800", "故宫"]] and handed[1:] == [["长城"]]
    fper._take_learned()
    assert fper._table.terms == ["北京", "a\ud800", "欢迎", "长城", "b\ud800", "故宫"]
    assert fper._codes["长城"] == 2 * 3 and fper._codes["故宫"] == 2 * 5 and fper._native_terms.rows == 6


def test_the_core_decides_only_from_rules_it_can_hold(extension: None) -> None:
    """A stopword with a lone surrogate (no UTF-8) leaves the deciding to Python; a words table of the wrong
    size is refused."""
    step = native_steps.NativeTerms(64, 256, False)
    assert not step.decide_terms(frozenset({"\ud800"}), {}, raw=False, by_length=False) and not step.decides
    import esdedup_native

    with pytest.raises(ValueError, match="one byte per code point"):
        esdedup_native.TermCore(64, 256, False).decide_terms([32], b"\0" * 10, [], [], False, False)


def test_a_long_text_segmented_in_pieces(extension: None, switch_on: None, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    words = ["北京", "欢迎", "你", "。", "中国", "abc", " ", "123", "😀", "台湾居民"]
    long = "".join(rng.choice(words, 60_000).tolist())
    cfg = FingerprintConfig(tokenizer="rjieba", bits=128, strategy="simhash")
    fast = Fingerprinter(cfg)
    with monkeypatch.context() as m:
        m.setenv(native.ENV_SWITCH, "0")
        slow = Fingerprinter(cfg)
    assert_same_bits(fast.fingerprint_many([long, "短", long[:1000]]), slow.fingerprint_many([long, "短", long[:1000]]))


def test_the_switch_and_the_configs_decide_the_term_step(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(native.ENV_SWITCH, "0")
    assert native_steps.terms_step(FingerprintConfig(tokenizer="char", shingle=2)) is None
    assert Fingerprinter(FingerprintConfig(tokenizer="char", shingle=2))._native_terms is None
    for weighting in native_steps.TERM_WEIGHTINGS:
        assert native_steps.reproduces_terms(types.SimpleNamespace(bits=128, weighting=weighting))  # type: ignore[arg-type]
    assert not native_steps.reproduces_terms(types.SimpleNamespace(bits=64, weighting="bm25"))  # type: ignore[arg-type]
    assert not native_steps.reproduces_terms(types.SimpleNamespace(bits=32, weighting="tf"))  # type: ignore[arg-type]


@pytest.mark.parametrize("answer, message", [
    (([], b"", b"", b"", b"", []), "one code per token"),
    (([0], b"\0" * 8, b"\0" * 8, b"", b"\0" * 8, ["北京"]), "the hash data and term of every new row"),
    (([0], b"\0" * 8, b"\0" * 8, b"\0" * 4, b"\0" * 8, []), "the hash data and term of every new row"),
    (([0], b"\0" * 8, (300).to_bytes(8, "little"), b"\0" * 4, b"\0" * 8, ["北京"]),
     "outside the vector's 256 dimensions"),
    (([4], b"\0" * 8, b"\0" * 8, b"\0" * 4, b"\0" * 8, ["北京"]), "code 4 names no row"),
])
def test_the_core_refuses_a_register_answer_that_does_not_fit(extension: None, answer: tuple, message: str) -> None:
    core = native_steps.NativeTerms(64, 256, False)
    with pytest.raises(ValueError, match=message):
        core.run([["北京"]], lambda tokens, rows, learned: answer)
    assert core.rows == 0  # nothing of a refused answer is kept


def test_the_core_refuses_a_width_it_does_not_have(extension: None) -> None:
    import esdedup_native

    with pytest.raises(ValueError, match="bits must be 64 or 128, got 32"):
        esdedup_native.TermCore(32, 256, False)


def _native_clean() -> object:
    clean = native_steps.clean_step()
    assert clean is not None
    return clean


def _cleaned(clean, texts: list[str]) -> list[str]:  # type: ignore[no-untyped-def]
    return [nz._clean_nfkc(t) if c is None else c for t, c in zip(texts, clean(texts), strict=True)]


@pytest.mark.parametrize("context", ["a{}字", "Ａ{}\u3000", "\x00{}\u200b{}", "{}\u0301", "中{}ﾞ"])
def test_clean_equals_clean_nfkc_on_every_bmp_code_point(extension: None, switch_on: None, context: str) -> None:
    """Each code point beside SAFE, MAP1, JUNK and OTHER characters (the combining ones hand the text back
    to Python), and the definition itself: junk removed, then unicodedata's NFKC."""
    clean = _native_clean()
    texts = [context.format(chr(c), chr(c)) for c in range(0x10000)]
    assert _cleaned(clean, texts) == [unicodedata.normalize("NFKC", nz._JUNK.sub("", t)) for t in texts]


@SETTINGS
@given(batch=st.lists(TEXTS, max_size=12), t2s=st.booleans())
def test_normalize_many_with_the_native_clean_equals_normalize(extension: None, switch_on: None, batch: list[str],
                                                               t2s: bool) -> None:
    assert nz.normalize_many(batch, t2s=t2s, clean_many=_native_clean()) == [nz.normalize(t, t2s=t2s) for t in batch]


def test_clean_does_common_text_itself_and_hands_back_the_rest(extension: None, switch_on: None) -> None:
    texts = ["北京欢迎你。", "ＨＥＬＬＯ，　世界！\u0000", "北\u200b京", "ﬁ", "e\u0301", "😀", "\ud800x", ""]
    got = _native_clean()(texts)
    assert got[0] is texts[0]  # nothing to change: the same object
    assert got[1:3] == ["HELLO, 世界!", "北京"] and got[3:6] == [None, None, None]
    assert got[6:] == ["x", texts[7]]


def test_normalize_many_refuses_what_is_not_text(extension: None, switch_on: None) -> None:
    fper = Fingerprinter(FingerprintConfig(tokenizer="char", shingle=2))
    assert fper._native_clean is not None
    with pytest.raises(InputError, match="expected text"):
        fper.normalize_many(["北京", b"bytes"])  # type: ignore[list-item]
    with pytest.raises(InputError, match="expected text"):
        fper.fingerprint_many(["北京", None])  # type: ignore[list-item]
    monkeypatch_free = FingerprintConfig(tokenizer="char", shingle=2)
    assert [f.hex for f in Fingerprinter(monkeypatch_free).fingerprint_many(iter(["北京"] * 600))] == \
           [Fingerprinter(monkeypatch_free).fingerprint("北京").hex] * 600  # an iterator, several batches


#: Band layouts of both widths: pigeonhole, Manku's tables (several blocks a key, uneven widths), probing
#: with 64-bit keys, one block of the whole fingerprint.
LAYOUTS = [BandLayout.pigeonhole(64, 3), BandLayout.multi_table(64, 3, 6), BandLayout.probing(64, 3, 2),
           BandLayout.for_settings(128, 4, 7, 3), BandLayout(128, 0, 2, 1), BandLayout(64, 0, 1, 1),
           BandLayout.pigeonhole(128, 12)]


@pytest.mark.parametrize("layout", LAYOUTS, ids=[f"{la.bits}-{la.blocks}-{la.key_blocks}" for la in LAYOUTS])
@SETTINGS
@given(values=st.lists(st.integers(0, 2**128 - 1), max_size=20))
def test_native_band_keys_equal_the_layouts(extension: None, switch_on: None, layout: BandLayout,
                                            values: list[int]) -> None:
    values = [v & ((1 << layout.bits) - 1) for v in [*values, 0, (1 << layout.bits) - 1]]
    step = native_steps.band_keys_step(layout)
    assert step is not None
    assert step(values) == [layout.keys(v) for v in values]


def test_the_band_keys_refuse_a_table_wider_than_a_key(extension: None) -> None:
    import esdedup_native

    with pytest.raises(ValueError, match="at most 64"):
        esdedup_native.band_keys([1], [[(0, 40), (40, 40)]])


def test_threads_sharing_a_fingerprinter_take_turns(extension: None, switch_on: None,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The term step lets go of the GIL while it holds its table; a second thread waits instead of failing."""
    from concurrent.futures import ThreadPoolExecutor

    cfg = FingerprintConfig(tokenizer="char", shingle=2, strategy="simhash")
    shared = Fingerprinter(cfg)
    with monkeypatch.context() as m:
        m.setenv(native.ENV_SWITCH, "0")
        want = Fingerprinter(cfg).fingerprint_many([f"北京欢迎你{i}，第{i * 7}次" for i in range(2000)])
    with ThreadPoolExecutor(4) as pool:
        runs = list(pool.map(lambda _: shared.fingerprint_many([f"北京欢迎你{i}，第{i * 7}次" for i in range(2000)]),
                             range(8)))
    for got in runs:
        assert [f.hex for f in got] == [f.hex for f in want] and [f.bands for f in got] == [f.bands for f in want]


#: User words as a user dictionary and synonyms give them: with and without a frequency, overlapping
#: dictionary words, mixed scripts.
USER_WORDS = [("欢迎你", 5), ("中国人民", 200000), ("北京欢", None), ("abc中", 10), ("𠀀𠀁", None), ("x y", 3)]


@pytest.fixture(scope="module")
def segmenters() -> dict[bool, tuple[object, object]]:
    """(core, rjieba) segmenters without and with `USER_WORDS`, made once (each loads the dictionary)."""
    import esdedup_native
    import rjieba

    out = {}
    for with_words in (False, True):
        words = USER_WORDS if with_words else []
        reference = rjieba.Jieba()
        for word, freq in words:
            reference.add_word(word, freq, None)
        out[with_words] = esdedup_native.JiebaCore(words), reference
    return out


@pytest.mark.parametrize("with_words", [False, True])
@SETTINGS
@given(texts=st.lists(TEXTS, max_size=8))
def test_the_core_cuts_as_rjieba(extension: None, segmenters: dict[bool, tuple[object, object]], with_words: bool,
                                 texts: list[str]) -> None:
    """Chinese, CJK extensions, Latin, digits, emoji, controls, invisible characters, mixed scripts, with user
    words added as the ``rjieba`` tokenizer adds them."""
    core, reference = segmenters[with_words]
    texts = [t.encode("utf-8", "ignore").decode("utf-8") for t in texts]  # a str rjieba takes
    texts += ["北京欢迎你中国人民日报", "abc中文x y"]
    assert [core.cut(t) for t in texts] == [reference.cut(t, True) for t in texts]  # type: ignore[attr-defined]


def test_run_cut_refuses_pieces_that_do_not_add_up(extension: None, switch_on: None) -> None:
    fper = Fingerprinter(FingerprintConfig(tokenizer="rjieba"))
    assert fper._native_terms is not None
    with pytest.raises(ValueError, match="pieces add up to 3"):
        fper._native_terms.run_cut(fper._native_cut, ["北京", "欢迎"], [1, 2], fper._native_register)


def test_the_switch_and_the_tokenizer_decide_the_core_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(native.ENV_SWITCH, "0")
    assert native_steps.cut_step(FingerprintConfig(tokenizer="rjieba"), ()) is None
    monkeypatch.delenv(native.ENV_SWITCH)
    if native.extension_missing():
        return
    assert native_steps.cut_step(FingerprintConfig(tokenizer="char", shingle=2), ()) is None
    assert native_steps.cut_step(FingerprintConfig(tokenizer="rjieba"), ()) is \
        native_steps.cut_step(FingerprintConfig(tokenizer="rjieba", t2s=True), ())  # one per process
    fper = Fingerprinter(FingerprintConfig(tokenizer="rjieba"))
    fper.fingerprint_many(["北京欢迎你"])
    assert "_rjieba" not in vars(fper.tokenizer)  # the core segments: rjieba's own dictionary never loads


def _folded(fold, texts: list[str]) -> list[str]:  # type: ignore[no-untyped-def]
    return [nz._after_clean(t, False) if f is None else f for t, f in zip(texts, fold(texts), strict=True)]


@pytest.mark.parametrize("context", ["A{}b", " {}\u3000{}  "])
def test_fold_equals_casefold_and_split_on_every_code_point(extension: None, switch_on: None, context: str) -> None:
    fold = native_steps.fold_step()
    assert fold is not None
    for start in range(0, 0x110000, 0x10000):
        texts = [context.format(chr(c), chr(c)) for c in range(start, start + 0x10000)]
        assert _folded(fold, texts) == [" ".join(t.casefold().split()) for t in texts]


def test_fold_keeps_what_does_not_change_and_hands_back_surrogates(extension: None, switch_on: None) -> None:
    fold = native_steps.fold_step()
    assert fold is not None
    texts = ["北京 欢迎你", "", "ÅB  c\t", " x", "x ", "\ud800A", "ǅ\u2028ß"]
    got = fold(texts)
    assert got[0] is texts[0] and got[1] is texts[1]
    assert got[2:5] == ["åb c", "x", "x"] and got[5] is None and got[6] == "ǆ ss"


@SETTINGS
@given(batch=st.lists(TEXTS, max_size=12), t2s=st.booleans())
def test_normalize_many_with_the_native_fold_equals_normalize(extension: None, switch_on: None, batch: list[str],
                                                              t2s: bool) -> None:
    got = nz.normalize_many(batch, t2s=t2s, clean_many=_native_clean(), fold_many=native_steps.fold_step())
    assert got == [nz.normalize(t, t2s=t2s) for t in batch]
