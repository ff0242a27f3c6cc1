"""All-pairs search's pairs held as columns (`PairColumns`) and its answer (`PairList`): they read as the `Pair`s
the search made one at a time, sorted by ``(a, b)`` with the pairs found otherwise merged in, and a list reads
them as it reads any list of pairs."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

from esdedup.match.clusters import clusters
from esdedup.match.pairtable import Pair, PairColumns, PairList
from esdedup.util.unionfind import UnionFind, array_roots

IDS = sorted(["d00", "d01", "d02", "d03", "d04", "d05", "d06", "d07", "d08", "d09", "d10", "台湾"])
#: Every kind of value a measure takes: absent (NaN), zeros of both signs, the same value twice, an infinity.
VALUES = [math.nan, 0.0, -0.0, 0.84375, 0.84375, 1.0, 1e-07, 0.00005, math.inf, 0.33333333]


def columns(rows: list[tuple[int, int]], *, hamming_nan: bool = True, cosine: bool = True,
            ids: list[str] = IDS) -> PairColumns:
    """Pairs at ``rows`` (positions in ``ids``, a < b) with measures drawn in turn from `VALUES`."""
    n = len(rows)
    pick = np.array([VALUES[x % len(VALUES)] for x in range(n)])
    hamming = (np.where(np.arange(n) % 3 == 0, np.nan, np.arange(n) % 7).astype(np.float64) if hamming_nan
               else np.arange(n, dtype=np.int64) % 5)
    return PairColumns(ids, np.array([a for a, _ in rows], dtype=np.int64), np.array([b for _, b in rows], dtype=np.int64),
                       hamming, pick[::-1].copy() if cosine else None, pick, np.roll(pick, 1),
                       np.array([("jaccard", "", "hamming and cosine")[x % 3] for x in range(n)], dtype=object))


def as_pairs(cols: PairColumns) -> list[Pair]:
    """The `Pair`s of ``cols``, made as all-pairs search made them one at a time."""
    def value(v: float) -> float | None:
        return None if math.isnan(v) else float(v)

    out = []
    for x in range(len(cols)):
        h = cols.hamming[x]
        out.append(Pair(cols.ids[int(cols.a[x])], cols.ids[int(cols.b[x])], None if math.isnan(h) else int(h),
                        None if cols.cosine is None else value(cols.cosine[x]), value(cols.jaccard[x]),
                        value(cols.containment[x]), str(cols.decided_by[x])))
    return out


def test_columns_read_as_the_pairs_they_hold() -> None:
    for kind in ({"hamming_nan": True}, {"hamming_nan": False, "cosine": False}):
        cols = columns([(0, 1), (0, 5), (2, 3), (4, 11), (9, 10)], **kind)
        got = list(cols)
        assert got == as_pairs(cols)
        assert [type(p.hamming) for p in got if p.hamming is not None] == [int] * sum(p.hamming is not None for p in got)
        assert list(cols.rows(np.array([3, 1]))) == [got[3], got[1]]


def test_a_pair_list_is_sorted_by_ids_and_merges_the_pairs_found_otherwise() -> None:
    first = columns([(3, 4), (0, 2), (0, 1), (5, 9)])  # a chunk out of order
    second = columns([(6, 7), (1, 2), (8, 11)])
    others = [Pair(IDS[0], IDS[0 + 1] + "!", 0, None, decided_by="content_sha1"),  # between (0, 1) and (0, 2)
              Pair("a", "b", 1, None), Pair(IDS[11], IDS[11] + "x", None, 0.5, 0.5, 0.5, "jaccard"),
              Pair(IDS[5], IDS[10], 2, None)]  # right after the columns' (5, 9)
    pairs = PairList([first, others[0], second, *others[1:]])
    want = sorted([*as_pairs(first), *as_pairs(second), *others], key=lambda p: (p.a, p.b))
    assert list(pairs) == want and len(pairs) == len(want)
    assert pairs == want and want == pairs and pairs == tuple(want) and pairs == PairList(want)
    assert pairs != want[:-1] and pairs != [*want[:-1], Pair("z", "zz", 0, None)] and pairs != "not pairs"
    assert [pairs[i] for i in range(len(want))] == want
    assert [pairs[-i] for i in range(1, len(want) + 1)] == want[::-1]
    assert pairs[2:6] == want[2:6] and pairs[::-3] == want[::-3]
    with pytest.raises(IndexError):
        pairs[len(want)]
    assert clusters(pairs) == clusters(want)  # joined as arrays, then the other pairs
    segments = list(pairs.segments())
    assert [p for s in segments for p in ([s] if isinstance(s, Pair) else list(s))] == want
    assert sum(isinstance(s, PairColumns) for s in segments) >= 3  # columns between the other pairs, not objects


@pytest.mark.parametrize("seed", range(40))
def test_the_pairs_found_otherwise_go_where_sorting_puts_them_whatever_ids_they_name(seed: int) -> None:
    """A pair found otherwise goes before the columns' pairs of larger ids, and before an equal one, whether its
    ids are among the columns' ids or between them, one of them or neither."""
    rng = random.Random(seed)
    ids = sorted(rng.sample(IDS, rng.randint(2, len(IDS))))
    rows = sorted({(a, b) for a, b in (sorted(rng.sample(range(len(ids)), 2)) for _ in range(rng.randint(1, 30)))})
    cols = columns(rows, ids=ids)
    near = [*IDS, "a", "d005", "d10x", "台", "台湾\x00", "zz"]
    others = [Pair(*sorted(rng.sample(near, 2)), 0, None, decided_by="content_sha1") for _ in range(rng.randint(1, 12))]
    others += [Pair(ids[a], ids[b], 1, None) for a, b in rng.sample(rows, min(2, len(rows)))]  # equal to a column's
    tagged = sorted([(p.a, p.b, 1, x) for x, p in enumerate(as_pairs(cols))] +
                    [(p.a, p.b, 0, x) for x, p in enumerate(others)])
    want = [others[x] if found_otherwise == 0 else as_pairs(cols)[x] for _, _, found_otherwise, x in tagged]
    got = PairList([cols, *others])
    assert list(got) == want and [got[i] for i in range(len(want))] == want


