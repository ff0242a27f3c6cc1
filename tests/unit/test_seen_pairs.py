"""All-pairs search remembers the pairs its in-memory join measured as rows of numbers, and the key groups read
after it skip exactly those pairs: looked up by binary search of the ids, then (after many lookups) by a table
of each id's row, with the same answers."""
from __future__ import annotations

import itertools

import numpy as np

from esdedup.match.seen import SeenPairs


def test_a_pair_is_seen_exactly_when_the_join_or_an_add_holds_it() -> None:
    ids = [f"d{i:03d}" for i in range(0, 200, 2)]  # sorted, with gaps: d001 is in no row
    left = np.array([0, 0, 3, 7, 28], dtype=np.int64)
    right = np.array([1, 99, 4, 8, 99], dtype=np.int64)
    joined = {(ids[i], ids[j]) for i, j in zip(left.tolist(), right.tolist(), strict=True)}
    seen = SeenPairs()
    assert ("d000", "d002") not in seen  # nothing added yet
    seen.add_rows(ids, left, right)
    seen.add(("d001", "d003"))
    every = [(a, b) for a, b in itertools.combinations([f"d{i:03d}" for i in range(200)] + ["zz"], 2)]
    expected = joined | {("d001", "d003")}
    first = [p for p in every[:SeenPairs.SEARCHES] if p in seen]  # by binary search
    rest = [p for p in every[SeenPairs.SEARCHES:] if p in seen]  # by the table of rows
    assert set(first) | set(rest) == expected and len(every) > 2 * SeenPairs.SEARCHES
    assert all(p in seen for p in expected) and ("d002", "d000") not in seen  # (a, b) with a < b only
