"""Candidate pairs joined in memory from the columns of a store's signed documents (`SignedColumns`): the
MinHash LSH bands (`lsh_pair_indices`) and, where every document holding a SimHash band key is among the
columns, the SimHash band keys too (`band_pair_indices`). The all-pairs form of looking each key up: the store's
key groups (`esdedup.store.base.KeyScans.key_batches`) give the same pairs, a Python step a group."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from esdedup.fingerprint.bands import BandLayout
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.minhash import lsh_keys
from esdedup.match import native_kernels
from esdedup.match.measures import SketchColumns
from esdedup.store.base import ScannableStore
from esdedup.store.columns import SignatureColumns, reads_signature_columns
from esdedup.util.arrays import union_sorted, unique_sorted
from esdedup.util.collector import fewer_collections

log = logging.getLogger(__name__)

#: The warning for a band key held by ``max_bucket`` documents or more, of which only that many were paired (its
#: key, then ``max_bucket`` twice), whichever join meets it.
CROWDED_BAND_KEY = ("band value %s is shared by %d or more documents; only %d were compared (boilerplate? see the "
                    "index's crowded band values)")


@dataclass
class SignedColumns:
    """The stored documents with a MinHash signature (of the config's length), ids sorted: their ids, lengths
    and SimHashes, and their sketches as arrays (the documents themselves are not kept; their vectors are
    stacked only when a cosine is wanted). ``banded_elsewhere``: the stored documents holding SimHash band
    keys that are not among them (`SignatureColumns.banded_elsewhere`)."""

    ids: list[str]
    chars: list[int]
    simhash: list[int]
    sketches: SketchColumns
    banded_elsewhere: int

    @classmethod
    def of(cls, store: ScannableStore) -> SignedColumns:
        config = store.config
        with fewer_collections():  # every stored document is read and held before the join
            if reads_signature_columns(store):
                read = store.signature_columns(config.minhash_perm)
            else:
                read = SignatureColumns.of((d for batch in store.scan() for d in batch), config)
        every = np.ones(len(read.ids), dtype=bool)
        sketches = SketchColumns.from_parts(config, simhash=read.simhash, sigs=read.sigs, signed=every, full=every,
                                            shingles=read.shingles, chars=read.chars, has_vector=every,
                                            vectors=read.vectors)
        return cls(read.ids, read.chars, read.simhash, sketches, read.banded_elsewhere)


@dataclass
class JoinedCrowds:
    """The crowded keys an all-pairs search met joining keys in memory, as (key, documents holding it): those of
    the LSH bands, and with ``bands`` (it joined the band keys too) those of the band keys, which the store then
    need not count (`esdedup.match.pairs.crowded_values`)."""

    keys: list[tuple[str, int]] = field(default_factory=list)
    bands: bool = False


@dataclass(frozen=True)
class MemoryJoin:
    """The signed documents' columns and the candidate pairs among them (rows ``left[x] < right[x]``, sorted,
    each once): those of the LSH bands, and with ``bands`` those of the SimHash band keys too, whose key groups
    the store then need not give (`joins_bands`)."""

    cols: SignedColumns
    left: np.ndarray
    right: np.ndarray
    bands: bool


def join_in_memory(store: ScannableStore, max_bucket: int, crowded: JoinedCrowds | None) -> MemoryJoin:
    """The columns of the store's signed documents (read at once) and the candidate pairs of their LSH bands
    (`lsh_pair_indices`), and of their SimHash band keys where `joins_bands` says so (`band_pair_indices`);
    ``crowded`` receives the crowded keys of what was joined."""
    config = store.config
    cols = SignedColumns.of(store)
    sigs = cols.sketches.sigs
    groups: list[tuple[int, int, int]] = []
    left, right = lsh_pair_indices(sigs, config.minhash_bands, config.minhash_rows, max_bucket=max_bucket,
                                   crowded=groups)
    if crowded is not None:
        crowded.keys.extend((lsh_keys(sigs[row], config.minhash_bands, config.minhash_rows)[band], n)
                            for band, row, n in groups)
    bands = joins_bands(config, cols.banded_elsewhere)
    if bands:
        band_left, band_right = band_pair_indices(config.band_layout(), cols.simhash, cols.sketches.banded,
                                                  max_bucket=max_bucket,
                                                  crowded=None if crowded is None else crowded.keys)
        if crowded is not None:
            crowded.bands = True
        n = len(cols.ids)
        left, right = np.divmod(union_sorted(left * n + right, band_left * n + band_right), n)
    return MemoryJoin(cols, left, right, bands)


def joins_bands(config: FingerprintConfig, banded_elsewhere: int) -> bool:
    """Whether all-pairs search joins the SimHash band keys in memory with the LSH bands: when the layout
    probes no neighbouring keys (those are joined by `esdedup.match.pairs.probe_pairs`) and every document
    holding a band key is among the signed columns (``banded_elsewhere`` 0: under ``auto`` a text with words
    and no n-gram has no signature)."""
    return config.band_layout().radius == 0 and banded_elsewhere == 0


def band_pair_indices(layout: BandLayout, simhashes: list[int], banded: np.ndarray, *, max_bucket: int = 1000,
                      crowded: list[tuple[str, int]] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Row pairs ``(left[x], right[x])``, left < right, sorted, each once, of the rows with SimHash band keys
    (``banded``) that share one: the key of a table is its blocks of the SimHash (`BandLayout.key_values_many`),
    joined as a band of `lsh_pair_indices` is (two rows of 32 bits for a key wider than 32). Per key only its
    first ``max_bucket`` rows are paired, and a key held by that many or more is logged, as the store's key
    groups are (`esdedup.match.pairs._PairScorer.key_groups`); ``crowded`` receives those, as (key, rows)."""
    rows = np.flatnonzero(banded)
    empty = np.zeros(0, dtype=np.int64)
    if len(rows) < 2:
        return empty, empty
    picked = [simhashes[r] for r in rows.tolist()]
    keys = np.asarray(layout.key_values_many(np.array(picked, dtype=np.uint64) if layout.bits == 64 else picked),
                      dtype=np.uint64)
    wide = max(layout.key_widths) > 32
    values = (np.ascontiguousarray(keys, dtype="<u8").view("<u4").reshape(len(rows), 2 * layout.n_tables) if wide
              else keys.astype(np.uint32))
    left, right, found, _ = _equal_bands(values, layout.n_tables, 2 if wide else 1, max_bucket)
    for table, row, n in found:
        key = layout.format_key(table, int(keys[row, table]))
        log.warning(CROWDED_BAND_KEY, key, max_bucket, max_bucket)
        if crowded is not None:
            crowded.append((key, n))
    return rows[left], rows[right]


