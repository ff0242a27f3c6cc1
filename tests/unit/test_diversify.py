"""Tests of `esdedup.search.diversify.diversify` (pure: hit dicts in, new hit dicts out)."""
from __future__ import annotations

import copy
import dataclasses
import importlib
import math
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from esdedup.errors import ConfigError, InputError
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprinter
from esdedup.fingerprint.simhash import hamming, to_hex
from esdedup.match.measures import measure, minhash_estimates
from esdedup.match.rule import is_duplicate
from esdedup.match.similarity import vector_cosine
from esdedup.match.thresholds import Thresholds
from esdedup.schema import dedup_source, encode_minhash
from esdedup.search.diversify import MODES, diversify


def T(hamming_k, cosine):  # noqa: N802 - reads like the old keyword pair
    """Thresholds with the n-gram tests off: the hits of these tests carry SimHashes and vectors only."""
    return Thresholds(hamming_k, cosine)

# The module itself: the package exports the function under the same name, so `esdedup.search.diversify` as an
# attribute is the function.
div = importlib.import_module("esdedup.search.diversify")
measures = importlib.import_module("esdedup.match.measures")

BASE = 0x0123_4567_89AB_CDEF


def flip(value: int, *positions: int) -> int:
    for p in positions:
        value ^= 1 << p
    return value


def hit(_id: str, sh: int | str | None = None, vec=None, *, empty=None, text=None, style: str = "source",
        bits: int = 64) -> dict:
    """A search hit carrying its fingerprint in ``_source.dedup`` or in ``fields`` (docvalue style)."""
    h: dict = {"_index": "news", "_id": _id, "_score": 1.0}
    hexsh = to_hex(sh, bits) if isinstance(sh, int) else sh
    if style == "source":
        d = {}
        if hexsh is not None:
            d["simhash"] = hexsh
        if vec is not None:
            d["vector"] = [float(x) for x in vec]
        if empty is not None:
            d["empty"] = empty
        src: dict = {"title": f"title {_id}"}
        if d:
            src["dedup"] = d
        if text is not None:
            src["text"] = text
        h["_source"] = src
    else:
        f = {}
        if hexsh is not None:
            f["dedup.simhash"] = [hexsh]
        if vec is not None:
            f["dedup.vector"] = [float(x) for x in vec]
        if empty is not None:
            f["dedup.empty"] = [empty]
        if text is not None:
            f["text"] = [text]
        h["fields"] = f
    return h


def ids(hits: list[dict]) -> list[str]:
    return [h["_id"] for h in hits]


def unit(*xs: float, dims: int = 8) -> list[float]:
    v = np.zeros(dims)
    v[: len(xs)] = xs
    return list(v / np.linalg.norm(v))


@pytest.fixture
def planted() -> list[dict]:
    """a, b~a, c, d~c, e~a (distances 2, 3, 1 bits from their representative)."""
    c = BASE ^ 0xFFFF_FFFF_0000_0000
    return [hit("a", BASE), hit("b", flip(BASE, 1, 40)), hit("c", c), hit("d", flip(c, 7, 8, 9)),
            hit("e", flip(BASE, 63))]


@pytest.fixture(scope="module")
def fingerprinter() -> Fingerprinter:
    return Fingerprinter(FingerprintConfig())


# Real-ish Chinese texts: (A, A') differ by two words, (C, C') by a dropped clause.
TEXT_A = ("国家统计局今天发布数据显示，今年前三季度国内生产总值同比增长百分之五点二，消费对经济增长的贡献率"
          "持续提高。专家表示，随着一系列稳增长政策落地见效，经济运行总体回升向好，就业和物价保持基本稳定。")
TEXT_A2 = ("国家统计局今日发布数据显示，今年前三季度国内生产总值同比增长百分之五点二，消费对经济增长的贡献率"
           "持续提高。专家认为，随着一系列稳增长政策落地见效，经济运行总体回升向好，就业和物价保持基本稳定。")
TEXT_C = ("气象台发布暴雨黄色预警，预计未来二十四小时本市东部地区将出现大到暴雨，局地伴有雷电和短时强降水，"
          "请市民注意出行安全，相关部门做好防汛准备。")
TEXT_E = "足球联赛第二十轮比赛昨晚结束，主队凭借下半场的两个进球以二比一逆转客队，继续领跑积分榜。"


