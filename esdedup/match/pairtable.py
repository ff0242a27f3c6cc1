"""All-pairs search's answer: its pairs, most of them held as columns.

The in-memory join measures and judges its candidates as arrays (`esdedup.match.pairs`); the pairs it keeps
stay arrays (`PairColumns`), and a `Pair` is made only when one is read. `PairList` holds every pair of a search,
those columns and the pairs found otherwise, in one order by ``(a, b)``: a million pairs are sorted, counted and
printed without a million objects.
"""
from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from operator import attrgetter, ge
from typing import TypeVar, overload

import numpy as np

from esdedup.match.measures import measures_row

T = TypeVar("T")


# Not frozen, and slotted (hashable all the same): a frozen dataclass's __init__ sets each field through
# object.__setattr__, paid for every pair read. Read-only all the same: nothing assigns to its fields.
@dataclass(slots=True, unsafe_hash=True)
class Pair:
    """Two near-duplicate documents, ``a < b``, with the measures the rule read: the MinHash estimates
    ``jaccard`` and ``containment`` when both carry signatures, else None; ``cosine`` None when the index
    stores no vectors (nothing to compare); ``decided_by``: the measure that made them near-duplicates
    (`esdedup.match.rule.decided_by`)."""

    a: str
    b: str
    hamming: int | None
    cosine: float | None
    jaccard: float | None = None
    containment: float | None = None
    decided_by: str = ""

    def to_dict(self) -> dict[str, object]:
        return {"a": self.a, "b": self.b,
                **measures_row(self.hamming, self.cosine, self.jaccard, self.containment, self.decided_by)}


@dataclass(frozen=True)
class PairColumns:
    """Near-duplicate pairs as columns: pair ``x`` is documents ``ids[a[x]]`` and ``ids[b[x]]``, with ``a[x] <
    b[x]`` and ``ids`` ascending (so the order of ``(a, b)`` is that of the ids), and the measures of `Pair`:
    ``hamming`` integers, or floats with NaN where a side carries no SimHash; ``cosine`` None when no pair shows
    one, else NaN where one is not measured; ``jaccard`` and ``containment`` NaN where a side carries no
    signature; ``decided_by`` a name a pair (an object array)."""

    ids: Sequence[str]
    a: np.ndarray
    b: np.ndarray
    hamming: np.ndarray
    cosine: np.ndarray | None
    jaccard: np.ndarray
    containment: np.ndarray
    decided_by: np.ndarray

    def __len__(self) -> int:
        return len(self.a)

    def __iter__(self) -> Iterator[Pair]:
        """The pairs as `Pair`s, in their order (the values each pair's `Pair` was always made with)."""
        ids = self.ids
        cosines = [None] * len(self) if self.cosine is None else map(_measured, self.cosine.tolist())
        for i, j, h, c, jj, ct, why in zip(self.a.tolist(), self.b.tolist(), hamming_list(self.hamming), cosines,
                                           map(_measured, self.jaccard.tolist()),
                                           map(_measured, self.containment.tolist()), self.decided_by.tolist(),
                                           strict=True):
            yield Pair(ids[i], ids[j], h, c, jj, ct, why)

    def rows(self, at: np.ndarray | slice) -> PairColumns:
        """The pairs at ``at`` (positions, or a slice), over the same ids."""
        return PairColumns(self.ids, self.a[at], self.b[at], self.hamming[at],
                           None if self.cosine is None else self.cosine[at], self.jaccard[at], self.containment[at],
                           self.decided_by[at])

    @staticmethod
    def joined(parts: Sequence[PairColumns]) -> PairColumns:
        """The pairs of ``parts`` (over one ids list, each showing a cosine or none) in one set of columns."""
        ids = parts[0].ids
        cosines = [p.cosine for p in parts]
        shown = [c for c in cosines if c is not None]
        assert all(p.ids is ids for p in parts) and len(shown) in (0, len(parts))
        if len(parts) == 1:
            return parts[0]
        a, b, hamming, jaccard, containment, by = (np.concatenate([getattr(p, name) for p in parts]) for name in (
            "a", "b", "hamming", "jaccard", "containment", "decided_by"))
        return PairColumns(ids, a, b, hamming, np.concatenate(shown) if shown else None, jaccard, containment, by)


def _measured(value: float) -> float | None:
    return None if value != value else value


def hamming_list(hamming: np.ndarray) -> list[int | None]:
    """Hamming distances as ints, None where a side carries no SimHash (NaN in a float array)."""
    if hamming.dtype.kind in "iu":
        return hamming.tolist()  # type: ignore[no-any-return]
    missing = np.isnan(hamming)
    if missing.all():  # texts too short for terms: every pair of a store of short texts
        return [None] * len(hamming)
    # One pass in numpy, not a numpy call a value.
    return [None if m else int(h) for h, m in zip(hamming.tolist(), missing.tolist(), strict=True)]


