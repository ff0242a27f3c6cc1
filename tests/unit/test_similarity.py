"""Similarity measures against hand-computed values (design documents 001 and 004)."""
from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprinter
from esdedup.match.similarity import (
    adjusted_cosine,
    containment,
    cosine,
    hamming,
    jaccard,
    novel_similarity,
    size_ratio_ok,
    vector_cosine,
    weighted_jaccard,
)

# Document 004's worked example.
A = {"我": 5, "斗罗": 3, "武器": 2}
B = {"我": 6, "武器": 3, "长剑": 2}


def test_cosine_document_004_by_hand():
    # dot = 5*6 + 2*3 = 36; |A| = sqrt(25 + 9 + 4) = sqrt(38); |B| = sqrt(36 + 9 + 4) = 7
    expected = 36 / (math.sqrt(38) * 7)
    assert cosine(A, B) == pytest.approx(expected, abs=1e-12)
    # Document 004 reports 83.428% and says it leaves its "-5" tweak out of the example: it is exactly
    # this plain cosine (0.834280...), so our definition reproduces the document's number.
    assert round(cosine(A, B) * 100, 3) == 83.428


def test_weighted_jaccard_document_004():
    # sum of minimums 5 + 0 + 2 + 0 = 7, sum of maximums 6 + 3 + 3 + 2 = 14
    assert weighted_jaccard(A, B) == 0.5
    assert weighted_jaccard(B, A) == 0.5


def test_novel_similarity_document_004_row():
    row = novel_similarity(A, B)
    assert row["cosine"] == pytest.approx(36 / (math.sqrt(38) * 7))
    assert row["weighted_jaccard"] == 0.5
    assert row["average"] == pytest.approx((row["cosine"] + 0.5) / 2)
    assert round(row["average"] * 100, 1) == 66.7  # "两者平均相似度为66.7%"
    # every count of A is <= 5, so after the shift of 5 A has no weight left: adjusted cosine 0
    assert row["adjusted_cosine"] == 0.0


def test_adjusted_cosine_by_hand():
    # shift 1: A' = {我: 4, 斗罗: 2, 武器: 1}, B' = {我: 5, 武器: 2, 长剑: 1}
    # dot = 20 + 2 = 22, |A'| = sqrt(21), |B'| = sqrt(30)
    assert adjusted_cosine(A, B, shift=1) == pytest.approx(22 / math.sqrt(21 * 30))
    # shift 5: counts at or below the shift contribute nothing (no negative weights)
    big_a = {"我": 105, "斗罗": 3, "武器": 52}
    big_b = {"我": 95, "长剑": 4, "武器": 45}
    # A' = {我: 100, 武器: 47}, B' = {我: 90, 武器: 40}
    expected = (100 * 90 + 47 * 40) / (math.hypot(100, 47) * math.hypot(90, 40))
    assert adjusted_cosine(big_a, big_b) == pytest.approx(expected)
    # words both novels use a few times (<= 5) change the plain cosine but not the adjusted one
    noisy_a = {**big_a, **{f"词{i}": 5 for i in range(40)}}
    assert adjusted_cosine(noisy_a, big_b) == adjusted_cosine(big_a, big_b)
    assert cosine(noisy_a, big_b) < cosine(big_a, big_b)


def test_cosine_document_001_vectors():
    # Text1 我/是/中国人, Text2 我们/是/中国人: merged vocabulary, (1,1,1,0) vs (0,1,1,1) -> 2/3
    assert cosine({"我": 1, "是": 1, "中国人": 1}, {"我们": 1, "是": 1, "中国人": 1}) == pytest.approx(2 / 3)


def test_cosine_edge_cases():
    assert cosine({}, {"a": 1}) == 0.0
    assert cosine({"a": 0.0}, {"a": 0.0}) == 0.0
    assert cosine({"a": 1}, {"b": 1}) == 0.0
    assert cosine({"a": 3, "b": 4}, {"a": 3, "b": 4}) == 1.0
    assert cosine({"a": 1, "b": 2}, {"a": 2, "b": 4}) == pytest.approx(1.0)


