"""Fingerprinter end to end: odd input, huge input, the vector, and every config knob that changes terms."""
from __future__ import annotations

import random
import re
import tracemalloc
import unicodedata
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import esdedup.fingerprint.fingerprinter as fpmod
import esdedup.fingerprint.normalize as normmod
from esdedup.errors import ConfigMismatchError, InputError
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.features import DocumentFrequency, char_shingles, count_filtered, term_weights
from esdedup.fingerprint.fingerprinter import Fingerprint, Fingerprinter
from esdedup.fingerprint.normalize import normalize, normalize_many
from esdedup.fingerprint.tokenize import iter_pieces
from esdedup.match.similarity import cosine, vector_cosine

SEEDS = Path("/work/shared/seeds")
NEWS = ("在1998年来临之际，我十分高兴地通过中央人民广播电台、中国国际广播电台和中央电视台，"
        "向全国各族人民致以诚挚的问候和良好的祝愿！")
DOC001_A = "臺灣居民明日起持臺胞證可通關 無需辦理簽注"
DOC001_B = "明起臺胞來京無需辦理簽注 電子臺胞證年內實施"


@pytest.fixture(scope="module")
def fper():
    return Fingerprinter(FingerprintConfig(short_text_chars=0, tokenizer="rjieba"))


@pytest.fixture(scope="module")
def fper_jieba():
    return Fingerprinter(FingerprintConfig(short_text_chars=0, tokenizer="jieba"))


# -- empty and odd input -----------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", " ", "\n\t  \u3000", "。，！？", "...---!!!", "😀🎉👍", "\x00\x01\ud800",
                                  "\u200d\u0301"])
def test_text_without_words_is_empty(fper, text):
    fp = fper.fingerprint(text)
    assert fp.empty
    assert fp.bands == [] and fp.lsh == []
    assert fp.simhash == 0 and fp.tf == {} and fp.length == 0
    assert fp.vector.shape == (fper.config.dims,) and not fp.vector.any()


def test_empty_texts_never_collide(fper):
    a, b = fper.fingerprint_many(["", "。。。"])
    assert not set(a.bands) & set(b.bands)
    assert not set(a.lsh) & set(b.lsh)
    assert vector_cosine(a.vector, b.vector) == 0.0


def test_emoji_surrogates_and_control_characters(fper):
    assert fper.fingerprint("北\x00京欢\x7f迎你\x1f") == fper.fingerprint("北京欢迎你")
    assert fper.fingerprint("北\ud800京欢迎你\udfff") == fper.fingerprint("北京欢迎你")
    with_emoji = fper.fingerprint("今天天气很好😀，我们去公园🌳散步。")
    assert not with_emoji.empty
    assert all(fpmod.term_of(t) == t for t in with_emoji.tf)  # only word terms, no emoji
    assert not any("😀" in t or "🌳" in t for t in with_emoji.tf)
    assert with_emoji == fper.fingerprint("今天天气很好😀，我们去公园🌳散步。")  # defined: same again
    # combining marks compose (NFKC); full-width letters fold to ASCII and case folds
    assert fper.fingerprint("Cafe\u0301 ＣＡＦＥ") == fper.fingerprint("café cafe")


@pytest.mark.parametrize("bad", [b"\xe4\xb8\xad\xe5\x9b\xbd", bytearray(b"abc"), None, 42, ["中国"]])
def test_non_text_input_is_an_input_error(fper, bad):
    with pytest.raises(InputError, match="expected text"):
        fper.fingerprint(bad)
    with pytest.raises(InputError):
        fper.fingerprint_many(["中国", bad])


# -- the normalisation fast path is NFKC exactly -----------------------------------------------------

_WS = re.compile(r"\s+")


def _reference_normalize(text: str, t2s: bool = False) -> str:
    text = unicodedata.normalize("NFKC", normmod._JUNK.sub("", text))
    if t2s:
        text = normmod._t2s().convert(text)
    return _WS.sub(" ", text.casefold()).strip()


@pytest.mark.parametrize("invisible", ["\u200b", "\u200c", "\u200d", "\u00ad", "\ufeff", "\u2060", "\u202e",
                                       "\u2066", "\ufe0f", "\u180e", "\U000e0100", "\U000e0020"])