class PairList(Sequence[Pair]):
    """Every pair of an all-pairs search, sorted by ``(a, b)``: those found as columns (`columns`, over one ids
    list) and the others as `Pair`s (`others`), merged. It reads as a list of `Pair`s (each made when read, so two
    reads give equal objects, not the same one) and equals any sequence of equal pairs; `segments`, `cuts` and
    `interleaved` give the columns themselves, for what reads them as arrays."""

    def __init__(self, parts: Iterable[PairColumns | Pair]) -> None:
        tables: list[PairColumns] = []
        others: list[Pair] = []
        for part in parts:
            if isinstance(part, Pair):
                others.append(part)
            elif len(part):
                if tables and (part.ids is not tables[0].ids or (part.cosine is None) != (tables[0].cosine is None)):
                    others.extend(part)  # columns of another kind than the first (no search makes two): as pairs
                else:
                    tables.append(part)
        self.columns = _sorted(PairColumns.joined(tables)) if tables else None
        others.sort(key=attrgetter("a", "b"))
        self.others = others
        #: The row of `columns` each of `others` comes before (their count: after them all), ascending.
        self.before = (np.zeros(len(others), dtype=np.int64) if self.columns is None else
                       _rows_before(self.columns, others))
        #: Where each of `others` is in the merged order.
        self._other_at = self.before + np.arange(len(others), dtype=np.int64)

    def __len__(self) -> int:
        return len(self.others) + self._rows

    @property
    def _rows(self) -> int:
        return 0 if self.columns is None else len(self.columns)

    def cuts(self, most: int) -> list[int]:
        """Rows of `columns` where they are cut into runs for `interleaved`: from 0 to their count, each row one
        of `others` comes before, and at least every ``most`` rows."""
        return sorted({*range(0, self._rows, max(most, 1)), *self.before.tolist(), self._rows})

    def interleaved(self, cuts: Sequence[int], runs: Iterable[T], others: Iterable[T]) -> Iterator[T]:
        """``runs`` (one item a run of `columns`' rows between two consecutive ``cuts``, from `cuts`) and
        ``others`` (one item a pair of `others`), in the order of the pairs."""
        before, pending = self.before.tolist(), iter(others)
        k = 0
        for lo, run in zip(cuts, runs, strict=False):  # a run fewer than cuts
            while k < len(before) and before[k] == lo:
                yield next(pending)
                k += 1
            yield run
        yield from pending

    def segments(self) -> Iterator[PairColumns | Pair]:
        """The pairs in order, as runs of columns between the pairs found otherwise."""
        cols = self.columns
        cuts = self.cuts(self._rows)
        runs: Iterator[PairColumns | Pair] = iter(())
        if cols is not None:
            runs = (cols.rows(slice(lo, hi)) for lo, hi in zip(cuts, cuts[1:], strict=False))
        others: list[PairColumns | Pair] = list(self.others)
        yield from self.interleaved(cuts, runs, others)

    def __iter__(self) -> Iterator[Pair]:
        for part in self.segments():
            if isinstance(part, Pair):
                yield part
            else:
                yield from part

    @overload
    def __getitem__(self, i: int) -> Pair: ...

    @overload
    def __getitem__(self, i: slice) -> list[Pair]: ...

    def __getitem__(self, i: int | slice) -> Pair | list[Pair]:
        if isinstance(i, slice):
            return [self[x] for x in range(*i.indices(len(self)))]
        n = len(self)
        if not -n <= i < n:
            raise IndexError("pair index out of range")
        i %= n
        k = int(np.searchsorted(self._other_at, i))
        if k < len(self.others) and self._other_at[k] == i:
            return self.others[k]
        assert self.columns is not None
        return next(iter(self.columns.rows(slice(i - k, i - k + 1))))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and all(x == y for x, y in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PairList({len(self)} pairs)"


def _sorted(cols: PairColumns) -> PairColumns:
    """``cols`` in the order of ``(a, b)``: that of their ids' ``(a, b)`` when the ids ascend, as they do."""
    ids = cols.ids
    if any(map(ge, ids, islice(ids, 1, None))):
        raise ValueError("PairColumns' ids must be distinct and ascending")
    a, b = cols.a, cols.b
    step = np.diff(a)
    if bool(((step > 0) | ((step == 0) & (np.diff(b) > 0))).all()):  # as the join gives them
        return cols
    return cols.rows(np.lexsort((b, a)))


def _rows_before(cols: PairColumns, pairs: Sequence[Pair]) -> np.ndarray:
    """For each pair, how many rows of ``cols`` (in the order of ``(a, b)``, `_sorted`) come before it in the
    order of the ids' ``(a, b)``: a row's ids are smaller than a pair's ``(a, b)`` exactly when its positions in
    the ascending ids are smaller than where the pair's ids would go (``b`` counts only for a row of the pair's
    own ``a``, which the ids hold at that place), so one search of the rows' positions answers for all."""
    ids = cols.ids
    width = len(ids) + 1  # a row's (a, b) as one integer a * width + b, in the same order
    keys = cols.a.astype(np.int64) * width + cols.b.astype(np.int64)
    wanted = np.empty(len(pairs), dtype=np.int64)
    for x, p in enumerate(pairs):
        at = bisect_left(ids, p.a)
        wanted[x] = at * width + (bisect_left(ids, p.b) if at < len(ids) and ids[at] == p.a else 0)
    return np.searchsorted(keys, wanted, side="left").astype(np.int64)