# -- the three modes -------------------------------------------------------------------------------
def test_drop_keeps_the_first_hit_of_each_group(planted):
    assert ids(diversify(planted)) == ["a", "c"]
    assert ids(diversify(planted, mode="drop", thresholds=T(1, None))) == ["a", "b", "c", "d"]


def test_demote_puts_duplicates_last_with_their_representative(planted):
    out = diversify(planted, mode="demote")
    assert ids(out) == ["a", "c", "b", "d", "e"]
    assert [h.get("_duplicate_of") for h in out] == [None, None, "a", "c", "a"]
    assert "_duplicate_of" not in out[0] and "_duplicate_of" not in out[1]


def test_group_nests_the_duplicates_under_their_representative(planted):
    out = diversify(planted, mode="group")
    assert ids(out) == ["a", "c"]
    assert [ids(h["_duplicates"]) for h in out] == [["b", "e"], ["d"]]
    # The nested hits are copies of the inputs, without the group keys.
    assert out[0]["_duplicates"][0] == planted[1] and out[0]["_duplicates"][0] is not planted[1]
    assert all("_duplicates" not in d for h in out for d in h["_duplicates"])


def test_group_gives_singletons_an_empty_list():
    out = diversify([hit("a", BASE), hit("b", ~BASE & (2**64 - 1))], mode="group")
    assert [h["_duplicates"] for h in out] == [[], []]


def test_greedy_compares_with_representatives_only():
    # b is within 3 bits of a; c is within 3 bits of b but 6 from a: b is not a representative, so c stays.
    a, b = BASE, flip(BASE, 0, 1, 2)
    c = flip(b, 10, 11, 12)
    assert hamming(a, c) == 6
    out = diversify([hit("a", a), hit("b", b), hit("c", c)], mode="demote")
    assert ids(out) == ["a", "c", "b"]
    assert out[2]["_duplicate_of"] == "a"


def test_a_hit_joins_the_first_representative_it_matches():
    a, b = BASE, flip(BASE, 0, 1, 2, 3)  # 4 apart: two representatives at k=3
    c = flip(BASE, 0, 1)  # 2 from a, 2 from b
    out = diversify([hit("a", a), hit("b", b), hit("c", c)], mode="group")
    assert [ids(h["_duplicates"]) for h in out] == [["c"], []]
    out = diversify([hit("b", b), hit("a", a), hit("c", c)], mode="group")
    assert [ids(h["_duplicates"]) for h in out] == [["c"], []] and ids(out) == ["b", "a"]


def test_unknown_order_of_ranks_is_kept_stable():
    rng = random.Random(3)
    hits = [hit(f"h{i}", rng.getrandbits(64)) for i in range(60)]  # random 64-bit values: no pair within 3
    for mode in MODES:
        assert ids(diversify(hits, mode=mode)) == ids(hits)


# -- where fingerprints come from --------------------------------------------------------------------
def test_fields_and_source_give_the_same_result(planted):
    as_fields = [hit(h["_id"], h["_source"]["dedup"]["simhash"], style="fields") for h in planted]
    mixed = [planted[0], as_fields[1], planted[2], as_fields[3], as_fields[4]]
    for hits in (as_fields, mixed):
        out = diversify(hits, mode="demote")
        assert ids(out) == ["a", "c", "b", "d", "e"]
        assert [h.get("_duplicate_of") for h in out] == [None, None, "a", "c", "a"]


def test_vectors_are_read_from_fields_too():
    v, w = unit(1, 0.2), unit(1, 0.25)
    far = flip(BASE, *range(0, 64, 2))
    for style in ("source", "fields"):
        hits = [hit("a", BASE, v, style=style), hit("b", far, w, style=style)]
        assert ids(diversify(hits, thresholds=T(None, 0.99))) == ["a"]
    # A dense_vector can also come back wrapped in one more list.
    hits = [hit("a", BASE, v, style="fields"), hit("b", far, style="fields")]
    hits[1]["fields"]["dedup.vector"] = [w]
    assert ids(diversify(hits, thresholds=T(None, 0.99))) == ["a"]


def test_dotted_source_keys_are_read():
    hits = [hit("a", BASE), {"_id": "b", "_source": {"dedup.simhash": to_hex(flip(BASE, 5))}}]
    assert ids(diversify(hits)) == ["a"]