def test_invisible_format_characters_do_not_change_the_fingerprint(fper, invisible):
    """Zero-width spaces and the like, scattered through a text (anti-scraping, copy and paste from a web
    page), leave the same fingerprint: they would otherwise split words and move the SimHash."""
    obfuscated = invisible.join(NEWS[i:i + 3] for i in range(0, len(NEWS), 3))
    assert normalize(obfuscated) == normalize(NEWS)
    assert fper.fingerprint(obfuscated) == fper.fingerprint(NEWS)
    assert normalize("a" + invisible) == "a"


def test_normalize_docstring():
    assert normalize("ＨＥＬＬＯ，　世界！\u0000") == "hello, 世界!"
    assert normalize("臺灣居民", t2s=True) == "台湾居民"


def test_normalize_equals_reference_on_every_bmp_code_point_in_context():
    for lo in range(0, 0x10000, 128):
        chars = [chr(c) for c in range(lo, lo + 128)]
        for text in ("".join(f"a{ch}\u0301{ch}\u0308字" for ch in chars),  # before and after combining marks
                     "".join(f"ｶ{ch}ﾞ" for ch in chars),                      # half-width kana voicing
                     "".join(f"\u1100{ch}\u1161{ch}\u11a8" for ch in chars)):  # Hangul jamo composition
            assert normalize(text) == _reference_normalize(text), hex(lo)


_ALPHABET = list(" \t\n\r\u3000\xa0abcXYZ中文臺灣，。！？１２ＡＢｶﾞ…℃①⑵\u0301\u0308\u0323\x00\x0c\x85\ud800"
                 "\udc00éßİﬁ😀𠀀\u1100\u1161\u11a8\uac00\u0bc6\u0bbe\u200b\U000e0100\U000e0041\U0001d173")


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_ALPHABET), max_size=40).map("".join), st.booleans(),
       st.sampled_from([1, 2, 3, 7, 1 << 20]))
def test_normalize_equals_reference_on_random_text(text, t2s, block):
    old = normmod._BLOCK_CHARS
    normmod._BLOCK_CHARS = block  # also exercise the block-by-block path of long texts
    try:
        assert normalize(text, t2s=t2s) == _reference_normalize(text, t2s)
    finally:
        normmod._BLOCK_CHARS = old


# -- the fast path agrees with the plain term pipeline -------------------------------------------------


def _configs(tmp_path: Path) -> list[FingerprintConfig]:
    syn = tmp_path / "syn.dict"
    syn.write_text("台胞 台湾居民 台湾同胞\n明日 明天 明起 明日起\n中国 中华\n", encoding="utf-8")
    idf = tmp_path / "idf.json"
    idf.write_text(DocumentFrequency.build([["中国", "北京"], ["中国"], ["台胞"]]).to_json(), encoding="utf-8")
    return [FingerprintConfig(short_text_chars=0, tokenizer="rjieba"), FingerprintConfig(short_text_chars=0, tokenizer="jieba", weighting="tf_length"),
            FingerprintConfig(short_text_chars=0, tokenizer="rjieba", synonyms_path=str(syn), t2s=True),
            FingerprintConfig(short_text_chars=0, tokenizer="rjieba", weighting="tfidf", idf_path=str(idf), bits=128),
            FingerprintConfig(short_text_chars=0, tokenizer="char", shingle=2), FingerprintConfig(short_text_chars=0, tokenizer="rjieba", stopwords="none")]


def _reference_counts(fper: Fingerprinter, text: str) -> Counter:
    """The plain per-text pipeline, as the documents describe it: segment each piece, filter and map every
    token (`features.count_filtered`), count; the test oracle of the batch pipeline."""
    cfg, res = fper.config, fper.resources
    norm = fper.normalize(text)
    if cfg.tokenizer == "char":
        return Counter(char_shingles(norm, cfg.shingle))
    raw: Counter = Counter()
    for piece in iter_pieces(norm):
        raw.update(fper.tokenizer.cut(piece))
    return count_filtered(raw, res.stopwords, res.synonyms)


