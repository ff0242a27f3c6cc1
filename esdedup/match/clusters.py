"""Clusters of near-duplicates: the union-find over pairs."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from esdedup.util.unionfind import UnionFind


class _PairLike(Protocol):
    @property
    def a(self) -> str: ...
    @property
    def b(self) -> str: ...


def clusters(pairs: Iterable[_PairLike | tuple[str, str]]) -> dict[str, str]:
    """Union-find over pairs: document id -> cluster id (the smallest id of its cluster, so the answer
    is the same whatever order the pairs came in). Documents in no pair are absent."""
    sets = UnionFind[str]()
    for p in pairs:
        a, b = p if isinstance(p, tuple) else (p.a, p.b)
        sets.union(a, b)
    return {x: sets.find(x) for x in sets}