def test_hit_without_fingerprint_is_fingerprinted_from_its_text(fingerprinter):
    cfg = fingerprinter.config
    fa, fe = fingerprinter.fingerprint_many([TEXT_A, TEXT_E])
    hits = [
        {"_id": "a", "_source": {"text": TEXT_A, "dedup": dedup_source(fa, cfg)}},
        {"_id": "e", "_source": {"text": TEXT_E, "dedup": dedup_source(fe, cfg)}},
        {"_id": "a-again", "_source": {"text": TEXT_A + "  "}},  # no dedup: fingerprinted here
        {"_id": "c", "_source": {"text": TEXT_C}},  # no dedup, unlike the others
    ]
    out = diversify(hits, mode="demote", fingerprinter=fingerprinter)
    assert ids(out) == ["a", "e", "c", "a-again"]
    assert out[-1]["_duplicate_of"] == "a"
    # text_field names the field; from `fields` as well.
    hits2 = [hits[0], {"_id": "x", "fields": {"body": [TEXT_A]}}]
    assert ids(diversify(hits2, fingerprinter=fingerprinter, text_field="body")) == ["a"]
    assert ids(diversify(hits2, fingerprinter=fingerprinter)) == ["a", "x"]  # no "text": untouched


def test_a_text_only_hit_keeps_its_rank(fingerprinter):
    fa = fingerprinter.fingerprint(TEXT_A)
    hits = [{"_id": "text-only", "_source": {"text": TEXT_A}},
            {"_id": "stored", "_source": {"dedup": dedup_source(fa, fingerprinter.config)}},
            {"_id": "c", "_source": {"text": TEXT_C}}]
    out = diversify(hits, mode="demote", fingerprinter=fingerprinter)
    assert ids(out) == ["text-only", "c", "stored"]
    assert out[-1]["_duplicate_of"] == "text-only"


def test_the_given_fingerprinter_is_used_once_per_call(fingerprinter):
    calls = []

    class Counting(Fingerprinter):
        def fingerprint_many(self, texts):
            calls.append(list(texts))
            return super().fingerprint_many(texts)

    counting = Counting(fingerprinter.config, fingerprinter.resources)
    hits = [{"_id": "1", "_source": {"text": TEXT_A}}, {"_id": "2", "_source": {"text": TEXT_A + "。"}},
            {"_id": "3", "_source": {"text": TEXT_C}}]
    assert ids(diversify(hits, fingerprinter=counting)) == ["1", "3"]
    assert calls == [[TEXT_A, TEXT_A + "。", TEXT_C]]


