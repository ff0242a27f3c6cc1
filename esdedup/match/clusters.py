"""Clusters of near-duplicates: union-find over pairs."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol


class _PairLike(Protocol):
    @property
    def a(self) -> str: ...
    @property
    def b(self) -> str: ...


def clusters(pairs: Iterable[_PairLike | tuple[str, str]]) -> dict[str, str]:
    """Union-find over pairs: document id -> cluster id (the smallest id of its cluster, so the answer
    is the same whatever order the pairs came in). Documents in no pair are absent."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    for p in pairs:
        a, b = p if isinstance(p, tuple) else (p.a, p.b)
        parent.setdefault(a, a)
        parent.setdefault(b, b)
        ra, rb = find(a), find(b)
        if ra != rb:
            lo, hi = sorted((ra, rb))
            parent[hi] = lo
    return {x: find(x) for x in parent}