def test_fast_path_equals_term_counts(tmp_path):
    texts = [NEWS, DOC001_A, DOC001_B, DOC001_A + "，台胞很高兴，台湾同胞也高兴。中华 中国", "", "。",
             " Hello  World hello ", "中国" * 50]
    for cfg in _configs(tmp_path):
        fper = Fingerprinter(cfg)
        for fp, text in zip(fper.fingerprint_many(texts), texts, strict=True):
            reference = _reference_counts(fper, text)
            expected = term_weights(reference, cfg.weighting, fper.resources.idf)
            assert list(fp.tf.items()) == list(expected.items()), (cfg.tokenizer, text)
            assert fp.length == sum(reference.values())
            assert list(fper.term_counts(text).items()) == list(reference.items())


def test_tf_is_built_on_first_use_and_pickles_as_a_plain_dict():
    """fingerprint_many leaves tf as a lazy mapping over the term table; what other processes receive
    is a plain dict with the same items, in the same order."""
    import pickle

    fper = Fingerprinter(FingerprintConfig(short_text_chars=0, tokenizer="rjieba"))
    fp = fper.fingerprint_many([NEWS])[0]
    expected = term_weights(_reference_counts(fper, NEWS), "tf")
    copy = pickle.loads(pickle.dumps(fp))
    assert type(copy.tf) is dict and list(copy.tf.items()) == list(expected.items())
    assert len(fp.tf) == len(expected) and fp.tf == expected and dict(fp.tf) == expected
    assert fp.tf.get("no such term") is None and next(iter(fp.tf)) == next(iter(expected))


def test_term_table_is_cleared_between_chunks_without_changing_results(monkeypatch):
    texts = [f"{NEWS[i:]}第{i}号文件" for i in range(0, 40, 3)] + [DOC001_A, DOC001_B]
    expected = Fingerprinter(FingerprintConfig(short_text_chars=0, tokenizer="rjieba")).fingerprint_many(texts)
    monkeypatch.setattr(fpmod, "MAX_CACHED_TERMS", 5)
    monkeypatch.setattr(fpmod, "_DOCS_PER_PASS", 3)
    fper = Fingerprinter(FingerprintConfig(short_text_chars=0, tokenizer="rjieba"))
    assert fper.fingerprint_many(texts) == expected
    assert [fper.fingerprint(t) for t in texts] == expected
    assert len(fper._table) < 200


def test_ingest_normalises_each_text_once(monkeypatch):
    """Ingest needs the normalised text twice (fingerprint, exact-duplicate hash): it normalises once and
    gets the same fingerprints and hashes as fingerprint_many and ids_for_texts."""
    import esdedup.ingest.documents as ingest_mod
    import esdedup.ingest.workers as workers_mod

    texts = [NEWS, DOC001_A, "", "ＨＥＬＬＯ，　世界！", "臺灣居民明日起" * 60]
    cfg = FingerprintConfig(short_text_chars=0, tokenizer="rjieba")
    expected = Fingerprinter(cfg).fingerprint_many(texts)
    calls = []

    def counted(text, t2s=False):
        calls.append(text)
        return normalize(text, t2s=t2s)

    def counted_many(batch, t2s=False, clean_many=None, fold_many=None, t2s_many=None):  # the native core's steps
        calls.extend(batch)
        return normalize_many(batch, t2s=t2s, clean_many=clean_many, fold_many=fold_many, t2s_many=t2s_many)

    # Every name normalize is called by on this path; the worker module has none of its own (raising=False),
    # and a call it made through one would be counted too.
    for module in (fpmod, ingest_mod, workers_mod):
        monkeypatch.setattr(module, "normalize", counted, raising=module is not workers_mod)
    monkeypatch.setattr(fpmod, "normalize_many", counted_many)
    got = workers_mod.fingerprint_with(Fingerprinter(cfg), texts)
    assert calls == texts
    assert [sha for _, sha in got] == ingest_mod.ids_for_texts(texts, cfg)
    for (fp, _), want in zip(got, expected, strict=True):
        assert (fp.simhash, fp.bands, fp.lsh, fp.chars, fp.empty) == (want.simhash, want.bands, want.lsh, want.chars,
                                                                      want.empty)
        assert np.array_equal(fp.vector, want.vector)
        assert (fp.minhash is None) == (want.minhash is None)
        assert fp.minhash is None or np.array_equal(fp.minhash, want.minhash)