def lsh_pair_indices(sigs: np.ndarray, bands: int, rows: int, *, max_bucket: int = 1000,
                     crowded: list[tuple[int, int, int]] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Row pairs ``(left[x], right[x])``, left < right, sorted, each once, whose signatures (a (rows, perm)
    uint32 array) agree on every row of at least one LSH band (``bands`` bands of ``rows`` values, as
    `esdedup.fingerprint.minhash.lsh_key_values` cuts them): the all-pairs form of looking up each LSH key.
    Per band value only its first ``max_bucket`` rows are paired (logged), as `esdedup.store.base.shared_keys`
    cuts a group. ``crowded`` receives (band, first row, rows) of each band value held by ``max_bucket`` rows
    or more, by band then first row. By the native core when it is in use (`esdedup.match.native_kernels.lsh_pairs`),
    else in numpy; the two give the same pairs."""
    n, perm = sigs.shape
    empty = np.zeros(0, dtype=np.int64)
    if n < 2:
        return empty, empty
    if bands < 1 or rows < 1 or bands * rows > perm:
        raise ValueError(f"{bands} bands of {rows} rows need {bands * rows} signature values, the signatures "
                         f"have {perm}")
    left, right, found, capped = _equal_bands(sigs, bands, rows, max_bucket)
    if crowded is not None:
        crowded.extend(found)
    if capped:
        log.warning("%d LSH band values are shared by more than %d documents; only %d of each were compared "
                    "(boilerplate? see the index's crowded band values)", capped, max_bucket, max_bucket)
    return left, right


def _equal_bands(values: np.ndarray, bands: int, rows: int, max_bucket: int) -> native_kernels.LshJoin:
    """The row pairs of ``values`` (a (rows, bands x rows) uint32 array) equal on every value of a band, the
    crowded band values and how many were cut (`lsh_pair_indices`): by the native core when it is in use,
    else in numpy."""
    joined = native_kernels.lsh_pairs(values, bands, rows, max_bucket)
    return joined if joined is not None else _lsh_join_numpy(values, bands, rows, max_bucket)


def _band_groups(block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows of a band's values (``block``, one row a signature, uint32) ordered by value, rows ascending
    within a value (stable), and a key of each in that order: equal exactly where their values are."""
    n, width = block.shape
    bits = 16 if int(block.max(initial=0)) <= 0xFFFF else 32
    key: np.ndarray
    if width * bits <= 64:
        # The band's values packed into one integer.
        key = np.zeros(n, dtype=np.uint64)
        for r in range(width):
            key |= block[:, r].astype(np.uint64) << np.uint64(bits * r)
    else:
        values = np.ascontiguousarray(block, dtype="<u4").view(np.dtype((np.void, 4 * width))).ravel()
        key = np.unique(values, return_inverse=True)[1].ravel()
    order = np.argsort(key, kind="stable")
    return order, key[order]


def _lsh_join_numpy(sigs: np.ndarray, bands: int, rows: int, max_bucket: int
                    ) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int, int]], int]:
    """`lsh_pair_indices` in numpy: the pairs, the crowded values and how many band values were cut."""
    n = sigs.shape[0]
    codes: list[np.ndarray] = []
    crowded: list[tuple[int, int, int]] = []
    capped = 0
    for band in range(bands):
        order, group = _band_groups(sigs[:, band * rows:(band + 1) * rows])
        starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
        sizes = np.diff(np.r_[starts, n])
        shared = sizes > 1
        if not shared.any():
            continue
        keep = np.repeat(shared, sizes)
        members = order[keep]
        starts, sizes = np.cumsum(np.r_[0, sizes[shared][:-1]]), sizes[shared]
        capped += int((sizes > max_bucket).sum())
        many = np.flatnonzero(sizes >= max_bucket)
        crowded.extend(sorted((band, int(members[starts[g]]), int(sizes[g])) for g in many))
        pos = np.arange(len(members)) - np.repeat(starts, sizes)  # rank of each member in its group
        size_of = np.repeat(np.minimum(sizes, max_bucket), sizes)
        live = pos < size_of
        # Pair each member with the one `step` places later in its group, for every step the group has.
        for step in range(1, int(size_of.max())):
            left = np.flatnonzero(live & (pos + step < size_of))
            if not len(left):
                break
            codes.append(members[left].astype(np.int64) * n + members[left + step].astype(np.int64))
        if len(codes) > 64:
            codes = [unique_sorted(np.concatenate(codes))]
    if not codes:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, crowded, capped
    left, right = np.divmod(unique_sorted(np.concatenate(codes)), n)
    return left, right, crowded, capped