def test_no_default_fingerprinter_is_made_unless_needed(planted, monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("a default Fingerprinter was created")

    monkeypatch.setattr(div, "Fingerprinter", boom)
    monkeypatch.setattr(div, "_default_fingerprinters", {})
    bare = {"_id": "bare", "_source": {"title": "no text"}}
    blank = {"_id": "blank", "_source": {"text": "  \n "}}
    assert ids(diversify([*planted, bare, blank])) == ["a", "c", "bare", "blank"]


def test_default_fingerprinter_is_created_lazily_and_reused(fingerprinter, monkeypatch):
    made = []

    def factory(config=None):
        made.append(config)
        return fingerprinter

    monkeypatch.setattr(div, "Fingerprinter", factory)
    monkeypatch.setattr(div, "_default_fingerprinters", {})
    hits = [{"_id": "1", "_source": {"text": TEXT_A}}, {"_id": "2", "_source": {"text": TEXT_A}}]
    assert ids(diversify(hits)) == ["1"]
    assert ids(diversify(hits, mode="demote")) == ["1", "2"]
    assert len(made) == 1 and made[0].bits == 64


def test_hit_with_neither_fingerprint_nor_text_is_kept_untouched_in_place(planted):
    bare = {"_id": "bare", "_source": {"title": "only a title"}, "_score": 0.5}
    nothing = {"_id": "nothing"}
    hits = [planted[0], bare, planted[1], nothing, planted[2], planted[3]]
    assert ids(diversify(hits)) == ["a", "bare", "nothing", "c"]
    assert ids(diversify(hits, mode="demote")) == ["a", "bare", "nothing", "c", "b", "d"]
    out = diversify(hits, mode="group")
    assert ids(out) == ["a", "bare", "nothing", "c"]
    assert out[1] == bare and out[2] == nothing  # no _duplicates key, nothing else added
    assert ids(out[0]["_duplicates"]) == ["b"]


def test_real_texts_cosine_finds_what_a_tight_hamming_misses():
    cfg = FingerprintConfig(strategy="simhash")  # SimHash and vectors only: the two tests decide every pair
    fps = Fingerprinter(cfg).fingerprint_many([TEXT_A, TEXT_C, TEXT_A2, TEXT_E])
    d = hamming(fps[0].simhash, fps[2].simhash)
    cos = vector_cosine(fps[0].vector, fps[2].vector)
    assert d > 3 and cos > 0.9  # the premise: a short text's two-word edit moves several bits
    hits = [{"_id": i, "_source": {"dedup": dedup_source(fp, cfg)}} for i, fp in zip("ACXE", fps, strict=True)]
    assert ids(diversify(hits, config=cfg, thresholds=T(3, None))) == ["A", "C", "X", "E"]
    assert ids(diversify(hits, config=cfg, thresholds=T(None, 0.9))) == ["A", "C", "E"]
    assert ids(diversify(hits, config=cfg, thresholds=T(d, 0.9))) == ["A", "C", "E"]
    assert ids(diversify(hits, config=cfg, thresholds=T(d - 1, 0.9))) == ["A", "C", "X", "E"]
    assert ids(diversify(hits, config=cfg, thresholds=T(d, None))) == ["A", "C", "E"]


def test_by_default_the_index_rule_decides_like_dups(fingerprinter):
    """Hits with MinHash signatures (the default config) are judged on their n-gram estimates: the two-word
    edit, 8 SimHash bits away when segmented, is the near-duplicate `dups` reports too, and a tight Hamming
    test cannot override that (the n-gram test decides such pairs)."""
    cfg = fingerprinter.config
    fps = fingerprinter.fingerprint_many([TEXT_A, TEXT_C, TEXT_A2, TEXT_E])
    segmented = Fingerprinter(cfg.replace(short_text_chars=0)).fingerprint_many([TEXT_A, TEXT_A2])
    assert hamming(segmented[0].simhash, segmented[1].simhash) > 3
    hits = [{"_id": i, "_source": {"dedup": dedup_source(fp, cfg)}} for i, fp in zip("ACXE", fps, strict=True)]
    assert ids(diversify(hits)) == ["A", "C", "E"]
    assert ids(diversify(hits, thresholds=Thresholds(3, None, jaccard=0.99))) == ["A", "C", "X", "E"]


def test_a_shared_cluster_id_makes_hits_duplicates_whatever_their_measures():
    far = flip(BASE, *range(0, 64, 2))
    hits = [hit("a", BASE), hit("b", far)]
    assert ids(diversify(hits)) == ["a", "b"]
    for h in hits:
        h["_source"]["dedup"]["cluster_id"] = "a"
    assert ids(diversify(hits)) == ["a"]
    as_fields = [{"_id": "a", "fields": {"dedup.cluster_id": ["x"]}}, {"_id": "b", "fields": {"dedup.cluster_id": ["x"]}},
                 {"_id": "c", "fields": {"dedup.cluster_id": ["y"]}}]
    assert ids(diversify(as_fields)) == ["a", "c"]


# -- the two tests ---------------------------------------------------------------------------------
@pytest.fixture
def trio() -> list[dict]:
    """b: close SimHash, orthogonal vector; c: far SimHash, similar vector; d: close in both."""
    v = unit(1, 0.1)
    return [
        hit("a", BASE, v),
        hit("b", flip(BASE, 3, 4), unit(0, 0, 1)),
        hit("c", flip(BASE, *range(0, 64, 3)), unit(1, 0.15)),
        hit("d", flip(BASE, 60), unit(1, 0.12)),
    ]


def test_hamming_only(trio):
    assert ids(diversify(trio, thresholds=T(3, None))) == ["a", "c"]


def test_cosine_only(trio):
    assert ids(diversify(trio, thresholds=T(None, 0.95))) == ["a", "b"]


def test_both_tests_must_hold(trio):
    assert ids(diversify(trio, thresholds=T(3, 0.95))) == ["a", "b", "c"]


def test_cosine_threshold_is_inclusive_for_identical_vectors():
    # A stored vector (6 decimals) whose float32 self-cosine rounds to 0.99999994, not 1.
    v = [-0.150231, 0.178764, -0.163886, 0.477643, 0.120859, -0.163114, -0.668595, -0.449711]
    u = np.asarray(v, dtype=np.float32) / np.linalg.norm(np.asarray(v, dtype=np.float32))
    assert float(u @ u) < 1.0  # the premise
    hits = [hit("a", BASE, v), hit("b", ~BASE & (2**64 - 1), v)]
    assert ids(diversify(hits, thresholds=T(None, 1.0))) == ["a"]


def test_hamming_threshold_is_inclusive():
    hits = [hit("a", BASE), hit("b", flip(BASE, 1, 2, 3))]
    assert ids(diversify(hits, thresholds=T(3, None))) == ["a"]
    assert ids(diversify(hits, thresholds=T(2, None))) == ["a", "b"]


def test_without_a_vector_hamming_alone_decides(trio):
    no_vec = hit("n", flip(BASE, 20))  # close to a, no vector
    hits = [*trio, no_vec]
    assert ids(diversify(hits, thresholds=T(3, 0.95))) == ["a", "b", "c"]
    # ...and as the first hit it still represents a group for the hits it is close to.
    assert ids(diversify([no_vec, *trio], thresholds=T(3, 0.95))) == ["n", "c"]
    # With cosine only it cannot be compared: kept, in place, not grouped.
    out = diversify(hits, mode="group", thresholds=T(None, 0.95))
    assert ids(out) == ["a", "b", "n"] and "_duplicates" not in out[2]


def test_without_a_simhash_cosine_alone_decides_when_both_are_given():
    v = unit(1, 0.1)
    hits = [hit("a", BASE, v), {"_id": "b", "fields": {"dedup.vector": unit(1, 0.11)}}]
    assert ids(diversify(hits, thresholds=T(3, 0.95))) == ["a"]
    assert ids(diversify(hits, thresholds=T(3, None))) == ["a", "b"]  # hamming only: b not comparable


# -- empty texts -----------------------------------------------------------------------------------
def test_empty_texts_are_never_duplicates():
    hits = [hit("e1", 0, empty=True), hit("e2", 0, empty=True), hit("a", 1), hit("e3", 0, empty=True, style="fields")]
    assert ids(diversify(hits)) == ["e1", "e2", "a", "e3"]
    out = diversify(hits, mode="group")
    assert [h["_duplicates"] for h in out] == [[], [], [], []]


def test_zero_simhash_without_the_flag_counts_as_empty():
    hits = [hit("e1", 0), hit("e2", 0), hit("a", flip(0, 2))]
    assert ids(diversify(hits)) == ["e1", "e2", "a"]
    # ...but an explicit flag wins.
    hits = [hit("z1", 0, empty=False), hit("z2", 0, empty=False)]
    assert ids(diversify(hits)) == ["z1"]


def test_empty_text_fingerprinted_here_is_not_a_duplicate(fingerprinter):
    hits = [{"_id": "p1", "_source": {"text": "，。！"}}, {"_id": "p2", "_source": {"text": "……"}},
            {"_id": "b", "_source": {"text": ""}}]
    assert fingerprinter.fingerprint("，。！").empty  # the premise
    assert ids(diversify(hits, fingerprinter=fingerprinter)) == ["p1", "p2", "b"]


# -- no side effects, copies -----------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_input_is_not_mutated_and_outputs_are_new_dicts(planted, trio, mode):
    hits = [*planted, {"_id": "bare"}, *trio]
    before = copy.deepcopy(hits)
    out = diversify(hits, mode=mode, thresholds=T(3, 0.9))
    assert hits == before
    originals = {id(h) for h in hits}
    assert all(id(h) not in originals for h in out)
    for h in out:
        for d in h.get("_duplicates", []):
            assert id(d) not in originals
    out[0]["_id"] = "changed"
    assert hits[0]["_id"] == "a"


def test_empty_input():
    for mode in MODES:
        assert diversify([], mode=mode) == []


# -- 128 bits and a reference model ------------------------------------------------------------------
def test_128_bit_fingerprints():
    a = (BASE << 64) | BASE
    hits = [hit("a", a, bits=128), hit("b", flip(a, 70, 100), bits=128), hit("c", flip(a, 1, 65, 90, 127), bits=128)]
    assert ids(diversify(hits, config=FingerprintConfig(bits=128))) == ["a", "c"]
    with pytest.raises(InputError, match="wider than 64 bits"):
        diversify(hits)


def reference(hits, hamming_k, cosine, bits=64):
    """A plain pair-by-pair version of the rule (hits with both parts; no empties)."""
    reps: list[int] = []
    rep_of = {}
    fps = []
    for h in hits:
        d = h["_source"]["dedup"]
        fps.append((int(d["simhash"], 16), np.asarray(d["vector"]) if "vector" in d else None))
    for i, (s, v) in enumerate(fps):
        for r in reps:
            rs, rv = fps[r]
            tests = []
            if hamming_k is not None:
                tests.append(hamming(s, rs) <= hamming_k)
            if cosine is not None and v is not None and rv is not None:
                tests.append(vector_cosine(v, rv) >= cosine - 1e-6)
            if tests and all(tests):
                rep_of[i] = r
                break
        else:
            reps.append(i)
    return rep_of


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("hamming_k", "cosine"), [(3, None), (None, 0.8), (4, 0.8)])
def test_matches_a_pair_by_pair_reference(seed, hamming_k, cosine, monkeypatch):
    rng = np.random.default_rng(seed)
    bits = 128 if seed % 2 else 64
    centers = [int(x) for x in rng.integers(0, 2**63, 12)]
    if bits == 128:
        centers = [c << 64 | int(rng.integers(0, 2**63)) for c in centers]
    cvec = rng.normal(size=(12, 16))
    hits = []
    for i in range(150):
        c = int(rng.integers(0, 12))
        s = flip(centers[c], *rng.choice(bits, size=int(rng.integers(0, 6)), replace=False).tolist())
        v = cvec[c] + rng.normal(scale=float(rng.choice([0.1, 0.6])), size=16)
        hits.append(hit(f"h{i}", s, v / np.linalg.norm(v) if rng.random() > 0.1 else None, bits=bits))
    expected = reference(hits, hamming_k, cosine, bits)
    assert 10 < len(expected) < 140  # the premise: plenty of duplicates and of representatives
    # Small blocks and small matrix-product slices force the multi-block paths too.
    for block in (1 << 20, 1):
        monkeypatch.setattr(div, "_BLOCK_ELEMENTS", block)
        monkeypatch.setattr(measures, "_GEMM_SLICE", 1000)
        out = diversify(hits, mode="demote", thresholds=T(hamming_k, cosine), config=FingerprintConfig(bits=bits))
        got = {int(h["_id"][1:]): int(h["_duplicate_of"][1:]) for h in out if "_duplicate_of" in h}
        assert got == expected
        n_reps = len(hits) - len(expected)
        assert [int(x[1:]) for x in ids(out[:n_reps])] == sorted(set(range(len(hits))) - set(expected))


