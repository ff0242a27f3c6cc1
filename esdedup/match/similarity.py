"""Similarity measures over term weights and token sequences (design documents 000, 001, 004).

All take plain mappings or sequences and return floats in [0, 1]; none reads files or talks to servers.
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

from esdedup.fingerprint.simhash import hamming
from esdedup.util.fieldtypes import checked_args

__all__ = ["cosine", "vector_cosine", "adjusted_cosine", "weighted_jaccard", "novel_similarity",
           "jaccard", "containment", "size_ratio_ok", "hamming"]


@checked_args
def cosine(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    """Exact cosine of two sparse term-weight vectors (the merged-vocabulary vectors of document 001).

    >>> round(cosine({"我": 1, "是": 1, "中国人": 1}, {"我们": 1, "是": 1, "中国人": 1}), 4)
    0.6667
    """
    if len(a) > len(b):
        a, b = b, a
    dot = sum(w * b.get(t, 0.0) for t, w in a.items())
    na = math.sqrt(sum(w * w for w in a.values()))
    nb = math.sqrt(sum(w * w for w in b.values()))
    if na == 0 or nb == 0:
        return 0.0
    return min(1.0, dot / (na * nb))


@checked_args
def vector_cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine of two dense vectors; 0 when either is all zero (an empty text)."""
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0 or nb == 0:
        return 0.0
    return float(np.dot(a, b) / (na * nb))


@checked_args
def adjusted_cosine(a: Mapping[str, float], b: Mapping[str, float], shift: float = 5.0) -> float:
    """Design document 004's "adjusted cosine": every count lowered by ``shift`` (5 there) before the cosine,
    so the many words that two long novels both use a few times stop dominating. Counts at or below the
    shift contribute nothing (a negative weight would reward words one novel lacks)."""
    return cosine({t: w - shift for t, w in a.items() if w > shift},
                  {t: w - shift for t, w in b.items() if w > shift})


@checked_args
def weighted_jaccard(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    """Sum of minimums over sum of maximums (design document 004); sensitive to size differences.

    Document 004's worked example: A = {我: 5, 斗罗: 3, 武器: 2}, B = {我: 6, 武器: 3, 长剑: 2}.

    >>> round(weighted_jaccard({"我": 5, "斗罗": 3, "武器": 2}, {"我": 6, "武器": 3, "长剑": 2}), 4)
    0.5
    """
    keys = set(a) | set(b)
    num = sum(min(a.get(k, 0.0), b.get(k, 0.0)) for k in keys)
    den = sum(max(a.get(k, 0.0), b.get(k, 0.0)) for k in keys)
    return num / den if den else 0.0


@checked_args
def novel_similarity(a: Mapping[str, float], b: Mapping[str, float]) -> dict[str, float]:
    """The table row of document 004: cosine, adjusted cosine, weighted Jaccard and the average of the
    cosine and weighted Jaccard (the document's ``a`` column)."""
    c = cosine(a, b)
    j = weighted_jaccard(a, b)
    return {"cosine": c, "adjusted_cosine": adjusted_cosine(a, b), "weighted_jaccard": j,
            "average": (c + j) / 2}


@checked_args
def jaccard(a: set | frozenset, b: set | frozenset) -> float:
    """Plain set Jaccard (used on character n-gram sets of short texts)."""
    if not a and not b:
        return 0.0
    return len(a & b) / len(a | b)


@checked_args
def containment(short: Sequence[str], long: Sequence[str], threshold: float | None = None,
                min_ratio: float = 1.5) -> float:
    """How well a short text is contained in a long one (document 001, "long sentence contains short").

    When the long text has at least ``min_ratio`` times the short one's tokens, slide a window of the
    short length over it and return the best window cosine (stopping early once ``threshold`` is
    reached); otherwise return the plain cosine of the two. Arguments may come in either order.

    >>> short = "贯彻 强军 目标 出 实招 用 实劲 努力 开创 部队 建设 新 局面".split()
    >>> long = "在 接见 驻 浙 部队 领导 干部 时 强调".split() + short
    >>> containment(short, long)
    1.0
    """
    if len(short) > len(long):
        short, long = long, short
    cs = Counter(short)
    if not short:
        return 0.0
    if len(long) < min_ratio * len(short):
        return cosine(cs, Counter(long))
    w = len(short)
    window = Counter(long[:w])
    best = cosine(cs, window)
    for i in range(w, len(long)):
        if threshold is not None and best >= threshold:
            break
        window[long[i]] += 1
        old = long[i - w]
        window[old] -= 1
        if not window[old]:
            del window[old]
        best = max(best, cosine(cs, window))
    return best


@checked_args
def size_ratio_ok(len_a: int, len_b: int, max_ratio: float = 1.5) -> bool:
    """Document 004's pre-filter: skip a pair whose sizes differ by more than ``max_ratio`` times.

    >>> size_ratio_ok(1000, 1400), size_ratio_ok(1000, 2100)
    (True, False)
    """
    lo, hi = sorted((len_a, len_b))
    if lo == 0:
        return hi == 0
    return hi / lo <= max_ratio