# -- vector --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dims", [8, 64, 256, 1000])
def test_vector_is_unit_float32_of_dims(dims):
    fper = Fingerprinter(FingerprintConfig(short_text_chars=0, tokenizer="rjieba", dims=dims))
    for text in (NEWS, "中国", DOC001_A * 3):
        v = fper.fingerprint(text).vector
        assert v.dtype == np.float32 and v.shape == (dims,)
        assert float(np.linalg.norm(v.astype(np.float64))) == pytest.approx(1.0, abs=1e-6)


def test_vector_cosine_tracks_exact_cosine(fper):
    a, b = fper.fingerprint(NEWS), fper.fingerprint(NEWS.replace("良好的祝愿", "美好的祝福"))
    exact = cosine(a.tf, b.tf)
    assert vector_cosine(a.vector, b.vector) == pytest.approx(exact, abs=0.1)
    assert vector_cosine(a.vector, a.vector) == pytest.approx(1.0, abs=1e-6)


# -- config knobs --------------------------------------------------------------------------------------


def test_t2s_makes_traditional_and_simplified_equal():
    fper = Fingerprinter(FingerprintConfig(short_text_chars=0, tokenizer="rjieba", t2s=True))
    trad = fper.fingerprint(DOC001_A)
    simp = fper.fingerprint("台湾居民明日起持台胞证可通关 无需办理签注")
    assert trad == simp and not trad.empty
    plain = Fingerprinter(FingerprintConfig(short_text_chars=0, tokenizer="rjieba"))
    assert plain.fingerprint(DOC001_A) != plain.fingerprint("台湾居民明日起持台胞证可通关 无需办理签注")


def _write_synonyms(path: Path, text: str = "台胞 台湾居民 台湾同胞\n明日 明天 明起 明日起\n") -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_synonyms_bring_variant_wordings_closer(tmp_path):
    syn = _write_synonyms(tmp_path / "synonyms.dict")
    with_syn = Fingerprinter(FingerprintConfig(short_text_chars=0, tokenizer="jieba", t2s=True, synonyms_path=str(syn)))
    without = Fingerprinter(FingerprintConfig(short_text_chars=0, tokenizer="jieba", t2s=True))
    a, b = with_syn.fingerprint_many([DOC001_A, DOC001_B])
    c, d = without.fingerprint_many([DOC001_A, DOC001_B])
    assert "台胞" in a.tf and "台湾居民" not in a.tf  # the variant is mapped to its canonical term
    assert "明日" in b.tf and "明起" not in b.tf
    assert cosine(a.tf, b.tf) > cosine(c.tf, d.tf)
    assert vector_cosine(a.vector, b.vector) > vector_cosine(c.vector, d.vector)


def test_changed_synonyms_file_is_a_config_mismatch(tmp_path):
    syn = _write_synonyms(tmp_path / "synonyms.dict")
    cfg = FingerprintConfig(short_text_chars=0, tokenizer="rjieba", synonyms_path=str(syn))
    Fingerprinter(cfg)  # fine while the file is as it was
    _write_synonyms(syn, "台胞 台湾居民\n")
    with pytest.raises(ConfigMismatchError, match="changed since the config was made") as info:
        Fingerprinter(cfg)
    assert info.value.stored == {"sha256": cfg.synonyms_sha256}


def test_user_dictionary_keeps_a_word_whole(tmp_path, fper, fper_jieba):
    text = "量子纠缠态机器人很厉害"
    user = tmp_path / "user.dict"
    user.write_text("量子纠缠态 10 n\n", encoding="utf-8")
    for tokenizer, plain_fper in (("jieba", fper_jieba), ("rjieba", fper)):
        plain = plain_fper.fingerprint(text)
        assert "量子纠缠态" not in plain.tf and "量子" in plain.tf
        fp = Fingerprinter(FingerprintConfig(short_text_chars=0, tokenizer=tokenizer, user_dict_path=str(user))).fingerprint(text)
        assert "量子纠缠态" in fp.tf and "量子" not in fp.tf
        # the user word does not leak into another Fingerprinter's dictionary
        assert "量子纠缠态" not in plain_fper.fingerprint(text).tf