def test_a_short_signed_hit_and_a_short_unsigned_one_are_judged_on_simhash_and_cosine():
    """Rule 2 (the cosine alone) is for two short texts without signatures; a short text with a signature
    and a short one without (a document written by an older esdedup, returned without its text) fall under
    rule 3, as `measure` has them for `similar` and `dups`: here the Hamming test fails, so they are not
    near-duplicates, though their vectors are identical. (Two short texts not both signed are not legacy
    pairs for rule 2: only two unsigned ones are.) The config stores vectors, so short texts are segmented
    and carry a SimHash (`FingerprintConfig.gets_terms`)."""
    config = FingerprintConfig(vector_index="int8_flat")
    signed = Fingerprinter(config).fingerprint("今天天气很好，适合出门散步。")
    unsigned = Fingerprinter(FingerprintConfig(strategy="simhash")).fingerprint("今天天气很好，适合出门。")
    assert signed.minhash is not None and signed.shingles and unsigned.minhash is None
    assert not config.gets_simhash_bands(signed.chars) and not config.gets_simhash_bands(unsigned.chars)
    far = signed.simhash ^ 0xFFFF_0000_0000_0000
    t = T(3, 0.9)
    sketches = [{"simhash": to_hex(signed.simhash), "vector": [1.0, 0.0], "chars": signed.chars,
                 "minhash": encode_minhash(signed.minhash), "shingles": signed.shingles, "empty": False},
                {"simhash": to_hex(far), "vector": [1.0, 0.0], "chars": unsigned.chars, "empty": False}]
    hits = [{"_id": str(i), "_source": {"dedup": d}} for i, d in enumerate(sketches)]
    assert ids(diversify(hits, thresholds=t, config=config)) == ["0", "1"]
    same_vector = np.array([1.0, 0.0], dtype=np.float32)
    a = dataclasses.replace(signed, vector=same_vector)
    b = dataclasses.replace(unsigned, vector=same_vector, simhash=far)
    m = measure(a, [b], config)
    assert not m.ngram[0] and not m.decide(t)[0]
    # Both unsigned (the legacy rule): the identical vectors decide.
    del sketches[0]["minhash"]
    assert ids(diversify(hits, thresholds=t, config=config)) == ["0"]


