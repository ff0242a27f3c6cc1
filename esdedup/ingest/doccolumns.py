"""The run index's documents by position, as columns (`DocColumns`): what `esdedup.ingest.runindex.RunIndex`
holds of each document it was given, and what the rule reads of them as arrays (`DocColumns.sketches`), so that a
batch is measured against its candidates in the run without a `StoredDoc` made for each."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from itertools import groupby, repeat
from operator import attrgetter, itemgetter
from typing import Any

import numpy as np

from esdedup.fingerprint.values import FingerprintBlock, is_zero_vector
from esdedup.store.base import Root, StoredDoc, root_of
from esdedup.util.arrays import unique_sorted

#: A document appended by its batch's fingerprint arrays rather than its fields: the block, its row there, and
#: its id, content SHA-1, write order and cluster (`DocColumns.append_rows`). A row of fields starts with the id.
BlockRow = tuple[FingerprintBlock, int, str, str, int, Root]


def _is_block_row(row: tuple[Any, ...]) -> bool:
    return type(row[0]) is FingerprintBlock


def _fits(a: object, spec: tuple[tuple[int, ...], np.dtype]) -> bool:
    """Whether ``a`` is an array of the shape and dtype ``spec`` (a dtype is compared by identity first: numpy's
    ``==`` of two dtypes costs a microsecond, a row's whole copy half that)."""
    return (isinstance(a, np.ndarray) and a.shape == spec[0]
            and (a.dtype is spec[1] or a.dtype == spec[1]))


class DocColumns:
    """The run index's documents by position, as columns: each document's MinHash signature and TF vector a row
    of a few large arrays, and its other fields one tuple; `StoredDoc` made again when a lookup names it.
    A `StoredDoc` with its two small arrays takes about 3.8 KB a poem, these rows and the tuple about 2 KB: at
    `esdedup.ingest.window.RUN_INDEX_MAX_DOCS` documents, the window is where a run's memory peaks.

    A document whose array is missing (no signature) or of another shape or dtype than the first one's keeps
    its own, by position, and so does one whose vector is the shared zero one (`zero_vector`: a text without
    terms), by reference: a block would copy a kilobyte of zeros a document.

    What the rule and labelling read of a document besides its arrays (SimHash, length, n-gram count, whether
    it has words, write order, a hash of its id) is also kept as one numpy array a field, so that a batch is
    measured against its candidates here (`sketches`, `esdedup.ingest.runverdicts`) and their write orders
    and clusters read (`seqs`, `roots`) without a `StoredDoc` made: 43 bytes a document, about 56 with the
    arrays' room to grow (2.05 KB a poem in all)."""

    #: Rows a block of arrays holds at most, and documents appended before they are copied into the columns.
    BLOCK = 4096
    #: The bytes a block of arrays stays under: numpy asks Linux for huge pages for an array of 4 MiB or more,
    #: whose 2 MiB pages are zeroed and resident whole at the first write, and a block of vectors is mostly
    #: never written (a text too short for terms has none).
    BLOCK_BYTES = 2**22
    _NAMES = tuple(f.name for f in fields(StoredDoc))
    _ARRAYS = (_NAMES.index("vector"), _NAMES.index("minhash"))
    _ID = _NAMES.index("id")
    _ROOT = tuple(map(_NAMES.index, ("id", "seq", "cluster_id", "cluster_seq")))
    #: The fields kept as arrays, and ``idhash``: Python's ``hash`` of the id, to find a record's own id
    #: among its candidates without reading theirs.
    _SCALARS = (("simhash", np.uint64), ("chars", np.int64), ("shingles", np.int64), ("empty", np.bool_),
                ("seq", np.int64), ("idhash", np.int64))
    _KEPT_FIELDS = ("simhash", "chars", "shingles", "empty", "seq")
    _AT = dict(zip(_KEPT_FIELDS, map(_NAMES.index, _KEPT_FIELDS), strict=True))
    _fields = staticmethod(attrgetter(*_NAMES))

    def __init__(self) -> None:
        self._rows: list[tuple[object, ...]] = []
        #: Per array field: its (shape, dtype) in the blocks, the blocks, and the arrays kept by position.
        self._spec: list[tuple[tuple[int, ...], np.dtype] | None] = [None, None]
        #: Rows a block holds, per array field (`_set_spec`).
        self._per_block = [self.BLOCK, self.BLOCK]
        self._blocks: list[list[np.ndarray]] = [[], []]
        self._own: list[dict[int, object]] = [{}, {}]
        #: Rows appended and not yet copied into the columns (`_copy_pending`).
        self._pending: list[tuple[Any, ...] | BlockRow] = []
        #: What the rule reads of each document, and its write order, one array a field (`_SCALARS`), grown
        #: by doubling; ``_kept[:, c]``: the array field c is kept by position (`_own`), not in the blocks.
        self._scalars = {name: np.zeros(0, dtype=dtype) for name, dtype in self._SCALARS}
        self._kept = np.zeros((0, 2), dtype=bool)
        #: Positions whose SimHash, length, n-gram count or write order is no int that fits its array (None,
        #: or a SimHash wider than 64 bits): the rule reads those from the document (`sketches`).
        self._odd: set[int] = set()

    def __len__(self) -> int:
        return len(self._rows) + len(self._pending)

    def append(self, doc: StoredDoc) -> None:
        self.append_row(self._fields(doc))

    def append_row(self, values: tuple[Any, ...]) -> None:
        """Append the document whose fields, in `StoredDoc`'s order, are ``values``."""
        self.append_rows((values,))

    def append_rows(self, rows: Sequence[tuple[Any, ...] | BlockRow]) -> None:
        """Append the documents whose fields, in `StoredDoc`'s order, are ``rows``, or whose fingerprints are
        rows of their batch's arrays (`BlockRow`): copied into the columns with those appended before them,
        `_copy_pending`, a block at most at a time."""
        self._pending.extend(rows)
        if len(self._pending) >= self.BLOCK:
            self._copy_pending()

    def _copy_pending(self) -> None:
        """Copy the rows appended since the documents were last read into the columns, the arrays that fit
        the blocks in one step a block. Done when a document is next read, not at each append: the documents
        of a batch whose keys may crowd come one at a time (`RunIndex.add_row`), and a row's own numpy
        steps cost some 20 µs a document."""
        pending, self._pending = self._pending, []
        for from_block, run in groupby(pending, key=_is_block_row):
            if not from_block:
                self._copy_rows(list(run))
                continue
            for block, rows in groupby(run, key=itemgetter(0)):
                self._copy_block(block, list(rows))  # type: ignore[arg-type]

    def _copy_rows(self, rows: list[tuple[Any, ...]]) -> None:
        """Copy documents given by their fields (see `_copy_pending`)."""
        start = len(self._rows)
        self._copy_scalars(rows, start)
        lists = [list(values) for values in rows]
        for c, at in enumerate(self._ARRAYS):
            arrays = [row[at] for row in lists]
            for row in lists:
                row[at] = None
            spec = self._spec[c]
            if spec is None:
                first = next((a for a in arrays if isinstance(a, np.ndarray)), None)
                if first is not None:
                    spec = self._set_spec(c, first.shape, first.dtype)
            fit = [] if spec is None else [k for k, a in enumerate(arrays) if _fits(a, spec) and not is_zero_vector(a)]
            if len(fit) < len(arrays):
                fitting = set(fit)
                self._kept[start:start + len(arrays), c] = [k not in fitting for k in range(len(arrays))]
                self._own[c].update((start + k, a) for k, a in enumerate(arrays) if k not in fitting)
            if fit:
                # 1-D arrays (vectors, signatures) joined end to end: np.stack costs twice as much a row.
                assert spec is not None
                stacked = (np.concatenate([arrays[k] for k in fit]).reshape(len(fit), *spec[0]) if len(spec[0]) == 1
                           else np.stack([arrays[k] for k in fit]))
                self._put(c, np.array(fit) + start, stacked)
        self._rows.extend(map(tuple, lists))

    def _copy_block(self, block: FingerprintBlock, rows: list[BlockRow]) -> None:
        """Copy documents whose fingerprints are rows of one batch's arrays (see `_copy_pending`): each field
        in one step, the same values `_copy_rows` copies from the `Fingerprint` made of that row."""
        start, n = len(self._rows), len(rows)
        _, places, ids, sha1s, seqs, roots = zip(*rows, strict=True)
        at = np.array(places, dtype=np.int64)
        self._grow(start + n)
        cols, end = self._scalars, start + n
        self._kept[start:end] = False
        cols["idhash"][start:end] = list(map(hash, ids))
        cols["seq"][start:end] = seqs
        simhash, chars, shingles, empty = block.simhash[at], block.chars[at], block.shingles[at], block.empties[at]
        cols["simhash"][start:end] = simhash
        cols["chars"][start:end] = chars
        cols["shingles"][start:end] = shingles
        cols["empty"][start:end] = empty
        for c, (stacked, where, missing) in enumerate(((block.vectors, block.vector_row[at], block.zero),
                                                       (block.sigs, block.sig_row[at], None))):
            spec = self._spec[c]
            if spec is None and stacked is not None and len(stacked):
                spec = self._set_spec(c, stacked.shape[1:], stacked.dtype)
            has = where >= 0
            if stacked is None or spec is None or stacked.shape[1:] != spec[0] or stacked.dtype != spec[1]:
                has[:] = False  # none of the shape the blocks hold: each kept by position
            kept = np.flatnonzero(~has)
            if len(kept):
                self._kept[start + kept, c] = True
                none = where[kept] < 0
                self._own[c].update(zip((start + kept).tolist(), repeat(missing)) if none.all() else
                                    ((start + k, missing if lacks else stacked[where[k]])  # type: ignore[index]
                                     for k, lacks in zip(kept.tolist(), none.tolist(), strict=True)))
            if has.any():
                assert stacked is not None
                rows_of = where[has]
                first, last = int(rows_of[0]), int(rows_of[-1])
                # A view where the rows are consecutive in the batch's array (most batches: every one of them).
                values = stacked[first:last + 1] if last - first + 1 == len(rows_of) else stacked[rows_of]
                self._put(c, np.flatnonzero(has) + start, values)
        root_ids = [root[1] for root in roots]
        duplicate_of = [None if r == i else r for r, i in zip(root_ids, ids, strict=True)]
        self._rows.extend(zip(ids, simhash.tolist(), repeat(None), empty.tolist(), block.lengths[at].tolist(),
                              chars.tolist(), root_ids, duplicate_of, repeat(None), shingles.tolist(), seqs,
                              [root[0] for root in roots], repeat(None), sha1s))

    def _put(self, c: int, at_rows: np.ndarray, values: np.ndarray) -> None:
        """Write ``values`` (stacked) into array field ``c``'s blocks at positions ``at_rows`` (ascending)."""
        spec = self._spec[c]
        assert spec is not None
        blocks, per = self._blocks[c], self._per_block[c]
        while len(blocks) <= int(at_rows[-1]) // per:
            blocks.append(np.empty((per, *spec[0]), dtype=spec[1]))
        first, last = int(at_rows[0]), int(at_rows[-1])
        if last - first + 1 == len(at_rows):  # consecutive positions: copied a slice a block
            for b in range(first // per, last // per + 1):
                lo, hi = max(first, b * per), min(last + 1, (b + 1) * per)
                blocks[b][lo - b * per:hi - b * per] = values[lo - first:hi - first]
            return
        of_block = at_rows // per
        for b in range(int(of_block[0]), int(of_block[-1]) + 1):
            these = of_block == b
            blocks[b][at_rows[these] % per] = values[these]

    def _set_spec(self, c: int, shape: tuple[int, ...], dtype: np.dtype) -> tuple[tuple[int, ...], np.dtype]:
        """Array field ``c``'s shape and dtype in the blocks, and so the rows a block holds: a power of two, the
        block under `BLOCK_BYTES`."""
        row_bytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        per = self.BLOCK
        while per > 1 and per * row_bytes >= self.BLOCK_BYTES:
            per //= 2
        self._per_block[c] = per
        spec = self._spec[c] = (shape, dtype)
        return spec

    def __getitem__(self, p: int) -> StoredDoc:
        self._settle(p)
        row = list(self._rows[p])
        for c, at in enumerate(self._ARRAYS):
            own = self._own[c]
            per = self._per_block[c]
            row[at] = own[p] if p in own else self._blocks[c][p // per][p % per]
        return StoredDoc(*row)  # type: ignore[arg-type]

    def ids(self) -> list[str]:
        if self._pending:
            self._copy_pending()
        return [row[self._ID] for row in self._rows]  # type: ignore[misc]

    def _copy_scalars(self, rows: Sequence[tuple[Any, ...]], start: int) -> None:
        """Copy the scalar fields of ``rows`` (positions from ``start``) into their arrays."""
        end = start + len(rows)
        self._grow(end)
        self._kept[start:end] = False
        cols = self._scalars
        cols["idhash"][start:end] = [hash(row[self._ID]) for row in rows]
        for name, at in self._AT.items():
            try:
                cols[name][start:end] = [row[at] for row in rows]
            except (OverflowError, TypeError, ValueError):  # one row at a time: which of them does not fit
                for k, row in enumerate(rows):
                    try:
                        cols[name][start + k] = row[at]
                    except (OverflowError, TypeError, ValueError):
                        cols[name][start + k] = 0
                        self._odd.add(start + k)

    def _grow(self, end: int) -> None:
        """Make room in the scalar arrays for ``end`` documents (doubling)."""
        if end <= len(self._kept):
            return
        size = max(end, 2 * len(self._kept), 1024)
        for name, col in self._scalars.items():
            grown = np.zeros(size, dtype=col.dtype)
            grown[:len(col)] = col
            self._scalars[name] = grown
        kept = np.zeros((size, 2), dtype=bool)
        kept[:len(self._kept)] = self._kept
        self._kept = kept

    def seqs(self, positions: np.ndarray) -> np.ndarray:
        """The write order (``seq``) of the documents at ``positions``."""
        self._settle_for(positions)
        out = self._scalars["seq"][positions]
        for x in self._odd_of(positions):
            out[x] = self[int(positions[x])].seq
        return out

    def empties(self, positions: np.ndarray) -> np.ndarray:
        """Whether each document of ``positions`` is a text without words."""
        self._settle_for(positions)
        return self._scalars["empty"][positions]

    def id_hashes(self, positions: np.ndarray) -> np.ndarray:
        """Python's ``hash`` of each id of ``positions`` (equal ids, equal hashes; the converse is checked)."""
        self._settle_for(positions)
        return self._scalars["idhash"][positions]

    def roots(self, positions: Sequence[int]) -> list[Root]:
        """`StoredDoc.root` of the documents at ``positions``, read from their rows (no document made)."""
        if positions:
            self._settle(max(positions))
        rows = self._rows
        i, seq, cluster, cluster_seq = self._ROOT
        return [root_of(row[i], row[seq], row[cluster], row[cluster_seq])  # type: ignore[arg-type]
                for row in map(rows.__getitem__, positions)]

    def id_at(self, p: int) -> str:
        self._settle(p)
        return self._rows[p][self._ID]  # type: ignore[return-value]

    def _settle(self, p: int) -> None:
        """Copy the pending rows into the columns if position ``p`` is among them: a batch's labelling reads
        the documents from before the batch while it appends its own (one at a time, each copy a few numpy
        steps)."""
        if self._pending and p >= len(self._rows):
            self._copy_pending()

    def _settle_for(self, positions: np.ndarray) -> None:
        if self._pending and len(positions):
            self._settle(int(positions.max()))

    def _odd_of(self, positions: np.ndarray) -> list[int]:
        """Which of ``positions`` (their indexes in it) are odd (`_odd`)."""
        if not self._odd:
            return []
        odd = self._odd
        return [x for x, p in enumerate(positions.tolist()) if p in odd]

    def sketches(self, positions: np.ndarray, perm: int) -> RunSketches:
        """What the rule reads of the documents at ``positions`` (distinct), as `RunSketches`: signatures of
        ``perm`` values (the config's length) as rows, zeros where a document carries none of that length."""
        self._settle_for(positions)
        cols = self._scalars
        kept = self._kept[positions]
        simhash: list[int | None] = cols["simhash"][positions].tolist()
        chars: list[int | None] = cols["chars"][positions].tolist()
        shingles = cols["shingles"][positions]
        empty = cols["empty"][positions]
        n = len(positions)
        # Signatures: those in the blocks (all of one shape) are of the config's length or none is.
        sigs = np.zeros((n, perm), dtype=np.uint32)
        in_blocks = ~kept[:, 1]
        spec = self._spec[1]
        full = in_blocks & (spec is not None and spec[0] == (perm,))
        if full.any():
            sigs[full] = self._block_rows(1, positions[full])
        signed = in_blocks & (shingles > 0)
        for x in np.flatnonzero(~in_blocks).tolist():
            sig: Any = self._own[1][int(positions[x])]
            if sig is not None and shingles[x] > 0:
                signed[x] = True
                if len(sig) == perm:
                    full[x] = True
                    sigs[x] = sig
        full &= signed
        has_vector = ~kept[:, 0]
        for x in np.flatnonzero(kept[:, 0]).tolist():
            has_vector[x] = self._own[0][int(positions[x])] is not None
        for x in self._odd_of(positions):  # read from the document itself
            doc = self[int(positions[x])]
            simhash[x], chars[x], shingles[x] = doc.simhash, doc.chars, doc.shingles
            signed[x] = doc.minhash is not None and doc.shingles > 0
            full[x] = signed[x] and len(doc.minhash) == perm  # type: ignore[arg-type]
            if full[x]:
                sigs[x] = doc.minhash  # type: ignore[assignment]
        return RunSketches(simhash, chars, shingles, empty, sigs, signed, full, has_vector,
                           lambda: self._vector_rows(positions, kept[:, 0]))

    def _block_rows(self, c: int, positions: np.ndarray) -> np.ndarray:
        """The rows of array field ``c`` of ``positions`` (each in the blocks)."""
        spec = self._spec[c]
        assert spec is not None
        out = np.empty((len(positions), *spec[0]), dtype=spec[1])
        per = self._per_block[c]
        block = positions // per
        for b in unique_sorted(block).tolist():
            these = block == b
            out[these] = self._blocks[c][b][positions[these] % per]
        return out

    def _vector_rows(self, positions: np.ndarray, kept: np.ndarray) -> list[np.ndarray | None]:
        """The vectors of ``positions``: rows of the blocks, or the arrays kept by position (None: none)."""
        out: list[np.ndarray | None] = list(self._block_rows(0, positions[~kept])) if (~kept).any() else []
        if not kept.any():
            return out
        rows = iter(out)
        own: dict[int, Any] = self._own[0]
        return [own[int(p)] if k else next(rows) for p, k in zip(positions.tolist(), kept.tolist(),
                                                                         strict=True)]


@dataclass
class RunSketches:
    """What the rule reads of some of the run's documents (`DocColumns.sketches`), row x for the x-th: what
    `esdedup.match.measures.SketchColumns.from_parts` takes, and ``empty`` (a text without words)."""

    simhash: list[int | None]
    chars: list[int | None]
    shingles: np.ndarray
    empty: np.ndarray
    sigs: np.ndarray
    signed: np.ndarray
    full: np.ndarray
    has_vector: np.ndarray
    #: The vectors (None where a document has none), or one array of them, read when a cosine is first wanted.
    vectors: Callable[[], list[np.ndarray | None] | np.ndarray]
