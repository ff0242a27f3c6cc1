"""The native steps of ingest (in the extension that `esdedup.util.native` loads), beside
`esdedup.ingest.runindex`, whose Python tables stay the definition: the run index's key table (`run_keys`),
the run keys' hashes (`key_hashes`), and the frozen keys' merge (`merge_frozen`) and lookup (`frozen_lookup`).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from esdedup.util import native


def run_keys(per_key: int) -> RunKeysTable | None:
    """The run index's key table in the extension (`esdedup.ingest.runindex._KeyTable`'s methods: key hash ->
    the first ``per_key`` positions holding it), or None when the extension is not in use."""
    if not native.enabled():
        return None
    return RunKeysTable(native.loaded().RunKeys(per_key))


class RunKeysTable:
    """The extension's table, its entries read as numpy arrays."""

    def __init__(self, table: Any) -> None:
        self._table = table
        self.add = table.add

    def held_counts(self, hashes: np.ndarray) -> np.ndarray:
        return np.frombuffer(self._table.held_counts(_le_bytes(hashes)), dtype="<u4").astype(np.uint32)

    def fits(self, hashes: np.ndarray) -> bool:
        return self._table.fits(_le_bytes(hashes))  # type: ignore[no-any-return]

    def add_many(self, positions: Sequence[int], hashes: np.ndarray, counts: Sequence[int]) -> list[tuple[int, int]]:
        return self._table.add_many(list(positions), _le_bytes(hashes), list(counts))  # type: ignore[no-any-return]

    def lookup_many(self, hashes: np.ndarray, counts: Sequence[int]) -> list[list[int]]:
        return self._table.lookup_many(_le_bytes(hashes), list(counts))  # type: ignore[no-any-return]

    def entries(self) -> tuple[np.ndarray, np.ndarray]:
        hashes, positions = self._table.entries()
        return np.frombuffer(hashes, dtype="<u8").astype(np.uint64), np.frombuffer(positions, dtype="<u4").astype(
            np.uint32)

    def __len__(self) -> int:
        return len(self._table)


def _le_bytes(hashes: np.ndarray) -> bytes:
    """uint64 hashes as the extension reads them: little-endian bytes."""
    return np.ascontiguousarray(hashes, dtype="<u8").tobytes()


def key_hashes(keys: Sequence[str]) -> np.ndarray | None:
    """`esdedup.ingest.runindex.key_hashes` of ``keys`` in the extension (a uint64 array), or None when the
    extension is not in use or a key is not valid UTF-8 (a lone surrogate: Python hashes those)."""
    if not native.enabled():
        return None
    try:
        hashed = native.loaded().key_hashes(list(keys))
    except UnicodeEncodeError:
        return None
    return np.frombuffer(hashed, dtype="<u8").astype(np.uint64)


def in_use() -> bool:
    """Whether the extension is in use."""
    return native.enabled()


def bucket_starts(hashes: np.ndarray) -> np.ndarray:
    """Where each bucket of the sorted uint64 table ``hashes`` starts, and its end (uint64): the buckets that
    `frozen_lookup` reads a table through."""
    starts = native.loaded().bucket_starts(np.ascontiguousarray(hashes, dtype=np.uint64))
    return np.frombuffer(starts, dtype="<u8").astype(np.uint64)


def merge_frozen(table_hashes: np.ndarray, table_ords: np.ndarray, old: int, hashes: np.ndarray,
                 ords: np.ndarray) -> None:
    """`esdedup.ingest.runindex.FrozenKeys._merge` in the extension: the window's entries (``hashes``,
    ``ords``) merged into the table's arrays in place, which hold its ``old`` entries and room for them."""
    if table_hashes.dtype != np.uint64 or table_ords.dtype != np.uint32:
        raise TypeError("merge_frozen writes into the table's own uint64 and uint32 arrays")
    native.loaded().merge_frozen(table_hashes, table_ords, old, np.ascontiguousarray(hashes, dtype=np.uint64),
                                 np.ascontiguousarray(ords, dtype=np.uint32))


def frozen_lookup(hashes: np.ndarray, ords: np.ndarray, starts: np.ndarray, queries: np.ndarray,
                  counts: Sequence[int], per_key: int, per_record: int) -> tuple[np.ndarray, np.ndarray]:
    """`esdedup.ingest.runindex.FrozenKeys._pairs` in the extension: the (record, ordinal) pairs of a lookup of
    the frozen table (``hashes``, ``ords``, its `bucket_starts` ``starts``) by ``queries`` (``counts[r]`` of
    record r's), as int64 and uint64 arrays."""
    records, ordinals = native.loaded().frozen_lookup(
        np.ascontiguousarray(hashes, dtype=np.uint64), np.ascontiguousarray(ords, dtype=np.uint32),
        np.ascontiguousarray(starts, dtype=np.uint64), np.ascontiguousarray(queries, dtype=np.uint64),
        list(counts), max(per_key, 0), max(per_record, 0))
    return (np.frombuffer(records, dtype="<i8").astype(np.int64),
            np.frombuffer(ordinals, dtype="<u4").astype(np.uint64))


def batch_peers(probes: np.ndarray, probe_counts: Sequence[int], holds: np.ndarray, hold_counts: Sequence[int],
                per_key: int) -> tuple[list[list[int]], np.ndarray, np.ndarray] | None:
    """`esdedup.ingest.labels.batch_peers` in the extension (the records' probed and held key hashes, flat,
    with each record's count): each record's peers, and the records and key hashes of each (record, key) past
    the key's first holders; None when the extension is not in use."""
    if not native.enabled():
        return None
    peers, records, keys = native.loaded().batch_peers(
        np.ascontiguousarray(probes, dtype=np.uint64), list(probe_counts),
        np.ascontiguousarray(holds, dtype=np.uint64), list(hold_counts), per_key)
    return peers, np.frombuffer(records, dtype="<u4"), np.frombuffer(keys, dtype="<u8")