# Sketches of a page of hits for `test_grid_verdicts_equal_the_rule_pair_by_pair`: a few centres, each
# part of a hit drawn near one of them or missing.
_RNG = np.random.default_rng(3)
_SIMHASHES = [int(x) | 1 for x in _RNG.integers(1, 2**63, 3)]
_VECTORS = _RNG.normal(size=(3, 8))
_NOISE = _RNG.normal(size=(6, 8)) * np.array([0.0, 0.05, 0.1, 0.2, 0.4, 0.8])[:, None]
_SIGNATURES = _RNG.integers(0, 2**16, size=(2, 128))
_sketch = st.fixed_dictionaries({
    "simhash": st.one_of(st.none(), st.tuples(st.integers(0, 2), st.lists(st.integers(1, 63), max_size=6))),
    "vector": st.one_of(st.none(), st.tuples(st.integers(0, 2), st.integers(0, 5))),
    "minhash": st.one_of(st.none(), st.tuples(st.integers(0, 1), st.integers(0, 128), st.integers(1, 3))),
    "shingles": st.integers(1, 60),
    "chars": st.sampled_from([None, 3, 150, 199, 200, 500]),
    "cluster_id": st.sampled_from([None, None, "x", "y"]),
})
_THRESHOLDS = [Thresholds(3, None), Thresholds(None, 0.9), Thresholds(4, 0.8), Thresholds(3, 0.9, jaccard=0.5),
               Thresholds(None, 0.85, jaccard=0.6, containment=0.7), Thresholds(5, None, containment=0.5)]


