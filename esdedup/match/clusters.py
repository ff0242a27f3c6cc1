"""Clusters of near-duplicates: the union-find over pairs."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from esdedup.errors import ConfigError
from esdedup.util.fieldtypes import checked_args
from esdedup.util.unionfind import UnionFind


class _PairLike(Protocol):
    @property
    def a(self) -> str: ...
    @property
    def b(self) -> str: ...


@checked_args
def clusters(pairs: Iterable[_PairLike | tuple[str, str]]) -> dict[str, str]:
    """Union-find over pairs: document id -> cluster id (the smallest id of its cluster, so the answer
    is the same whatever order the pairs came in). Documents in no pair are absent."""
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
