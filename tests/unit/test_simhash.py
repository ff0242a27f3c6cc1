"""SimHash: golden values, process independence, the reference vs the Fingerprinter's fast path."""
from __future__ import annotations

import json
import os
import random
import string
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprinter, _vote_sums
from esdedup.fingerprint.hashing import token_digest, token_hash
from esdedup.fingerprint.simhash import (
    from_hex,
    hamming,
    hamming_many,
    hamming_rows,
    pack_bits,
    simhash,
    simhash_from_votes,
    simhash_words,
    to_hex,
    vote_rows,
)

REPO = Path(__file__).resolve().parents[2]

TEXTS = {
    "zh_news": "在1998年来临之际，我十分高兴地通过中央人民广播电台、中国国际广播电台和中央电视台，"
               "向全国各族人民致以诚挚的问候和良好的祝愿！",
    "zh_doc001": "臺灣居民明日起持臺胞證可通關 無需辦理簽注",
    "en": "The quick brown fox jumps over the lazy dog. Near-duplicate detection finds documents that are "
          "almost the same.",
    "mixed": "SimHash（Charikar 2002）把文本的特征向量降维成64位指纹，海明距离小于3的两篇文章视为相似。",
}

# Computed once (jieba 0.42.1, rjieba 0.2.2, schema 1, the shipped stopword lists) and frozen here: a
# change means every stored fingerprint changes, which needs a schema bump, not a new golden value.
GOLDEN = {
    "jieba": {"zh_news": "cdedcd28976df51b", "zh_doc001": "00db878c12406824", "en": "708811a611f30a10",
              "mixed": "6821592e88ed3801"},
    "rjieba": {"zh_news": "cdedcd28976df51b", "zh_doc001": "00db878c12406824", "en": "faca91a691fb0a1a",
               "mixed": "6821592e88ed3801"},
}
GOLDEN_128_RJIEBA_ZH_NEWS = "8f66169ed4c07092e75eaf52d8f7623a"


# Strategy simhash throughout: under the default `auto` texts this short get no SimHash (nothing would read it).
@pytest.fixture(scope="module")
def fper_jieba():
    return Fingerprinter(FingerprintConfig(tokenizer="jieba", strategy="simhash"))


@pytest.fixture(scope="module")
def fper_rjieba():
    return Fingerprinter(FingerprintConfig(tokenizer="rjieba", strategy="simhash"))


def test_token_hash_golden():
    assert token_hash("中国") == 7297876748237075362
    assert token_hash("中国", 128) == 0xACAF27AFCA9A7D7FF5FC39A43B757392
    assert token_digest("中国")[:8] == (7297876748237075362).to_bytes(8, "little")
    assert len(token_digest("x", 128)) == 24


@pytest.mark.parametrize("tokenizer", ["jieba", "rjieba"])
@pytest.mark.parametrize("name", sorted(TEXTS))
def test_golden_simhash(tokenizer, name, fper_jieba, fper_rjieba):
    fper = fper_jieba if tokenizer == "jieba" else fper_rjieba
    fp = fper.fingerprint(TEXTS[name])
    assert fp.hex == GOLDEN[tokenizer][name]
    assert fp.simhash == from_hex(fp.hex)


def test_golden_simhash_128():
    fp = Fingerprinter(FingerprintConfig(tokenizer="rjieba", bits=128, strategy="simhash")).fingerprint(TEXTS["zh_news"])
    assert fp.hex == GOLDEN_128_RJIEBA_ZH_NEWS
    assert len(fp.hex) == 32


_CHILD = """
import json, sys
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprinter
texts = json.loads(sys.stdin.read())
out = {}
for tok in ("jieba", "rjieba"):
    fper = Fingerprinter(FingerprintConfig(tokenizer=tok, strategy="simhash"))
    out[tok] = {name: fp.hex for name, fp in zip(texts, fper.fingerprint_many(list(texts.values())))}
print(json.dumps({"hash_of_str": hash("esdedup"), "fps": out}))
"""


def test_same_bits_in_a_fresh_process_with_another_hash_seed():
    runs = []
    for seed in ("1", "987654"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO)}
        proc = subprocess.run([sys.executable, "-c", _CHILD], input=json.dumps(TEXTS), env=env,
                              capture_output=True, text=True, timeout=300, check=True)
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert runs[0]["hash_of_str"] != runs[1]["hash_of_str"]  # the seeds really differ...
    assert runs[0]["fps"] == runs[1]["fps"] == GOLDEN  # ...and the fingerprints do not