def _drawn(d: dict) -> dict:
    """A drawn sketch in the reference's form: Python values, None where missing."""
    out = {"chars": d["chars"], "cluster_id": d["cluster_id"], "shingles": d["shingles"]}
    out["simhash"] = None if d["simhash"] is None else flip(_SIMHASHES[d["simhash"][0]], *set(d["simhash"][1]))
    out["vector"] = None if d["vector"] is None else _VECTORS[d["vector"][0]] + _NOISE[d["vector"][1]]
    if d["minhash"] is None:
        out["minhash"] = None
    else:
        centre, edits, salt = d["minhash"]
        sig = _SIGNATURES[centre].copy()
        sig[:edits] = (sig[:edits] + salt) % 2**16
        out["minhash"] = sig.astype(np.uint32)
    return out


def _rule_says(a: dict, b: dict, t: Thresholds, config: FingerprintConfig) -> bool:
    """The rule for one pair, from the module docstring of `esdedup.match.rule`, with `is_duplicate`."""
    if a["cluster_id"] is not None and a["cluster_id"] == b["cluster_id"]:
        return True
    def simhashed(x):  # a text that is not segmented has no SimHash (its 0 is none: `gets_terms`)
        return x["simhash"] is not None and (x["chars"] is None or config.gets_terms(x["chars"]))

    ham = hamming(a["simhash"], b["simhash"]) if simhashed(a) and simhashed(b) else None
    cos = None
    if a["vector"] is not None and b["vector"] is not None:
        cos = min(1.0, max(0.0, vector_cosine(a["vector"], b["vector"])))
    signed_a, signed_b = a["minhash"] is not None, b["minhash"] is not None
    jac = cont = None
    if signed_a and signed_b:
        js, cs = minhash_estimates(a["minhash"], a["shingles"], b["minhash"][None, :], np.array([b["shingles"]]))
        jac, cont = float(js[0]), float(cs[0])

    def short(x):
        return x["chars"] is not None and not config.gets_simhash_bands(x["chars"])

    ngram = (signed_a and signed_b) or (not signed_a and not signed_b and short(a) and short(b))
    return is_duplicate(ham, cos, t, ngram, jaccard=jac, containment=cont)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(page=st.lists(_sketch, min_size=2, max_size=12), t=st.sampled_from(_THRESHOLDS),
       strategy=st.sampled_from(["auto", "minhash", "simhash"]))