@given(st.dictionaries(st.sampled_from("abcdefgh"), st.floats(0, 1e6), max_size=8),
       st.dictionaries(st.sampled_from("abcdefgh"), st.floats(0, 1e6), max_size=8))
def test_cosine_is_symmetric_and_bounded(a, b):
    c = cosine(a, b)
    assert 0.0 <= c <= 1.0
    assert c == pytest.approx(cosine(b, a), abs=1e-12)
    assert 0.0 <= weighted_jaccard(a, b) <= 1.0


def test_vector_cosine():
    v = np.array([1.0, 2.0, 2.0], dtype=np.float32)
    assert vector_cosine(v, v) == pytest.approx(1.0)
    assert vector_cosine(v, 2 * v) == pytest.approx(1.0)
    assert vector_cosine(np.array([1.0, 0.0]), np.array([0.0, 1.0])) == 0.0
    assert vector_cosine(np.array([1.0, 0.0]), np.array([-1.0, 0.0])) == pytest.approx(-1.0)
    zero = np.zeros(3, dtype=np.float32)
    assert vector_cosine(zero, v) == 0.0
    assert vector_cosine(v, zero) == 0.0
    assert vector_cosine(zero, zero) == 0.0


def test_jaccard():
    assert jaccard({"ab", "bc", "cd"}, {"bc", "cd", "de"}) == 0.5
    assert jaccard(set(), set()) == 0.0
    assert jaccard({"a"}, set()) == 0.0
    assert jaccard(frozenset("abc"), frozenset("abc")) == 1.0


def test_weighted_jaccard_edge_cases():
    assert weighted_jaccard({}, {}) == 0.0
    assert weighted_jaccard({"a": 1}, {"b": 1}) == 0.0
    assert weighted_jaccard({"a": 2}, {"a": 2}) == 1.0
    # sensitive to size: the same distribution at double size is only 50% similar
    assert weighted_jaccard({"a": 1, "b": 2}, {"a": 2, "b": 4}) == 0.5


@pytest.fixture(scope="module")
def fper():
    return Fingerprinter(FingerprintConfig())


def test_containment_document_001_titles(fper):
    short = fper.terms("贯彻强军目标出实招用实劲 努力开创部队建设新局面")
    long = fper.terms("在接见驻浙部队领导干部时强调 贯彻强军目标出实招用实劲 努力开创部队建设新局面")
    assert len(long) >= 1.5 * len(short)  # so the long title is scanned window by window
    assert containment(short, long) == 1.0
    assert containment(long, short) == 1.0  # either argument order
    assert cosine(Counter(short), Counter(long)) < 1.0  # the whole-title cosine does not see it


def test_containment_by_hand():
    short = ["a", "b", "c"]
    long = ["x", "y", "a", "b", "c", "z"]
    assert containment(short, long) == 1.0
    # a window holding two of the three words at best: cosine 2/3
    assert containment(short, ["x", "a", "b", "y", "c", "z"]) == pytest.approx(2 / 3)
    # lengths within the ratio: plain cosine of the two
    almost = ["a", "b", "d"]
    assert containment(short, almost) == pytest.approx(cosine(Counter(short), Counter(almost)))
    assert containment([], ["a"]) == 0.0
    # early stop: once the threshold is met the best so far is returned
    assert containment(short, ["a", "b", "q", "r", "s", "a", "b", "c"], threshold=0.6) >= 0.6


def test_size_ratio_ok():
    assert size_ratio_ok(1000, 1400)
    assert size_ratio_ok(1000, 1500)
    assert not size_ratio_ok(1000, 1501)
    assert not size_ratio_ok(1000, 2100)
    assert size_ratio_ok(2100, 1500)  # order does not matter
    assert not size_ratio_ok(2100, 1000)
    assert size_ratio_ok(0, 0)
    assert not size_ratio_ok(0, 10)
    assert size_ratio_ok(10, 20, max_ratio=2.0)


def test_hamming_is_reexported():
    assert hamming(0b1011, 0b0001) == 2
