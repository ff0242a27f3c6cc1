"""The fast path of `esdedup.search.diversify` gives the answers of its reference, exactly.

The fast path reads hits of the usual form inline (`_Page.read_fast`), decodes a page's signatures at once
(`esdedup.es.hits.decode_signatures`) and counts equal signature positions over the grid (`esdedup.match.measures.equal_positions`,
in the native core when it is built, else in numpy). The reference reads every hit with the general reader
(`_Page.read`) and counts each pair by a plain comparison. On random and adversarial pages (mixed indexes and
forms, missing parts, empty and blank texts, texts to fingerprint, bad values, several configs and thresholds),
both must return the same hits in the same order, the same ``_duplicate_of`` and ``_duplicates``, the same
errors, and measure every pair the same, so that the measure that decided (`decided_by`) is the same too.
"""
from __future__ import annotations

import base64
import importlib
import random

import numpy as np
import pytest

from esdedup.errors import InputError
from esdedup.es.hits import b64_form, decode_base64, decode_signatures, parse_minhash
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprinter
from esdedup.fingerprint.simhash import to_hex
from esdedup.match import native_kernels
from esdedup.match.measures import SketchColumns, equal_positions, measured
from esdedup.match.rule import decided_by
from esdedup.match.thresholds import Thresholds, resolve_thresholds
from esdedup.schema import encode_minhash
from esdedup.search.diversify import MODES, diversify
from esdedup.util import native

div = importlib.import_module("esdedup.search.diversify")
rule = importlib.import_module("esdedup.match.rule")
measures = importlib.import_module("esdedup.match.measures")

TEXTS = ["国家统计局今天发布数据显示，前三季度经济运行总体平稳，消费对增长的贡献率持续提高。",
         "国家统计局今日发布数据显示，前三季度经济运行总体平稳，消费对增长的贡献率持续提高。",
         "气象台发布暴雨黄色预警，预计未来二十四小时东部地区将出现大到暴雨。",
         "足球联赛第二十轮比赛昨晚结束，主队逆转客队。", "短文本", "   ", "", "！？。", "！？。"]
CONFIGS = [FingerprintConfig(), FingerprintConfig(strategy="simhash"), FingerprintConfig(strategy="minhash"),
           FingerprintConfig(bits=128), FingerprintConfig(minhash_perm=64, minhash_bands=16, minhash_rows=4),
           FingerprintConfig(minhash_perm=30, minhash_bands=10, minhash_rows=3)]
THRESHOLDS = [None, Thresholds(3, None), Thresholds(None, 0.9), Thresholds(4, 0.8), Thresholds(3, 0.9, jaccard=0.5),
              Thresholds(None, 0.85, jaccard=0.6, containment=0.7), Thresholds(5, None, containment=0.5)]


