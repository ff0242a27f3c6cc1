"""The candidate pairs all-pairs search has measured (`SeenPairs`), so that the key groups read after its
in-memory join skip those it joined."""
from __future__ import annotations

from bisect import bisect_left

import numpy as np


class SeenPairs:
    """The candidate pairs measured so far, as (id, id): added one at a time, or as the rows of a join (ids
    sorted, and index arrays), kept as numbers: a pair is looked up by the rows of its ids, and the join's tens
    of thousands of pairs never become tuples of strings (a store of short texts looks up a few hundred)."""

    #: Lookups by binary search of the ids before a table of each id's row is made (its cost: a few thousand).
    SEARCHES = 4096

    def __init__(self) -> None:
        self._pairs: set[tuple[str, str]] = set()
        self._rows: list[tuple[list[str], np.ndarray, np.ndarray]] = []
        self._codes: list[set[int]] | None = None
        self._row_of: list[dict[str, int]] | None = None
        self._searches = 0

    def add(self, pair: tuple[str, str]) -> None:
        self._pairs.add(pair)

    def add_rows(self, ids: list[str], left: np.ndarray, right: np.ndarray) -> None:
        """The pairs (``ids[left[x]]``, ``ids[right[x]]``); ``ids`` sorted (as all-pairs search holds them)."""
        self._rows.append((ids, left, right))
        self._codes = self._row_of = None

    def __contains__(self, pair: tuple[str, str]) -> bool:
        if pair in self._pairs:
            return True
        if not self._rows:
            return False
        if self._codes is None:  # each pair of rows as one number, left * n + right
            self._codes = [set((left.astype(np.int64) * len(ids) + right).tolist()) for ids, left, right in self._rows]
        self._searches += 1
        if self._row_of is None and self._searches > self.SEARCHES:
            self._row_of = [{i: x for x, i in enumerate(ids)} for ids, _, _ in self._rows]
        a, b = pair
        for k, (ids, _, _) in enumerate(self._rows):
            if self._row_of is not None:
                i, j = self._row_of[k].get(a), self._row_of[k].get(b)
            else:
                i, j = _position(ids, a), _position(ids, b)
            if i is not None and j is not None and i * len(ids) + j in self._codes[k]:
                return True
        return False


def _position(ids: list[str], item: str) -> int | None:
    """Where ``item`` is in ``ids`` (sorted), None where it is not."""
    x = bisect_left(ids, item)
    return x if x < len(ids) and ids[x] == item else None