def test_identical_text_distance_zero(fper_rjieba):
    a = fper_rjieba.fingerprint(TEXTS["zh_news"])
    b = Fingerprinter(FingerprintConfig(tokenizer="rjieba", strategy="simhash")).fingerprint(TEXTS["zh_news"])
    assert hamming(a.simhash, b.simhash) == 0
    assert a == b


def test_near_text_is_nearer_than_other_text(fper_rjieba):
    base = TEXTS["zh_news"] * 3
    near = base.replace("良好的祝愿", "美好的祝福")
    other = TEXTS["mixed"] * 3
    d_near = hamming(fper_rjieba.fingerprint(base).simhash, fper_rjieba.fingerprint(near).simhash)
    d_other = hamming(fper_rjieba.fingerprint(base).simhash, fper_rjieba.fingerprint(other).simhash)
    assert d_near < d_other


# -- reference simhash() vs the Fingerprinter's fast path ------------------------------------------

_WORD = st.text(alphabet=string.ascii_lowercase + string.digits, min_size=1, max_size=8)


def _text_of(counts: dict[str, int]) -> str:
    return " ".join(w for w, c in counts.items() for _ in range(c))


@pytest.fixture(scope="module")
def fper_plain():
    return Fingerprinter(FingerprintConfig(tokenizer="rjieba", stopwords="none", strategy="simhash"))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(_WORD, st.integers(1, 30), min_size=1, max_size=40))
def test_reference_equals_fast_path_on_term_counts(fper_plain, counts):
    fp = fper_plain.fingerprint(_text_of(counts))
    assert fp.tf == {w: float(c) for w, c in counts.items()}  # the text really holds these terms
    assert fp.simhash == simhash(counts) == simhash(fp.tf)
    assert fp.length == sum(counts.values())


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(_WORD, st.integers(1, 30), min_size=1, max_size=40))
def test_reference_equals_fast_path_tf_length_128(counts):
    fper = _fper_tf_length_128()
    fp = fper.fingerprint(_text_of(counts))
    weights = {w: float(c * len(w)) for w, c in counts.items()}
    assert fp.tf == weights
    assert fp.simhash == simhash(weights, bits=128)
    assert len(fp.hex) == 32


_CACHE: dict[str, Fingerprinter] = {}


def _fper_tf_length_128() -> Fingerprinter:
    if "tfl" not in _CACHE:
        _CACHE["tfl"] = Fingerprinter(FingerprintConfig(tokenizer="rjieba", stopwords="none", bits=128,
                                                        weighting="tf_length", strategy="simhash"))
    return _CACHE["tfl"]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.text(min_size=1, max_size=6), st.integers(1, 1 << 20).map(lambda q: q / 1024),
                       min_size=1, max_size=60),
       st.sampled_from([64, 128]))
def test_reference_equals_vote_sums_on_dyadic_weights(fper_plain, weights, bits):
    """The fast path quantises weights to 1/1024; on weights that are multiples of 1/1024 (every tf and
    tf_length weight is) it must agree with the reference bit for bit, ties included."""
    fper = fper_plain if bits == 64 else _fper_tf_length_128()
    table = fper._table
    rows = table.rows(list(weights))
    w = np.fromiter(weights.values(), dtype=np.float64, count=len(weights))
    sums = _vote_sums(table, rows, w, np.zeros(len(rows), dtype=np.int64), 1)
    assert pack_bits(sums > 0)[0] == simhash(weights, bits=bits)
    # the sums themselves are the exact integer vote sums (in units of 1/1024)
    votes = vote_rows([token_digest(t, bits) for t in weights], bits).astype(np.int64)
    exact = (np.rint(w * 1024).astype(np.int64)[:, None] * votes).sum(axis=0)
    assert np.array_equal(sums[0], exact.astype(np.float64))


def test_fingerprint_many_equals_fingerprint_one_by_one(fper_rjieba):
    texts = list(TEXTS.values()) + ["", "，。", TEXTS["zh_news"], "同一个词 同一个词", "a" * 300]
    many = fper_rjieba.fingerprint_many(texts)
    fresh = Fingerprinter(FingerprintConfig(tokenizer="rjieba", strategy="simhash"))
    single = [fresh.fingerprint(t) for t in texts]
    assert many == single
    assert [list(m.tf.items()) for m in many] == [list(s.tf.items()) for s in single]
    assert [m.length for m in many] == [s.length for s in single]


