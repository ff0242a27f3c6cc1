"""Clusters of near-duplicates: the union-find over pairs."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

import numpy as np

from esdedup.errors import ConfigError
from esdedup.match.pairtable import Pair, PairColumns, PairList
from esdedup.util.fieldtypes import checked_args
from esdedup.util.unionfind import UnionFind, array_roots


class _PairLike(Protocol):
    @property
    def a(self) -> str: ...
    @property
    def b(self) -> str: ...


@checked_args
def clusters(pairs: Iterable[_PairLike | tuple[str, str]]) -> dict[str, str]:
    """Union-find over pairs: document id -> cluster id (the smallest id of its cluster, so the answer
    is the same whatever order the pairs came in). Documents in no pair are absent. The pairs a
    `esdedup.match.pairtable.PairList` holds as columns are joined as arrays (`array_roots`)."""
    if isinstance(pairs, PairList) and pairs.columns is not None:
        return _list_clusters(pairs.columns, pairs.others)
    sets = UnionFind[str]()
    union = sets.union
    for p in pairs:
        try:
            a, b = p if isinstance(p, tuple) else (p.a, p.b)
        except (AttributeError, ValueError):
            raise ConfigError(f"clusters: each pair must be a Pair or a tuple of two ids, got {type(p).__name__} "
                              f"{p!r:.40}") from None
        union(a, b)
    return sets.flattened()


def _list_clusters(cols: PairColumns, others: list[Pair]) -> dict[str, str]:
    """`clusters` of pairs held as columns (their ids ascending, so the smallest position is the smallest id),
    then the pairs found otherwise."""
    ids = cols.ids
    roots = array_roots(len(ids), cols.a, cols.b)
    paired = np.zeros(len(ids), dtype=bool)
    paired[cols.a] = paired[cols.b] = True
    items = np.flatnonzero(paired)
    named = dict(zip(map(ids.__getitem__, items.tolist()), map(ids.__getitem__, roots[items].tolist()), strict=True))
    if not others:
        return named
    sets = UnionFind.rooted(named)
    for p in others:
        sets.union(p.a, p.b)
    return sets.flattened()