def test_stopwords(tmp_path):
    text = "我的朋友是北京的老师"
    default = Fingerprinter(FingerprintConfig(short_text_chars=0, tokenizer="rjieba")).fingerprint(text)
    assert "的" not in default.tf and "是" not in default.tf and "北京" in default.tf
    none = Fingerprinter(FingerprintConfig(short_text_chars=0, tokenizer="rjieba", stopwords="none")).fingerprint(text)
    assert none.tf["的"] == 2.0 and "是" in none.tf
    own = tmp_path / "stop.txt"
    own.write_text("# mine\n朋友\n北京\n", encoding="utf-8")
    fp = Fingerprinter(FingerprintConfig(short_text_chars=0, tokenizer="rjieba", stopwords="file",
                                         stopwords_path=str(own))).fingerprint(text)
    assert "朋友" not in fp.tf and "北京" not in fp.tf and fp.tf["的"] == 2.0


def test_tfidf_with_a_saved_document_frequency_table(tmp_path):
    df = DocumentFrequency.build([["中国", "北京"], ["中国", "上海"], ["中国"], ["台胞"]])
    path = tmp_path / "idf.json"
    path.write_text(df.to_json(), encoding="utf-8")
    fper = Fingerprinter(FingerprintConfig(short_text_chars=0, tokenizer="rjieba", weighting="tfidf", idf_path=str(path)))
    fp = fper.fingerprint("中国 北京 北京 火星")
    assert fp.tf == pytest.approx({"中国": df.idf("中国"), "北京": 2 * df.idf("北京"), "火星": df.idf("火星")})
    assert fp.tf["火星"] > fp.tf["中国"]  # unseen terms weigh most, ubiquitous ones least
    assert fper.config.idf_sha256 is not None


def test_tf_length_weights():
    fper = Fingerprinter(FingerprintConfig(short_text_chars=0, tokenizer="rjieba", weighting="tf_length", stopwords="none"))
    fp = fper.fingerprint("斗罗 斗罗 斗罗 我 我 中华人民共和国")
    assert fp.tf == {"斗罗": 6.0, "我": 2.0, "中华人民共和国": 7.0}
    assert fp.length == 6


def test_char_tokenizer_with_bigrams():
    fper = Fingerprinter(FingerprintConfig(short_text_chars=0, tokenizer="char", shingle=2, strategy="simhash"))
    fp = fper.fingerprint("北京, 欢迎你! 北京")
    assert fp.tf == {"北京": 2.0, "京欢": 1.0, "欢迎": 1.0, "迎你": 1.0, "你北": 1.0}
    assert fp.length == 6
    assert fper.fingerprint("，。") .empty


def test_strategy_decides_which_keys_a_text_gets():
    """``auto``: every text gets MinHash LSH keys, texts of at least ``short_text_chars`` also SimHash
    band keys; ``minhash``: LSH keys only; ``simhash``: band keys only."""
    short, long_ = "台湾居民明日起持台胞证可通关", NEWS * 5  # 14 and 310 characters
    auto = Fingerprinter(FingerprintConfig(tokenizer="rjieba", strategy="auto", short_text_chars=100))
    s, lg = auto.fingerprint_many([short, long_])
    assert len(s.lsh) == auto.config.minhash_bands and s.minhash is not None and s.shingles > 0
    assert s.bands == []  # a few words make an unstable SimHash
    assert len(lg.lsh) == 16 and lg.bands == auto.layout.keys(lg.simhash)
    # Nothing reads a short text's terms here (no SimHash bands, no stored vector): it is never segmented.
    assert (s.simhash, s.length, dict(s.tf), s.vector.any()) == (0, 0, {}, False) and not s.empty
    assert lg.simhash and lg.length and lg.tf
    # Without terms, a text is empty when it has no letter or digit: stopwords alone still make n-grams.
    stop, long_stop = auto.fingerprint_many(["的了是在", "的" * 100])
    assert not stop.empty and stop.shingles == 3 and len(stop.lsh) == 16
    assert long_stop.empty and long_stop.lsh == [] and long_stop.minhash is None  # segmented: no term
    # A stored vector is read (kNN, the cosine rule): then every text is segmented.
    knn = Fingerprinter(FingerprintConfig(tokenizer="rjieba", short_text_chars=100, vector_index="int8_flat"))
    with_vector = knn.fingerprint(short)
    assert with_vector.simhash and with_vector.vector.any() and with_vector.bands == []
    always = Fingerprinter(FingerprintConfig(short_text_chars=0, tokenizer="rjieba", strategy="minhash"))
    assert all(len(fp.lsh) == 16 and fp.bands == [] for fp in always.fingerprint_many([short, long_]))
    never = Fingerprinter(FingerprintConfig(short_text_chars=0, tokenizer="rjieba", strategy="simhash"))
    for fp in never.fingerprint_many([short, long_]):
        assert fp.lsh == [] and fp.minhash is None and fp.shingles == 0
        assert fp.bands == never.layout.keys(fp.simhash)