def _reference_counts(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Equal positions of every pair, by the plainest comparison."""
    return (np.asarray(a)[:, None, :] == np.asarray(b)[None, :, :]).sum(axis=2)


def reference(hits, **kwargs):
    """`diversify` with every hit read by the general reader and every pair counted plainly."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(div, "_group_natively", lambda *a: None)
        mp.setattr(div._Page, "read_fast", classmethod(lambda cls, *a: None))
        mp.setattr(measures, "equal_positions", _reference_counts)
        return diversify(hits, **kwargs)


def outcome(fn, hits, **kwargs):
    """What a call gives: its hits, or its error's type and message."""
    try:
        return fn(hits, **kwargs)
    except InputError as exc:
        return (type(exc), str(exc))


# -- pages ------------------------------------------------------------------------------------------
def _signature(rng: random.Random, centres: list[np.ndarray], perm: int) -> np.ndarray:
    sig = centres[rng.randrange(len(centres))][:perm].copy()
    edits = rng.choice([0, 0, 1, perm // 8, perm // 3, perm // 2, perm])
    for p in rng.sample(range(perm), min(perm, edits)):
        sig[p] = rng.randrange(1 << 16)
    return sig


def _page(rng: random.Random, config: FingerprintConfig, n: int, fingerprints: dict) -> list[dict]:
    """A page of n hits drawn around a few centres, each part present, missing or odd at random, in any of
    the forms a search returns."""
    perm = config.minhash_perm
    centres = [np.array([rng.randrange(1 << 16) for _ in range(max(perm, 128))], dtype=np.uint32) for _ in range(3)]
    simhashes = [rng.getrandbits(config.bits) | 1 for _ in range(3)]
    dims = 8 if rng.random() < 0.15 else config.dims  # 8: vectors no text of this config has
    vectors = [np.array([rng.gauss(0, 1) for _ in range(dims)]) for _ in range(3)]
    hits = []
    for i in range(n):
        d: dict = {}
        if rng.random() < 0.85:
            s = simhashes[rng.randrange(3)]
            for _ in range(rng.choice([0, 0, 1, 2, 3, 4, 8, 30])):
                s ^= 1 << rng.randrange(config.bits)
            d["simhash"] = rng.choice([to_hex(s, config.bits), to_hex(s, config.bits).upper(), hex(s)]) \
                if rng.random() < 0.9 else to_hex(s, config.bits)
        if rng.random() < 0.3:
            d["vector"] = [float(x) for x in vectors[rng.randrange(3)] + [rng.gauss(0, rng.choice([0.01, 0.3]))
                                                                          for _ in range(dims)]]
        if rng.random() < 0.05:
            d["vector"] = rng.choice([[], "1,2", None])
        if rng.random() < 0.75:
            d["minhash"] = encode_minhash(_signature(rng, centres, perm))
            d["shingles"] = rng.choice([1, 5, 8, 20, 40, 200, 0, "30", 30.0])
        if rng.random() < 0.05:
            d["minhash"] = base64.b64encode(_signature(rng, centres, perm).astype("<u2").tobytes())  # bytes
        d["chars"] = rng.choice([None, 3, 150, 199, 200, 500, "42"])
        d["empty"] = rng.choice([False, False, False, False, None, True, "false", "True"])
        if rng.random() < 0.25:
            d["cluster_id"] = rng.choice(["x", "y", 7])
        if rng.random() < 0.4:  # rule 0: texts without words are duplicates of their exact copies
            d["content_sha1"] = rng.choice(["aa", "aa", "bb", 5])
        if rng.random() < 0.002:
            d["simhash"] = "zz"
        if rng.random() < 0.002 and "minhash" in d:
            d["minhash"] = "%" + str(d["minhash"])[1:]
        d = {k: v for k, v in d.items() if v is not None or rng.random() < 0.2}
        h: dict = {"_id": f"h{i}", "_score": float(n - i)}
        if rng.random() < 0.9:
            h["_index"] = rng.choice(["news", "news", "archive"])
        text = None
        if rng.random() < 0.3:
            text = rng.choice(TEXTS)
            d = {k: v for k, v in d.items() if rng.random() < 0.4}  # a text beside what is left of the sketch
        form = rng.choices(["source", "fields", "dotted", "mixed", "bare"], weights=[6, 2, 1, 2, 1])[0]
        if form == "source":
            h["_source"] = {"dedup": d, "title": f"t{i}"} | ({"text": text} if text is not None else {})
        elif form == "fields":
            h["fields"] = {f"dedup.{k}": ([v] if k != "vector" else [v]) for k, v in d.items()}
            if text is not None:
                h["fields"]["text"] = [text]
        elif form == "dotted":
            h["_source"] = {f"dedup.{k}": v for k, v in d.items()} | ({"text": text} if text is not None else {})
        elif form == "mixed":  # search_diversified's form: the signature in _source, the rest as doc values
            h["_source"] = {"dedup": {k: v for k, v in d.items() if k == "minhash"}}
            h["fields"] = {f"dedup.{k}": [v] for k, v in d.items() if k != "minhash"}
        elif text is not None:
            h["_source"] = {"text": text}
        hits.append(h)
    return hits


def _pages(seed: int, count: int):
    rng = random.Random(seed)
    fps: dict = {}
    for _ in range(count):
        config = rng.choice(CONFIGS)
        yield config, rng.choice(THRESHOLDS), _page(rng, config, rng.choice([0, 1, 2, 5, 30, 100, 100, 200]), fps)


@pytest.fixture(scope="module")
def fingerprinters() -> dict:
    return {c.to_json(): Fingerprinter(c) for c in CONFIGS}


# -- the whole call ---------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("switch", ["1", "0"])
def test_random_pages_give_the_reference_answers(seed, switch, fingerprinters, monkeypatch):
    monkeypatch.setenv(native.ENV_SWITCH, switch)  # the native kernels where they are built, and numpy's
    for config, t, hits in _pages(seed, 25):
        fp = fingerprinters[config.to_json()]
        for mode in MODES:
            kwargs = {"mode": mode, "config": config, "thresholds": t, "fingerprinter": fp}
            assert outcome(diversify, hits, **kwargs) == outcome(reference, hits, **kwargs), (config, t, mode)


def test_the_random_pages_exercise_what_they_are_for(fingerprinters):
    """The premise of the test above: its pages have duplicates and representatives, exact copies of texts
    without words, errors, and hits of every form, and most of them go the fast way."""
    dups = kept = errors = fast = copies = 0
    for config, t, hits in _pages(0, 25):
        got = outcome(diversify, hits, mode="demote", config=config, thresholds=t,
                      fingerprinter=fingerprinters[config.to_json()])
        if isinstance(got, tuple):
            errors += 1
            continue
        dups += sum("_duplicate_of" in h for h in got)
        copies += sum("_duplicate_of" in h and ((h.get("_source") or {}).get("dedup") or {}).get("empty") in (True, "True")
                      for h in got)  # rule 0: exact copies of texts without words
        kept += sum("_duplicate_of" not in h for h in got)
        fast += div._Page.read_fast(hits, config, resolve_thresholds(t, config), "text") is not None
    assert dups > 100 and kept > 100 and errors >= 2 and fast >= 5 and copies >= 5


def _usual(i: int, sig: np.ndarray, s: int, **extra) -> dict:
    return {"_id": str(i), "_index": "news",
            "_source": {"dedup": {"simhash": to_hex(s), "minhash": encode_minhash(sig), "shingles": 40, "chars": 300,
                                  "empty": False, **extra}}}


@pytest.mark.parametrize("mode", MODES)
def test_adversarial_pages(mode):
    rng = np.random.default_rng(5)
    base = rng.integers(0, 1 << 16, 128).astype(np.uint32)
    same = [_usual(i, base, 0x1234) for i in range(60)]  # one group of 60
    pairs = []
    for i in range(50):
        sig = rng.integers(0, 1 << 16, 128).astype(np.uint32)
        twin = sig.copy()
        twin[: 64 + i % 3 - 1] ^= 1  # Jaccard about 0.5: just below, at, just above the threshold
        pairs += [_usual(2 * i, sig, i), _usual(2 * i + 1, twin, i)]
    chain = []  # each hit close to the one before, far from those further back: greedy order matters
    sig = base.copy()
    for i in range(40):
        chain.append(_usual(i, sig.copy(), i))
        sig[(i * 20) % 128:(i * 20) % 128 + 40] += 1
    clusters = [_usual(i, rng.integers(0, 1 << 16, 128).astype(np.uint32), i, cluster_id=f"c{i % 3}")
                for i in range(30)]
    for h, index in zip(clusters, ["a", "b"] * 15, strict=True):
        h["_index"] = index
    empties = [_usual(i, base, 0, empty=None) if i % 2 else _usual(i, base, 5, empty=True) for i in range(10)]
    odd = [*same[:3], {"_id": "blank", "_source": {"text": "  "}}, {"_id": "none"}, *same[3:6]]
    for page in (same, pairs, chain, clusters, empties, odd, same + pairs + chain + clusters):
        for t in (None, Thresholds(3, None, jaccard=0.5), Thresholds(None, 0.9, containment=0.8)):
            assert outcome(diversify, page, mode=mode, thresholds=t) == outcome(reference, page, mode=mode, thresholds=t)


def test_bad_hits_raise_the_error_of_the_first_bad_hit():
    rng = np.random.default_rng(1)
    good = [_usual(i, rng.integers(0, 1 << 16, 128).astype(np.uint32), i) for i in range(6)]
    bad_sig = _usual(90, good[0]["_source"]["dedup"] and rng.integers(0, 9, 128).astype(np.uint32), 1)
    bad_sig["_source"]["dedup"]["minhash"] = "%" + bad_sig["_source"]["dedup"]["minhash"][1:]  # usual length
    bad_hex = _usual(91, rng.integers(0, 9, 128).astype(np.uint32), 1)
    bad_hex["_source"]["dedup"]["simhash"] = "xyz"
    wide = _usual(92, rng.integers(0, 9, 128).astype(np.uint32), 1)
    wide["_source"]["dedup"]["simhash"] = "1" * 17
    short_sig = _usual(93, rng.integers(0, 9, 64).astype(np.uint32), 1)
    bad_count = _usual(94, rng.integers(0, 9, 128).astype(np.uint32), 1, chars="many")
    non_ascii = _usual(95, rng.integers(0, 9, 128).astype(np.uint32), 1)
    non_ascii["_source"]["dedup"]["minhash"] = "é" + non_ascii["_source"]["dedup"]["minhash"][1:]
    bads = [bad_sig, bad_hex, wide, short_sig, bad_count, non_ascii]
    for a in bads:
        for b in bads:
            page = [*good[:2], a, *good[2:4], b, *good[4:]]
            got, want = outcome(diversify, page), outcome(reference, page)
            assert isinstance(want, tuple) and got == want


# -- the parts --------------------------------------------------------------------------------------
@pytest.mark.parametrize("perm", [1, 2, 3, 30, 64, 128, 129, 256])
@pytest.mark.parametrize("switch", ["1", "0"])
def test_signatures_decode_as_the_general_reader_decodes_them(perm, switch, monkeypatch):
    monkeypatch.setenv(native.ENV_SWITCH, switch)  # the native core's decoder where it is built, and numpy's
    rng = np.random.default_rng(perm)
    sigs = rng.integers(0, 1 << 16, (20, perm)).astype(np.uint32)
    encoded = [encode_minhash(s) for s in sigs]
    width, padding = b64_form(perm)
    assert all(len(e) == width and e.endswith(padding) for e in encoded)
    got = decode_signatures(encoded, perm)
    assert got.dtype == np.uint32
    assert (got == np.stack([parse_minhash(e, {}, perm) for e in encoded])).all()
    # Non-zero bits under the padding: the general reader ignores them, and so does this.
    if padding:
        tweaked = [e[:width - len(padding) - 1] + "/" + padding for e in encoded]
        assert (decode_signatures(tweaked, perm) == np.stack([parse_minhash(e, {}, perm) for e in tweaked])).all()
    for bad in ("=", "%", "-", "_", " ", "\n"):
        broken = list(encoded)
        broken[7] = bad + broken[7][1:]
        assert decode_signatures(broken, perm) is None
    assert decode_signatures([], perm).shape == (0, perm)


@pytest.mark.parametrize("perm", [1, 7, 8, 64, 128, 255, 256, 300])
@pytest.mark.parametrize("high", [4, 1 << 16, 1 << 32])
def test_equal_positions_count_exactly(perm, high, monkeypatch):
    rng = np.random.default_rng(perm)
    a = rng.integers(0, high, (37, perm), dtype=np.uint64).astype(np.uint32)
    b = np.concatenate([a[:5], rng.integers(0, high, (20, perm), dtype=np.uint64).astype(np.uint32)])
    want = _reference_counts(a, b)
    assert (equal_positions(a, b) == want).all()
    assert (equal_positions(a, a) == _reference_counts(a, a)).all()  # the rows against themselves
    monkeypatch.setattr(measures, "_EQUAL_SLICE", 3 * perm * len(b))  # several slices
    monkeypatch.setenv(native.ENV_SWITCH, "0")
    assert native_kernels.equal_positions(a, b) is None
    assert (equal_positions(a, b) == want).all()
    assert equal_positions(a[:0], b).shape == (0, len(b))
    assert (equal_positions(a, a) == _reference_counts(a, a)).all()


def test_the_native_kernels_are_used_and_check_their_input(extension, switch_on):
    """Skips without the extension (or, with ESDEDUP_REQUIRE_NATIVE=1, as in CI, fails); runs with the core
    switched on whatever ESDEDUP_NATIVE says."""
    a = np.arange(12, dtype=np.uint32).reshape(3, 4)
    assert (native_kernels.equal_positions(a, a) == np.eye(3, dtype=np.uint32) * 4).all()
    with pytest.raises(ValueError, match="not rows of 4 values"):
        native._EXTENSION.equal_positions(b"123", b"", 4, 4)
    with pytest.raises(ValueError, match="the same rows twice"):
        native._EXTENSION.equal_positions(b"1234", b"1235", 1, 4, True)
    assert decode_base64(b"AQID/w==", 8, 4) == bytes([1, 2, 3, 255])
    assert decode_base64(b"AQ=D/w==", 8, 4) is None
    with pytest.raises(ValueError, match="strings of 8 characters"):
        decode_base64(b"AQID/w=", 8, 4)


def test_grid_measures_equal_the_pair_measures():
    """Every measure of every pair of a grid, and so the measure that decided it, as `SketchColumns.measure`
    (the pair-by-pair path of `dups` and `similar`) gives it; cosines come from one matrix product in the grid
    (`grid_cosines`), so only where they are measured is compared, and containment is estimated only for
    thresholds that read it."""
    rng = random.Random(11)
    decided = 0
    for config in CONFIGS:
        for t in [resolve_thresholds(x, config) for x in THRESHOLDS]:
            hits = _page(rng, config, 40, {})
            try:
                page = div._Page.read_fast(hits, config, t, "text") or div._Page.read(hits, config, t, "text")
                page.fingerprint_missing(Fingerprinter(config).fingerprint_many)
                cols = div._Columns(page).sketches
                rows = np.arange(len(page.parts))
                grid = cols.measure_grid(rows, rows, t)
                left, right = np.repeat(rows, len(rows)), np.tile(rows, len(rows))
                pairs = cols.measure(left, right)
            except InputError:  # a bad hit: the tests above compare the errors
                continue
            for name in ("hamming", "jaccard", "containment", "legacy_short"):
                g, p = getattr(grid, name).reshape(-1), getattr(pairs, name)
                if name == "containment" and t.containment is None:  # not read, so not estimated
                    assert np.isnan(g).all()
                    continue
                assert np.array_equal(g, p, equal_nan=True), name
            verdict = grid.decide(t).reshape(-1)
            decided += int(verdict.sum())
            for x in np.flatnonzero(verdict):
                one = [measured(getattr(grid, k).reshape(-1)[x]) for k in ("hamming", "cosine", "jaccard", "containment")]
                two = [measured(getattr(pairs, k)[x]) for k in ("hamming", "jaccard", "containment")]
                assert decided_by(t, hamming=one[0], cosine=one[1], jaccard=one[2], containment=one[3],
                                  legacy_short=bool(grid.legacy_short.reshape(-1)[x])) == \
                    decided_by(t, hamming=two[0], cosine=one[1], jaccard=two[1], containment=two[2],
                               legacy_short=bool(pairs.legacy_short[x]))
    assert decided > 1000  # the premise: plenty of near-duplicate pairs measured


def test_from_parts_builds_the_columns_of():
    config = FingerprintConfig()
    fps = Fingerprinter(config).fingerprint_many(TEXTS[:5])
    a = SketchColumns.of(fps, config)
    sigs = np.stack([f.minhash for f in fps]).astype(np.uint32)
    b = SketchColumns.from_parts(config, simhash=[f.simhash for f in fps], sigs=sigs, signed=np.ones(5, bool),
                                 full=np.ones(5, bool), shingles=[f.shingles for f in fps],
                                 chars=[f.chars for f in fps], has_vector=np.ones(5, bool),
                                 vectors=lambda: np.stack([f.vector for f in fps]).astype(np.float32))
    for name in ("words", "sigs", "shingles", "signed", "full", "banded"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.has_vector is b.has_vector is None
    # Short texts of the default config are not segmented: no SimHash in either form (`gets_terms`).
    assert a.has_simhash is not None and np.array_equal(a.has_simhash, b.has_simhash)
    assert a.has_simhash.tolist() == [config.gets_terms(f.chars) for f in fps]
    assert np.array_equal(a.vector_rows(), b.vector_rows())


@pytest.mark.parametrize("strategy", ["auto", "minhash", "simhash"])
def test_the_list_form_of_gets_simhash_bands_is_the_scalar_form(strategy):
    config = FingerprintConfig(strategy=strategy)
    lengths = [-5, 0, 1, config.short_text_chars - 1, config.short_text_chars, config.short_text_chars + 1, 10**30]
    assert config.gets_simhash_bands_many(lengths) == [config.gets_simhash_bands(c) for c in lengths]
    assert config.gets_simhash_bands_many([]) == []


@pytest.mark.parametrize("t", [x for x in THRESHOLDS if x is not None])
def test_decide_on_pairs_that_all_carry_signatures_is_decide_on_any_pairs(t):
    """`decide` skips the tests of unsigned pairs when every pair is signed: the same verdicts as when one
    unsigned pair beside them makes it compute every branch."""
    rng = np.random.default_rng(4)
    n = 500
    ham = rng.integers(0, 12, n).astype(np.float64)
    ham[::7] = np.nan
    cos = rng.random(n)
    cos[::5] = np.nan
    jac = np.round(rng.random(n), 2)
    cont = np.where(rng.random(n) < 0.3, 0.0, np.round(rng.random(n), 2))
    legacy = rng.random(n) < 0.2
    cluster = rng.random(n) < 0.1
    fast = rule.decide(t, hamming=ham, cosine=cos, jaccard=jac, containment=cont, legacy_short=legacy,
                       same_cluster=cluster)

    def extended(x, value):
        return np.concatenate([x, [value]])

    full = rule.decide(t, hamming=extended(ham, 0.0), cosine=extended(cos, 1.0), jaccard=extended(jac, np.nan),
                       containment=extended(cont, np.nan), legacy_short=extended(legacy, False),
                       same_cluster=extended(cluster, False))
    assert fast.dtype == bool and fast.flags.writeable and np.array_equal(fast, full[:-1])
    assert fast.any() and not fast.all()


# -- the native page ---------------------------------------------------------------------------------
def _near(rng: random.Random, centre: np.ndarray, perm: int) -> np.ndarray:
    """A signature sharing a chosen number of positions with ``centre``: around the Jaccard and containment
    thresholds as often as far from them."""
    sig = centre[:perm].copy()
    keep = round(perm * rng.choice([1.0, 0.99, 0.8, 0.7, 0.67, 0.66, 0.51, 0.5, 0.49, 0.3, 0.2, 0.19, 0.0]))
    for p in rng.sample(range(perm), perm - keep):
        sig[p] = (int(sig[p]) + 1 + rng.randrange(1000)) & 0xFFFF
    return sig


def _plain_page(rng: random.Random, config: FingerprintConfig, n: int) -> list[dict]:
    """A page of hits as an esdedup index returns them (the forms a search gives: ``_source.dedup`` alone,
    beside doc values, `search_diversified`'s mix, ``fields`` alone, dotted keys), most of them each carrying what
    the rule needs, some not (a part missing or odd, an empty text and its exact copies, a vector, a text to
    fingerprint): the native reader reads the first kind of page and hands every other to the general reader."""
    perm, bits = config.minhash_perm, config.bits
    centres = [np.array([rng.randrange(1 << 16) for _ in range(perm)], dtype=np.uint32) for _ in range(3)]
    simhashes = [rng.getrandbits(bits) | 1 for _ in range(3)]
    odd = rng.random() < 0.6  # pages that are plain but for the odd hit
    hits = []
    for i in range(n):
        c = rng.randrange(3)
        s = simhashes[c]
        for _ in range(rng.choice([0, 0, 1, 2, 3, 4, 5, 8, 30])):
            s ^= 1 << rng.randrange(bits)
        d: dict = {"simhash": rng.choice([to_hex(s, bits), to_hex(s, bits).upper(), f"{s:x}", "00" + to_hex(s, bits)]),
                   "minhash": encode_minhash(_near(rng, centres[c], perm)),
                   "shingles": rng.choice([1, 3, 7, 8, 9, 12, 20, 31, 32, 33, 40, 100, 127, 128, 129, 200, 1000]),
                   "chars": rng.choice([3, 10, 150, 199, 200, 500]),
                   "empty": False, "content_sha1": f"s{i}", "tokens": 12, "lsh_keys": ["1", "2"]}
        if rng.random() < 0.3:
            d["cluster_id"] = rng.choice(["c1", "c2", "c3", 7])
        if rng.random() < 0.1:
            del d["empty"]
        if rng.random() < 0.1:
            del d["chars"]
        if odd and rng.random() < 0.1:
            what = rng.choice(["no simhash", "no minhash", "no shingles", "zero shingles", "0x", "str count",
                               "float count", "empty", "empty by simhash", "vector", "text only", "blank",
                               "untouched", "bool empty str", "wide simhash", "short signature"])
            if what == "no simhash":
                del d["simhash"]
            elif what == "no minhash":
                del d["minhash"]
            elif what == "no shingles":
                del d["shingles"]
            elif what == "zero shingles":
                d["shingles"] = 0
            elif what == "0x":
                d["simhash"] = hex(s)
            elif what == "str count":
                d["shingles"] = str(d["shingles"])
            elif what == "float count":
                d["chars"] = 150.0
            elif what in ("empty", "empty by simhash"):
                d = {"empty": True, "content_sha1": rng.choice(["e1", "e1", "e2"]), "simhash": "0" * (bits // 4)}
                if what == "empty by simhash":
                    del d["empty"]
            elif what == "vector":
                d["vector"] = [0.5] * 4
            elif what == "text only":
                d = {}
            elif what == "blank":
                d = {"content_sha1": None}
            elif what == "untouched":
                d = {}
            elif what == "bool empty str":
                d["empty"] = "false"
            elif what == "wide simhash":
                d["simhash"] = "1" + "0" * (bits // 4)
            elif what == "short signature":
                d["minhash"] = encode_minhash(centres[c][: max(1, perm // 2)])
            text = {"text only": rng.choice(TEXTS[:4]), "blank": "  ", "empty": "！？。"}.get(what)
        else:
            text = None
        h: dict = {"_id": f"h{i}", "_score": float(n - i)}
        if rng.random() < 0.9:
            h["_index"] = rng.choice(["news", "news", "archive"])
        source = {"title": f"t{i}", "text": text if text is not None else rng.choice(TEXTS[:4])}
        if text is None and rng.random() < 0.5:
            del source["text"]
        form = rng.choices(["source", "real", "mixed", "fields", "dotted", "late"], weights=[6, 3, 3, 1, 1, 1])[0]
        if form == "source":
            h["_source"] = source | {"dedup": d}
        elif form == "real":  # a plain search with doc values of the SimHash and the empty flag (bench/es.py)
            h["_source"] = source | {"dedup": d}
            h["fields"] = {f"dedup.{k}": [d[k]] for k in ("simhash", "empty") if k in d}
        elif form == "mixed":  # search_diversified: the signature in _source, the small parts as doc values
            h["_source"] = source | {"dedup": {k: v for k, v in d.items() if k == "minhash"}}
            h["fields"] = {f"dedup.{k}": [v] for k, v in d.items() if k != "minhash"}
        elif form == "fields":
            h["_source"] = source
            h["fields"] = {f"dedup.{k}": [v] for k, v in d.items()}
        elif form == "dotted":
            h["_source"] = source | {f"dedup.{k}": v for k, v in d.items()}
        else:  # a part only in fields, where _source has it None; and an empty fields list
            h["_source"] = source | {"dedup": d | {"simhash": None}}
            h["fields"] = {"dedup.simhash": [d["simhash"]] if "simhash" in d else [], "dedup.chars": []}
        hits.append(h)
    return hits


PLAIN_CONFIGS = CONFIGS + [FingerprintConfig(bits=128, strategy="simhash"), FingerprintConfig(strategy="minhash", bits=128)]


def _plain_pages(seed: int, count: int):
    rng = random.Random(100 + seed)
    for _ in range(count):
        config = rng.choice(PLAIN_CONFIGS)
        yield config, rng.sample(THRESHOLDS, 3), _plain_page(rng, config, rng.choice([0, 1, 2, 3, 10, 50, 100, 100]))


@pytest.mark.parametrize("seed", range(6))
def test_plain_pages_give_the_reference_answers(seed, fingerprinters):
    """With the native page (`_group_natively`) where the extension is in use: the reference's hits on pages
    of every form, whether the native core read them or handed them back."""
    for config, thresholds, hits in _plain_pages(seed, 30):
        fp = fingerprinters.get(config.to_json()) or fingerprinters.setdefault(config.to_json(), Fingerprinter(config))
        for t in thresholds:
            for mode in MODES:
                kwargs = {"mode": mode, "config": config, "thresholds": t, "fingerprinter": fp}
                assert outcome(diversify, hits, **kwargs) == outcome(reference, hits, **kwargs), (config, t, mode)


def test_the_plain_pages_exercise_the_native_page(extension, switch_on):
    """The premise of the test above: with the extension, the native core reads most of its pages, of every
    config, and hands back others; and they hold near-duplicates and representatives (skips without it; runs whatever ESDEDUP_NATIVE says)."""
    read: dict[str, int] = {}
    back = dups = kept = 0
    for seed in range(6):
        for config, thresholds, hits in _plain_pages(seed, 30):
            got = div._group_natively(hits, config, resolve_thresholds(thresholds[0], config))
            if got is None:
                back += 1
                continue
            read[config.to_json()] = read.get(config.to_json(), 0) + 1
            dups += sum(r >= 0 for r in got)
            kept += sum(r < 0 for r in got)
    assert len(read) == len(PLAIN_CONFIGS) and sum(read.values()) > 60 and back > 20 and dups > 500 and kept > 500


def test_the_native_page_is_read_and_checks_its_input(extension, switch_on):
    """A plain page goes the native way with the extension (skips without it, as above); the kernel refuses
    a signature layout it does not read."""
    config = FingerprintConfig()
    rng = np.random.default_rng(2)
    sig = rng.integers(0, 1 << 16, 128).astype(np.uint32)
    page = [_usual(0, sig, 1), _usual(1, sig, 3), _usual(2, rng.integers(0, 1 << 16, 128).astype(np.uint32), 1)]
    t = resolve_thresholds(None, config)
    assert div._group_natively(page, config, t) == [-1, 0, -1]
    assert div._group_natively(tuple(page), config, t) == [-1, 0, -1]
    page[2]["fields"] = {"dedup.vector": [[1.0, 2.0]]}
    assert div._group_natively(page, config, t) is None
    with pytest.raises(ValueError, match="signature values"):
        native._EXTENSION.diversify_page([], 128, 344, 255, 64, True, 0.5, None, 3, False, 8.0, 4.0)


def test_a_page_of_stored_signatures_is_decoded_at_once_where_each_has_the_configs_form() -> None:
    """The Elasticsearch store's read of its signature columns (`scans._page_signatures`): the strings of the
    config's base64 form decoded in one step, each hit pointed at its row; any other value left to
    `parse_minhash` (-1); a page holding a string of that form that is no base64 read hit by hit."""
    from esdedup.store.elastic.scans import _page_signatures

    perm = 16
    rng = np.random.default_rng(2)
    sigs = rng.integers(0, 1 << 16, (4, perm)).astype(np.uint32)
    good = [encode_minhash(s) for s in sigs]
    parts = [{"minhash": good[0]}, {"minhash": None}, {"minhash": good[1]}, {"minhash": encode_minhash(sigs[2][:8])},
             {"minhash": ""}, {"minhash": good[3]}]
    decoded, at = _page_signatures(parts, perm)
    assert at == [0, -1, 1, -1, -1, 2]
    assert np.array_equal(decoded, sigs[[0, 1, 3]]) and decoded.dtype == np.uint32
    width, padding = b64_form(perm)
    broken = [*parts, {"minhash": "!" * (width - len(padding)) + padding}]
    decoded, at = _page_signatures(broken, perm)
    assert at == [-1] * len(broken) and decoded.shape == (0, perm)
    with pytest.raises(InputError, match="not a base64 MinHash"):
        parse_minhash(broken[-1]["minhash"], {})