def test_fingerprint_many_across_internal_chunks(fper_rjieba, monkeypatch):
    import esdedup.fingerprint.fingerprinter as fpmod

    texts = [f"第{i}篇文章讲了{i % 7}件事情，中国{i % 3}" for i in range(23)] + ["", "！"]
    expected = [fper_rjieba.fingerprint(t) for t in texts]
    monkeypatch.setattr(fpmod, "_DOCS_PER_PASS", 4)
    monkeypatch.setattr(fpmod, "_ROWS_PER_PASS", 5)
    assert Fingerprinter(FingerprintConfig(tokenizer="rjieba", strategy="simhash")).fingerprint_many(iter(texts)) == expected
    assert fper_rjieba.fingerprint_many([]) == []


def test_tie_is_bit_zero():
    a, b = "甲", "乙"
    ha, hb = token_hash(a), token_hash(b)
    assert ha != hb and (ha ^ hb) != 0
    # equal weights: where the hashes disagree the votes cancel to 0, and a 0 sum gives bit 0
    assert simhash({a: 1.0, b: 1.0}) == ha & hb
    assert simhash({a: 2.0, b: 1.0}) == ha
    fp = Fingerprinter(FingerprintConfig(tokenizer="char", shingle=1, strategy="simhash")).fingerprint("甲乙")
    assert fp.tf == {a: 1.0, b: 1.0}
    assert fp.simhash == ha & hb


def test_reference_helpers():
    assert simhash({}) == 0
    assert simhash({"中国": 3.0}) == token_hash("中国")
    votes = vote_rows([token_digest("中国")])
    assert votes.shape == (1, 64) and set(np.unique(votes).tolist()) == {-1, 1}
    assert simhash_from_votes(votes, np.array([1.0])) == token_hash("中国")
    assert simhash_from_votes(np.zeros((0, 64), dtype=np.int8), np.zeros(0)) == 0
    assert pack_bits(np.array([[1] + [0] * 63])) == [1]
    assert pack_bits(np.array([0] * 63 + [1])) == [1 << 63]


def test_hex_and_hamming():
    assert to_hex(255) == "00000000000000ff"
    assert to_hex(1, bits=128) == "0" * 31 + "1"
    assert from_hex(to_hex(0xDEADBEEF)) == 0xDEADBEEF
    assert hamming(0, (1 << 64) - 1) == 64
    assert hamming(1 << 127, 0) == 1
    others = np.array([0, 1, 3, (1 << 64) - 1], dtype=np.uint64)
    assert hamming_many(0, others).tolist() == [0, 1, 2, 64]
    assert hamming_many((1 << 64) - 1, others).tolist() == [64, 63, 62, 0]


@pytest.mark.parametrize("bits", [64, 128])
def test_vectorised_hamming_equals_bit_count(bits):
    """numpy has no 128-bit integers: wide fingerprints are split into 64-bit words, and the word-wise
    popcount must equal Python's on the whole number."""
    rng = random.Random(bits)
    values = [rng.getrandbits(bits) for _ in range(200)] + [0, (1 << bits) - 1, 1 << (bits - 1)]
    a = rng.getrandbits(bits)
    assert hamming_many(a, values, bits).tolist() == [(a ^ v).bit_count() for v in values]
    words = simhash_words(values, bits)
    assert words.shape == (len(values), bits // 64)
    left, right = words[:100], words[100:200]
    assert hamming_rows(left, right).tolist() == [(values[i] ^ values[100 + i]).bit_count() for i in range(100)]


def test_128_bit_mode(fper_rjieba):
    f128 = Fingerprinter(FingerprintConfig(tokenizer="rjieba", bits=128, strategy="simhash"))
    fp = f128.fingerprint(TEXTS["zh_news"])
    assert fp.bits == 128 and len(fp.hex) == 32 and fp.simhash < 1 << 128
    assert fp.simhash == simhash(fp.tf, bits=128)
    assert len(fp.bands) == f128.layout.n_tables == 4
    assert fp.bands == f128.layout.keys(fp.simhash)
    # the 128-bit fingerprint is not an extension of the 64-bit one (different digest size)
    assert fp.simhash & ((1 << 64) - 1) != fper_rjieba.fingerprint(TEXTS["zh_news"]).simhash