def test_a_pair_list_of_nothing_or_of_pairs_alone() -> None:
    assert list(PairList([])) == [] and len(PairList([])) == 0 and PairList([]) == []
    alone = [Pair("b", "c", 1, None), Pair("a", "b", 2, None)]
    assert list(PairList(alone)) == alone[::-1] and PairList(alone)[0] == alone[1]
    assert list(PairList([columns([])])) == []


def test_columns_of_another_kind_are_read_as_pairs() -> None:
    """Columns over another ids list, or with cosines where the first had none, are merged as their pairs."""
    first = columns([(0, 1)], cosine=False)
    other_ids = [f"e{i}" for i in range(4)]
    second = columns([(1, 3)], cosine=False, ids=other_ids)
    third = columns([(2, 3)])
    assert list(PairList([first, second, third])) == sorted(
        [*as_pairs(first), *as_pairs(second), *as_pairs(third)], key=lambda p: (p.a, p.b))


def test_ids_out_of_order_are_refused() -> None:
    with pytest.raises(ValueError, match="distinct and ascending"):
        PairList([columns([(0, 1)], ids=["b", "a", "c"])])
    with pytest.raises(ValueError, match="distinct and ascending"):
        PairList([columns([(0, 1)], ids=["a", "a", "c"])])


def test_array_roots_name_each_set_by_its_smallest_item_as_the_union_find_does() -> None:
    rng = np.random.default_rng(11)
    chain = np.arange(2000)
    cases = [(chain[1:], chain[:-1]), (chain[::-1][1:], chain[::-1][:-1]),  # one long chain, both ways round
             (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))]
    cases += [(rng.integers(0, 2000, k), rng.integers(0, 2000, k)) for k in (10, 500, 1500, 4000)]
    for a, b in cases:
        sets = UnionFind[int](range(2000))
        for x, y in zip(a.tolist(), b.tolist(), strict=True):
            sets.union(x, y)
        assert array_roots(2000, a, b).tolist() == [sets.find(i) for i in range(2000)]


def test_clusters_of_a_pair_list_join_the_columns_and_the_other_pairs() -> None:
    cols = columns([(0, 1), (2, 3), (3, 4), (6, 7), (9, 10)])
    others = [Pair(IDS[1], IDS[2], 0, None), Pair(IDS[7], "zz", 0, None), Pair("a0", IDS[10], 0, None),
              Pair("q", "r", 0, None)]
    for parts in ([cols], [cols, *others]):
        pairs = PairList(parts)
        assert clusters(pairs) == clusters([(p.a, p.b) for p in pairs])
    assert clusters(PairList([cols, *others]))["zz"] == IDS[6] and clusters(PairList(others))["r"] == "q"
