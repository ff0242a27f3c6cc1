"""One union-find: which items are joined, over any hashable, orderable items.

Every root is the smallest item of its set, so the answer does not depend on the order of the unions (two runs
that see the same pairs in another order name each cluster the same way).
"""
from __future__ import annotations

from collections.abc import Collection, Hashable, Iterable, Iterator, Mapping
from typing import Any, Generic, Protocol, TypeVar

import numpy as np


class _Orderable(Hashable, Protocol):
    def __lt__(self, other: Any, /) -> bool: ...


T = TypeVar("T", bound=_Orderable)


class UnionFind(Generic[T]):
    """Disjoint sets with path halving; an item is added by the first `find` or `union` that names it.

    >>> uf = UnionFind[str]()
    >>> uf.union("b", "c"); uf.union("c", "a")
    'b'
    'a'
    >>> uf.find("c"), sorted(map(sorted, uf.groups()))
    ('a', [['a', 'b', 'c']])
    """

    def __init__(self, items: Iterable[T] = ()) -> None:
        self._parent: dict[T, T] = {x: x for x in items}

    @classmethod
    def rooted(cls, roots: Mapping[T, T]) -> UnionFind[T]:
        """The sets whose items ``roots`` maps to their roots (each root the smallest of its set, mapped to
        itself), as `array_roots` gives them: the sets a union-find of their pairs would hold."""
        sets = cls()
        sets._parent = dict(roots)
        return sets

    def __contains__(self, item: object) -> bool:
        return item in self._parent

    def __iter__(self) -> Iterator[T]:
        return iter(self._parent)

    def find(self, item: T) -> T:
        parent = self._parent
        while parent.setdefault(item, item) != item:
            parent[item] = parent[parent[item]]
            item = parent[item]
        return item

    def union(self, a: T, b: T) -> T:
        """Join the sets of ``a`` and ``b``; returns the root of the joined set (the smaller of the two roots)."""
        parent = self._parent
        # `find` of each, written out: the two calls a union were a third of its time (`clusters` of every pair).
        ra = a
        while (up := parent.setdefault(ra, ra)) != ra:
            parent[ra] = ra = parent[up]
        rb = b
        while (up := parent.setdefault(rb, rb)) != rb:
            parent[rb] = rb = parent[up]
        if ra == rb:
            return ra
        lo, hi = (ra, rb) if ra < rb else (rb, ra)
        self._parent[hi] = lo
        return lo

    def flattened(self) -> dict[T, T]:
        """Every item's root, in the order items were first seen: the union-find's own table, each item now
        pointed straight at its root (no second table is made beside it: a union-find of millions of ids is
        read once this way). Later unions change it.

        >>> uf = UnionFind[str]()
        >>> uf.union("b", "c"); uf.union("c", "a"); uf.union("d", "e")
        'b'
        'a'
        'd'
        >>> uf.flattened()
        {'b': 'a', 'c': 'a', 'a': 'a', 'd': 'd', 'e': 'd'}
        """
        parent = self._parent
        for item in parent:
            parent[item] = self.find(item)
        return parent

    def groups(self) -> list[list[T]]:
        """Every set, each in the order its items were first seen."""
        out: dict[T, list[T]] = {}
        for item in self._parent:
            out.setdefault(self.find(item), []).append(item)
        return list(out.values())


def array_roots(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The root of each of the items ``0 .. n - 1`` once every pair ``(a[x], b[x])`` is joined: the smallest item
    of its set, as `UnionFind` names it, for pairs given as arrays (a million pairs joined in a few numpy passes,
    not a million unions). Each pass hooks the larger root of every pair still split under the smaller, then
    points every item straight at its root; the roots only decrease, so the passes end.

    >>> array_roots(6, np.array([1, 4, 2]), np.array([2, 5, 3])).tolist()
    [0, 1, 1, 1, 4, 4]
    """
    parent = np.arange(n, dtype=np.int64)
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    while True:
        ra, rb = parent[a], parent[b]
        split = ra != rb
        if not split.any():
            return parent
        ra, rb = ra[split], rb[split]
        np.minimum.at(parent, np.maximum(ra, rb), np.minimum(ra, rb))
        while True:
            up = parent[parent]
            if np.array_equal(up, parent):
                break
            parent = up
        a, b = a[split], b[split]


def union_groups(groups: Iterable[Collection[tuple[int, str]]]) -> list[set[tuple[int, str]]]:
    """Groups of cluster roots ``(seq, id)`` that share a cluster id, joined (a union-find over the ids), so that a store
    merges each set of connected clusters once.

    >>> sorted(sorted(g) for g in union_groups([[(1, "a"), (2, "b")], [(2, "b"), (3, "c")], [(5, "e")]]))
    [[(1, 'a'), (2, 'b'), (3, 'c')], [(5, 'e')]]
    """
    sets = UnionFind[str]()
    roots: dict[str, tuple[int, str]] = {}
    for group in groups:
        ids = [r[1] for r in group]
        for r in group:
            roots.setdefault(r[1], r)
            sets.union(ids[0], r[1])
    joined: dict[str, set[tuple[int, str]]] = {}
    for doc_id, root in roots.items():
        joined.setdefault(sets.find(doc_id), set()).add(root)
    return list(joined.values())