def test_grid_verdicts_equal_the_rule_pair_by_pair(page, t, strategy):
    """diversify measures its pages as grids (`SketchColumns.measure_grid`); on hits that may lack any part
    of their sketch, its groups must be those of a greedy pass that asks the rule one pair at a time."""
    config = FingerprintConfig(strategy=strategy)
    drawn = [_drawn(d) for d in page]
    hits = []
    for i, d in enumerate(drawn):
        dedup: dict = {"empty": False, "chars": d["chars"], "cluster_id": d["cluster_id"]}
        if d["simhash"] is not None:
            dedup["simhash"] = to_hex(d["simhash"])
        if d["vector"] is not None:
            dedup["vector"] = [float(x) for x in d["vector"]]
        if d["minhash"] is not None:
            dedup["minhash"], dedup["shingles"] = encode_minhash(d["minhash"]), d["shingles"]
        hits.append({"_id": str(i), "_source": {"dedup": {k: v for k, v in dedup.items() if v is not None}}})
    expected: dict[int, int] = {}
    reps: list[int] = []
    for i, d in enumerate(drawn):
        r = next((r for r in reps if _rule_says(d, drawn[r], t, config)), None)
        if r is None:
            reps.append(i)
        else:
            expected[i] = r
    for block in (1 << 20, 1):  # one block, and one block a hit
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(div, "_BLOCK_ELEMENTS", block)
            out = diversify(hits, mode="demote", thresholds=t, config=config)
        assert {int(h["_id"]): int(h["_duplicate_of"]) for h in out if "_duplicate_of" in h} == expected


# -- errors ----------------------------------------------------------------------------------------
def test_unknown_mode_names_the_allowed_ones(planted):
    with pytest.raises(ValueError, match="'drop', 'demote', 'group'.*'collapse'"):
        diversify(planted, mode="collapse")


def test_both_tests_none_is_an_error():
    with pytest.raises(ConfigError, match="Hamming distance, a cosine threshold, or both"):
        T(None, None)


@pytest.mark.parametrize("kwargs", [{"hamming_k": -1}, {"hamming_k": 129}, {"hamming_k": 2.5},
                                    {"hamming_k": True}, {"cosine": 0.0}, {"cosine": 1.5},
                                    {"cosine": math.nan}, {"cosine": "0.9"}])
def test_bad_thresholds_are_errors(kwargs):
    with pytest.raises(ConfigError, match=next(iter(kwargs))):
        Thresholds(**{"hamming_k": 3, **kwargs})


def test_bad_config_is_an_error(planted):
    with pytest.raises(ConfigError, match="bits"):
        diversify(planted, config=FingerprintConfig(bits=32))


def test_numpy_numbers_are_accepted_as_thresholds(planted):
    assert ids(diversify(planted, thresholds=T(np.int64(3), None))) == ["a", "c"]
    assert ids(diversify(planted, thresholds=T(np.int64(3), np.float32(0.9)))) == ["a", "c"]


def test_bad_stored_fingerprints_are_errors(planted, trio, fingerprinter):
    with pytest.raises(InputError, match="'zz'.*not a hex"):
        diversify([*planted, hit("zz", "not-hex")])
    with pytest.raises(InputError, match="wider than 64 bits.*128-bit"):
        diversify([*planted, hit("wide", "1" * 32)])
    odd = hit("odd", flip(BASE, 9), unit(1, 0.1, dims=12))
    with pytest.raises(InputError, match="lengths \\[8, 12\\]"):
        diversify([*trio, odd], thresholds=T(3, 0.9))
    with pytest.raises(ConfigError, match="fingerprinter's config is not the index's"):
        diversify(planted, fingerprinter=fingerprinter, config=FingerprintConfig(bits=128))
    with pytest.raises(InputError, match="'sig'.*not a base64 MinHash"):
        diversify([*planted, {"_id": "sig", "_source": {"dedup": {"minhash": "%%%", "shingles": 4}}}])


def test_both_tests_with_no_vectors_at_all_fall_back_to_hamming(planted):
    assert ids(diversify(planted, thresholds=T(3, 0.9))) == ["a", "c"]