def test_fingerprint_value_semantics():
    fper = Fingerprinter(FingerprintConfig(short_text_chars=0, tokenizer="rjieba", strategy="simhash"))
    fp = fper.fingerprint(NEWS)
    assert isinstance(fp, Fingerprint)
    assert fp.hex == f"{fp.simhash:016x}" and fp.bands == fper.layout.keys(fp.simhash)
    assert len(fp.bands) == fper.layout.n_tables == 4
    assert fp.chars == len(normalize(NEWS))
    with pytest.raises(TypeError):
        hash(fp)
    assert fp != fper.fingerprint(DOC001_A)


# -- a 50 MB document -------------------------------------------------------------------------------


def _big_document(target_bytes: int) -> str:
    """Real Chinese prose (the design documents) interleaved with long Latin tokens (as crawled pages
    carry: base64, minified code), so 50 MB make some hundred thousand tokens, not ten million (tracemalloc
    traces every token string it allocates)."""
    rng = random.Random(5)
    paragraphs = [p for f in sorted(SEEDS.glob("*.txt")) for p in f.read_text("utf-8").splitlines() if p.strip()]
    if not paragraphs:  # pragma: no cover - the seeds ship with the workspace
        paragraphs = [NEWS]
    words = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz0123456789", k=2000)) for _ in range(300)]
    parts, size = [], 0
    while size < target_bytes:
        part = f"{rng.choice(paragraphs)[:60]} {rng.choice(words)}\n"
        parts.append(part)
        size += len(part.encode("utf-8"))
    return "".join(parts)


def _peak_memory(fper: Fingerprinter, text: str) -> tuple[Fingerprint, int]:
    fper.fingerprint("预热")
    tracemalloc.start()
    try:
        fp = fper.fingerprint(text)
        return fp, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_50_mb_document_with_bounded_memory():
    """The SimHash / TF-vector pipeline (strategy ``simhash``: tokens, SimHash, bands, vector)."""
    fper = Fingerprinter(FingerprintConfig(short_text_chars=0, tokenizer="rjieba", strategy="simhash"))
    text = _big_document(50_000_000)
    nbytes = len(text.encode("utf-8"))
    assert nbytes >= 50_000_000
    fper.fingerprint("预热")
    tracemalloc.start()
    try:
        fp = fper.fingerprint(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not fp.empty and fp.length > 200_000
    assert 0.9 * len(text) < fp.chars <= len(text)
    assert float(np.linalg.norm(fp.vector)) == pytest.approx(1.0, abs=1e-5)
    # a memory bound, not a timing one: the text is normalised in blocks and segmented piece by piece
    assert peak < 6 * nbytes, f"peak {peak / 1e6:.0f} MB for a {nbytes / 1e6:.0f} MB document"


def test_long_document_with_default_strategy_has_bounded_memory():
    fper = Fingerprinter(FingerprintConfig(short_text_chars=0, tokenizer="rjieba"))
    text = _big_document(1_000_000)
    fp, peak = _peak_memory(fper, text)
    assert fp.lsh  # the MinHash part is there
    assert peak < 6 * len(text.encode("utf-8")) + 20_000_000  # allowance for fixed costs on 1 MB
