"""What a batch ingest remembers of the documents it wrote, to label duplicates among its own records without
asking the store: the run index of the current window (`RunIndex`: band key -> documents, with their
fingerprints), and the keys of the windows before it, frozen into sorted numpy arrays (`FrozenKeys`: band key
-> document ids, about 250 bytes a document instead of about 2.5 KB in the run index).

Besides the band keys, what the run needs to label as one that kept everything in memory would: the cluster
merges it made (`ClusterRoots`: a union-find over representatives, the earliest by write order winning), and
the ids it wrote in its earlier windows with their content SHA-1 (`EarlierWrites`).

No store: `esdedup.ingest.window` decides when a window is frozen and fetches the documents a frozen lookup names.
Everything is in memory but `EarlierWrites`, which keeps its ids in a private temporary SQLite file (a run of
any length knows every id it wrote).
"""
from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import chain, islice, repeat
from typing import Any

import numpy as np

from esdedup.errors import OutputError
from esdedup.fingerprint.minhash import mix64
from esdedup.ingest import native_keys
from esdedup.ingest.doccolumns import DocColumns
from esdedup.store.base import Root, StoredDoc
from esdedup.util.arrays import member_of, unique_sorted

#: Documents of a run the in-run index keeps per band key. A key held by more (boilerplate, or thousands of
#: copies of one text) is crowded: its first documents stand for it. Near-duplicates share several keys,
#: so a document still finds its cluster through them, and the run stays linear in its documents.
MAX_PER_KEY = 32


def held_keys(bands: list[str], lsh: list[str], empty: bool, sha1: str) -> list[str]:
    """The keys this run's memory (run index, frozen keys) holds a record under: its band and LSH keys; a
    text without words, which has none, its content SHA-1, since its exact copies are its only duplicates
    (rule 0 of `esdedup.match.rule`)."""
    return [f"content_sha1:{sha1}"] if empty else bands + lsh


def run_starts(counts: Sequence[int]) -> np.ndarray:
    """Where each of consecutive runs of ``counts`` items starts in their flat list, and the end (int64)."""
    at = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=at[1:])
    return at


def run_positions(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The positions ``starts[i]``, ``starts[i] + 1``, ... of ``counts[i]`` items each, one run after the other,
    flat: where runs picked out of a flat list are, to gather them in one step."""
    return np.repeat(starts - (np.cumsum(counts) - counts), counts) + np.arange(int(np.sum(counts)))


def counts_kept(counts: Sequence[int], kept: np.ndarray) -> list[int]:
    """How many of each of consecutive runs of ``counts`` items the mask ``kept`` (of their flat list) keeps."""
    return np.bincount(np.repeat(np.arange(len(counts)), counts)[kept], minlength=len(counts)).tolist()  # type: ignore[no-any-return]


@dataclass(frozen=True, eq=False)
class HeldHashes:
    """The `key_hashes` of each text's `held_keys` for a batch of texts, flat, and where each text's start (one
    more: the end): made where the texts were fingerprinted, one for the batch, each record knowing its row."""

    hashes: np.ndarray  # uint64
    offsets: np.ndarray  # int64

    @classmethod
    def counted(cls, hashes: np.ndarray, counts: Sequence[int]) -> HeldHashes:
        """The hashes of texts holding ``counts[t]`` of ``hashes`` each, in turn."""
        return cls(hashes, run_starts(counts))

    def of_rows(self, rows: Sequence[int]) -> tuple[np.ndarray, list[int]]:
        """The hashes of the texts at ``rows``, flat in that order, and how many each has."""
        at = np.asarray(rows, dtype=np.int64)
        starts = self.offsets[at]
        counts = self.offsets[at + 1] - starts
        if len(at) == len(self.offsets) - 1 and (at == np.arange(len(at))).all():  # the whole batch (most)
            return self.hashes, counts.tolist()
        return self.hashes[run_positions(starts, counts)], counts.tolist()

    def __len__(self) -> int:
        return len(self.offsets) - 1


class KeyLists:
    """Each record's run keys (strings) and their hashes (`key_hashes`, flat, ``counts[r]`` of record r's):
    what the run index and the frozen keys look a batch up by. Made from the keys, or from their hashes
    (`hashed`), when the strings are made only where a key is named (a crowded one)."""

    def __init__(self, keys: list[list[str]]) -> None:
        #: Record r's keys.
        self.keys_of: Callable[[int], list[str]] = keys.__getitem__
        self.counts = [len(k) for k in keys]
        self.hashes = key_hashes([k for ks in keys for k in ks])

    @classmethod
    def hashed(cls, hashes: np.ndarray, counts: list[int], keys_of: Callable[[int], list[str]]) -> KeyLists:
        """The key lists whose `key_hashes` are ``hashes`` (``counts[r]`` of record r's, flat);
        ``keys_of(r)``: record r's keys."""
        lists = cls.__new__(cls)
        lists.keys_of, lists.counts, lists.hashes = keys_of, counts, hashes
        return lists

    @cached_property
    def flat(self) -> list[int]:
        """`hashes` as ints."""
        return self.hashes.tolist()

    def per_record(self) -> list[list[int]]:
        """Each record's key hashes, as ints."""
        flat = iter(self.flat)
        return [list(islice(flat, n)) for n in self.counts]


class _KeyTable:
    """Key hash -> positions of the run's documents holding it, at most ``per_key``, the first added: the
    run index's table when the native core is not in use (`esdedup.ingest.native_keys.run_keys`, the same
    table in the extension). Only ints, in dicts and (rare) small lists: a run adds some 20 keys a
    document, and a million small lists would make every garbage-collector pass crawl through them."""

    def __init__(self, per_key: int) -> None:
        self.first: dict[int, int] = {}
        self.more: dict[int, list[int]] = {}
        self.per_key = per_key

    def add(self, position: int, hashes: Sequence[int]) -> list[int]:
        crowded = []
        first = self.first
        for x, h in enumerate(hashes):
            if first.setdefault(h, position) != position:
                more = self.more.setdefault(h, [])
                if len(more) + 1 < self.per_key:
                    more.append(position)
                else:
                    crowded.append(x)
        return crowded

    def held_counts(self, hashes: np.ndarray) -> np.ndarray:
        first, more = self.first, self.more
        return np.array([1 + len(more.get(h, ())) if h in first else 0 for h in hashes.tolist()], dtype=np.uint32)

    def fits(self, hashes: np.ndarray) -> bool:
        """Whether documents holding ``hashes`` (a hash as often as they hold it) would each be held under
        every one: no hash's positions held now and its count in ``hashes`` come to more than ``per_key``."""
        distinct, occurrences = np.unique(hashes, return_counts=True)
        return bool(np.all(self.held_counts(distinct).astype(np.int64) + occurrences <= self.per_key))

    def add_many(self, positions: Sequence[int], hashes: np.ndarray, counts: Sequence[int]) -> list[tuple[int, int]]:
        flat = iter(hashes.tolist())
        return [(r, x) for r, (p, n) in enumerate(zip(positions, counts, strict=True))
                for x in self.add(p, list(islice(flat, n)))]

    def lookup_many(self, hashes: np.ndarray, counts: Sequence[int]) -> list[list[int]]:
        out = []
        flat = iter(hashes.tolist())
        first, more = self.first, self.more
        for n in counts:
            keys = list(islice(flat, n))
            found = {p for p in map(first.get, keys) if p is not None}
            if found and more:
                for h in keys:
                    if h in more:
                        found.update(more[h])
            out.append(sorted(found))
        return out

    def entries(self) -> tuple[np.ndarray, np.ndarray]:
        n = len(self)
        hashes = np.fromiter(chain(self.first, chain.from_iterable(repeat(h, len(m)) for h, m in self.more.items())),
                             dtype=np.uint64, count=n)
        positions = np.fromiter(chain(self.first.values(), chain.from_iterable(self.more.values())),
                                dtype=np.uint32, count=n)
        return hashes, positions

    def __len__(self) -> int:
        return len(self.first) + sum(map(len, self.more.values()))


#: The empty set the run's memory and labelling give for no hashes and no verdicts: one object, not one a record.
EMPTY: frozenset[int] = frozenset()
#: No key hashes (uint64), one array: never written to.
_NO_HASHES = np.zeros(0, dtype=np.uint64)
_NO_HASHES.flags.writeable = False


def _key_table() -> _KeyTable | native_keys.RunKeysTable:
    table = native_keys.run_keys(MAX_PER_KEY)
    return _KeyTable(MAX_PER_KEY) if table is None else table


class RunIndex:
    """Band key -> documents written in this run (since the store last made them searchable: at most about
    `esdedup.ingest.window.RUN_INDEX_MAX_DOCS`), so a run labels duplicates among its own records without waiting
    for the store to make them searchable. At most `MAX_PER_KEY` documents per key; ``crowded`` counts the
    documents of each key held by more.

    Keys are held by their 64-bit hash (`key_hashes`), as `FrozenKeys` holds them: two keys that share a hash
    only share candidates, which the rule then verifies."""

    def __init__(self, complete: bool = False, crowded: dict[str, int] | None = None) -> None:
        self.docs = DocColumns()
        self._table = _key_table()
        #: True when the store holds nothing this run did not write and that this index (with the run's
        #: frozen keys, if any) does not know.
        self.complete = complete
        #: Crowded keys of this run, with the count of each (``crowded``: carried over from the run's earlier
        #: run indexes; a key crowded there counts every document of this one that holds it).
        self.crowded: dict[str, int] = crowded if crowded is not None else {}
        self._carried = bool(self.crowded)
        #: The hashes of the keys of `crowded` (a key's string is made only when it is counted).
        self._crowded_hashes: set[int] = set(key_hashes(list(self.crowded)).tolist()) if self.crowded else set()
        #: Documents added by `add_all_later`, held once the index is next read (`_hold_queued`): rows, their hashes
        #: flat, and how many hashes each.
        self._queued: list[tuple[list[tuple[Any, ...]], np.ndarray, Sequence[int]]] = []

    def add(self, doc: StoredDoc, hashes: Sequence[int], names: Callable[[], Sequence[str]]) -> frozenset[int]:
        """Hold ``doc`` under the keys whose `key_hashes` are ``hashes`` (``names()``: those keys, in the same
        order, asked for only when a crowded key is counted); returns the hashes of those it is not held under
        (each held by `MAX_PER_KEY` documents already)."""
        return self.add_row(DocColumns._fields(doc), hashes, names)

    def add_row(self, row: tuple[Any, ...], hashes: Sequence[int], names: Callable[[], Sequence[str]]) -> frozenset[int]:
        """`add` of the document whose fields, in `StoredDoc`'s order, are ``row`` (no object made for it), or
        of a `esdedup.ingest.doccolumns.BlockRow`."""
        self._hold_queued()
        crowded_out = self._table.add(len(self.docs), hashes)
        self.docs.append_row(row)
        carried = self._carried and not self._crowded_hashes.isdisjoint(hashes)
        if not crowded_out and not carried:
            return EMPTY
        keys = names()
        out = set(crowded_out)
        for x in range(len(keys)) if carried else crowded_out:
            self._count_crowded(keys[x], hashes[x], x in out)
        return frozenset(hashes[x] for x in crowded_out) if crowded_out else EMPTY

    def _count_crowded(self, key: str, key_hash: int, crowded_out: bool) -> None:
        """Count a document added under ``key`` in `crowded`: one crowded out of it, or one held under a key
        crowded in the run's earlier run indexes (a key not crowded is not counted)."""
        if crowded_out:
            self.crowded[key] = self.crowded.get(key, MAX_PER_KEY) + 1
            self._crowded_hashes.add(key_hash)
        elif key in self.crowded:
            self.crowded[key] += 1

    def takes_whole(self, hashes: np.ndarray) -> np.ndarray | None:
        """Whether documents holding ``hashes`` (uint64: a batch's, flat, each hash as often as its documents
        hold it) may be added together (`add_all_later`), however many of them are added and in whatever order:
        the hashes of the keys they are all crowded out of, those held by `MAX_PER_KEY` documents already (often
        empty); None when some other key would reach more than `MAX_PER_KEY` documents with them (which of them
        it holds then depends on which are added: they are added one at a time, `add_row`)."""
        self._hold_queued()
        if not len(hashes) or self._table.fits(hashes):
            return _NO_HASHES
        full = self._table.held_counts(hashes) >= MAX_PER_KEY
        return unique_sorted(hashes[full]) if self._table.fits(hashes[~full]) else None

    def add_all_later(self, rows: list[tuple[Any, ...]], hashes: np.ndarray, counts: Sequence[int],
                      crowded_out: np.ndarray = _NO_HASHES, names: Callable[[int], Sequence[str]] | None = None
                      ) -> None:
        """`add_row` of the documents of a batch that `takes_whole` let through, in turn (each is held under
        every key but those of ``crowded_out``, so there is nothing to return), done when the index is next
        read: one call into the key table for a batch, not one for each document. A row of ``rows`` may also be
        a `esdedup.ingest.doccolumns.BlockRow`: the document is then copied from its batch's arrays.

        ``hashes`` are the documents', flat, ``counts[d]`` of them each; ``crowded_out``: the hashes
        `takes_whole` gave for them, counted in `crowded` and not held (``names(d)``: document d's keys, in the
        order of its hashes, asked for only where a key is counted, as `add_row` counts them)."""
        out = member_of(hashes, crowded_out) if len(crowded_out) else None
        watched = self._counted(hashes, out)
        if watched is not None:
            assert names is not None, "the keys of documents crowded out of some are named"
            starts = run_starts(counts)
            of_doc = np.searchsorted(starts, watched, side="right") - 1
            named = int(of_doc[0])
            keys = names(named)
            for x, d in zip(watched.tolist(), of_doc.tolist(), strict=True):
                if d != named:  # a document's keys are named once
                    named, keys = d, names(d)
                self._count_crowded(keys[x - int(starts[d])], int(hashes[x]), out is not None and bool(out[x]))
        if out is not None:
            counts, hashes = counts_kept(counts, ~out), hashes[~out]
        self._queued.append((rows, hashes, counts))

    def _counted(self, hashes: np.ndarray, out: np.ndarray | None) -> np.ndarray | None:
        """Where in ``hashes`` a document is counted in `crowded` (`_count_crowded`): where ``out`` says it is
        crowded out, and at the keys crowded in the run's earlier run indexes; None for none."""
        counted = out
        if self._carried and not self._crowded_hashes.isdisjoint(hashes.tolist()):
            carried = member_of(hashes, np.fromiter(self._crowded_hashes, dtype=np.uint64))
            counted = carried if counted is None else counted | carried
        return None if counted is None or not counted.any() else np.flatnonzero(counted)

    def _hold_queued(self) -> None:
        """Add the documents `add_all_later` queued, in the order it queued them."""
        if not self._queued:
            return
        queued, self._queued = self._queued, []
        rows = [row for chunk, _, _ in queued for row in chunk]
        start = len(self.docs)
        crowded = self._table.add_many(range(start, start + len(rows)), np.concatenate([h for _, h, _ in queued]),
                                       [n for _, _, counts in queued for n in counts])
        if crowded:  # takes_whole let a batch through that crowds a key: the run index would be wrong
            raise AssertionError(f"{len(crowded)} keys of documents added later were crowded")
        self.docs.append_rows(rows)

    def add_keys(self, doc: StoredDoc, keys: Sequence[str]) -> frozenset[int]:
        """`add` of ``doc`` under ``keys``, hashed here."""
        return self.add(doc, key_hashes(keys).tolist(), lambda: keys)

    def most_crowded(self, limit: int = 10) -> list[tuple[str, int]]:
        """The most crowded keys and how many documents of the run hold each, most first."""
        return sorted(self.crowded.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]

    def lookup(self, keys: Sequence[str]) -> list[StoredDoc]:
        """The documents holding any of ``keys``, in the order they were added."""
        return self.lookup_many(KeyLists([list(keys)]))[0]

    def lookup_many(self, keys: KeyLists) -> list[list[StoredDoc]]:
        """`lookup` of each record's keys."""
        docs = self.docs
        return [[docs[p] for p in found] for found in self.lookup_positions(keys)]

    def lookup_positions(self, keys: KeyLists) -> list[list[int]]:
        """`lookup_many` as the documents' positions in `docs`, ascending (no document made)."""
        self._hold_queued()
        return self._table.lookup_many(keys.hashes, keys.counts)

    def release(self) -> tuple[list[str], np.ndarray, np.ndarray]:
        """Empty this index (its window closed; ``crowded`` and ``complete`` stay) and return what it held, for
        `FrozenKeys.add_index`: its documents' ids, and the hash (`key_hashes`) and position in `docs` of every
        (key, document), each hash's positions never going down (both key tables give a hash's first position,
        then the later ones as they were added; `FrozenKeys.add_index` sorts them by hash alone, unless they
        come sorted, as the extension's table gives them). The documents
        go once their ids are read and the table once its entries are: the sort and merge that follow, where a
        roll's memory peaks, hold neither (bench/roll_memory.py)."""
        self._hold_queued()
        ids = self.docs.ids()
        self.docs = DocColumns()
        hashes, positions = self._table.entries()
        self._table = _key_table()
        return ids, hashes, positions


#: Keys hashed at a time (bounds the temporary arrays when a window of millions of keys is frozen).
_HASH_CHUNK = 1 << 20
_LENGTH_SEED = np.uint64(0x9E3779B97F4A7C15)


def key_hashes(keys: Sequence[str]) -> np.ndarray:
    """A fixed 64-bit hash of each key (uint64): the key's UTF-8 bytes read as little-endian 64-bit words,
    folded with SplitMix64's finaliser (`esdedup.fingerprint.minhash.mix64`) from a seed that holds the byte length.
    Reproducible on every machine and in every process (never Python's ``hash()``); two keys that share a
    hash (trailing NUL bytes are not seen: band keys have none) only share candidates, which the rule then
    verifies.

    >>> hex(int(key_hashes(["0:1f2e", "661681052612"])[0]))
    '0x40ad0678c6525e95'
    """
    hashed = native_keys.key_hashes(keys)
    if hashed is not None:
        return hashed
    parts = [_hash_chunk(keys[i:i + _HASH_CHUNK]) for i in range(0, len(keys), _HASH_CHUNK)]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)


def _hash_chunk(keys: Sequence[str]) -> np.ndarray:
    try:
        raw = np.array(keys, dtype=np.bytes_)  # band keys are ASCII: hex, decimal and ':'
    except UnicodeEncodeError:
        raw = np.array([k.encode("utf-8", "surrogatepass") for k in keys], dtype=np.bytes_)
    lengths = np.char.str_len(raw).astype(np.uint64)
    words = -(-raw.dtype.itemsize // 8)
    raw = raw.astype(f"S{words * 8}")  # zero-padded to whole words
    cols = raw.view("<u8").reshape(len(keys), words)
    h = mix64(lengths ^ _LENGTH_SEED)
    for w in range(words):
        # Only the words a key has: the hash must not depend on the longest key it was hashed with.
        h = np.where(lengths > np.uint64(8 * w), mix64(h ^ cols[:, w]), h)
    return h


class FrozenKeys:
    """The band keys of a run's earlier windows: key hash -> document ordinal, in one table sorted by (hash,
    ordinal), and ordinal -> id. Each `RunIndex` is merged in when its window closes (`add_index`); `lookup` finds
    the ids of the documents holding a record's keys as the run index that kept every document would (the
    first `MAX_PER_KEY` documents of each key, in the order they were written), at most ``per_record`` of
    them, with one search per key however many windows were frozen (in the extension, of a bucket of about
    eight entries: `native_keys.bucket_starts`).

    About 12 bytes per key a document holds (16 to 20) plus its id (`nbytes`).

    The ids stay here although `EarlierWrites` holds them too: that one keeps every id the run wrote (near-
    duplicates it skipped as well, and when no keys are frozen), by id in SQLite; an id by ordinal from there
    would be a query for every batch instead of a slice of memory."""

    def __init__(self) -> None:
        self._hashes = np.zeros(0, dtype=np.uint64)  # sorted, then by ordinal: a key's documents in write order
        self._ords = np.zeros(0, dtype=np.uint32)  # the ordinal of each entry's document
        self._blob = bytearray()  # the ids' UTF-8 bytes, in write order
        self._offsets = np.zeros(1, dtype=np.uint64)  # where each ordinal's id starts in `_blob`, and the end
        #: The table's buckets as the extension reads it (`native_keys.bucket_starts`), made at the first
        #: lookup after a merge (None: not made, or the extension is not in use).
        self._starts: np.ndarray | None = None
        self.docs = 0

    @property
    def nbytes(self) -> int:
        """Memory the tables hold, in bytes."""
        return (self._hashes.nbytes + self._ords.nbytes + len(self._blob) + self._offsets.nbytes
                + (0 if self._starts is None else self._starts.nbytes))

    def add(self, ids: Sequence[str], keys: Sequence[str], positions: np.ndarray) -> None:
        """Freeze one window: its documents' ``ids``, and each (key, position in ``ids``) of its index."""
        self._add_entries(ids, key_hashes(keys), np.array(positions, dtype=np.uint32))  # a copy, sorted there

    def add_index(self, index: RunIndex) -> None:
        """Freeze a closed window's run index, which this empties (`RunIndex.release`): it is merged in
        without the window's documents and keys held beside the table, where a roll peaks."""
        self._add_entries(*index.release(), in_order=True)

    def _add_entries(self, ids: Sequence[str], hashes: np.ndarray, positions: np.ndarray, *,
                     in_order: bool = False) -> None:
        """``hashes`` (uint64) and ``positions`` (uint32), each entry's key hash and position in ``ids``, are
        sorted in place: the merge holds them once (they belong to this call). ``in_order``: each hash's
        entries come in position order already (as a run index releases them), so a stable sort by hash
        alone orders them, in a third of the time a sort by both takes."""
        if not (in_order and _ascending(hashes)):  # the extension's table gives its entries sorted
            order = np.argsort(hashes, kind="stable") if in_order else np.lexsort((positions, hashes))
            hashes[:] = hashes[order]
            positions[:] = positions[order]
            del order
        positions += np.uint32(self.docs)  # the ordinals: each window's above those of the windows before
        self._starts = None
        self._merge(hashes, positions)
        encoded = [i.encode("utf-8", "surrogatepass") for i in ids]
        ends = self._offsets[-1] + np.cumsum([len(e) for e in encoded], dtype=np.uint64)
        self._offsets = np.concatenate((self._offsets, ends))
        self._blob += b"".join(encoded)
        self.docs += len(ids)

    def _merge(self, hashes: np.ndarray, ords: np.ndarray) -> None:
        """Merge one window's entries (sorted by hash, then ordinal; every ordinal above the table's) into the
        table, in place: the table grows (a reallocation, which moves no pages of a large array), then its
        entries move up from the last, a chunk at a time, by the number of new entries of a smaller hash.
        Not ``np.insert`` at the same positions: it builds a second table (0.4 GB more near
        `esdedup.ingest.window.FROZEN_MAX_DOCS`) at the roll, where a run's memory peaks. The extension merges
        in one pass from the last place down (`native_keys.merge_frozen`), the same entries in the same places."""
        n, m = len(self._hashes), len(hashes)
        if native_keys.in_use():
            self._hashes, self._ords = _grown(self._hashes, n + m), _grown(self._ords, n + m)
            native_keys.merge_frozen(self._hashes, self._ords, n, hashes, ords)
            return
        # A new entry goes after the table's entries of its hash (written earlier) and the new ones before it.
        at = np.searchsorted(self._hashes, hashes, side="right")
        for start in range(0, m, _MERGE_CHUNK):  # in place: no second array of m positions
            at[start:start + _MERGE_CHUNK] += np.arange(start, min(start + _MERGE_CHUNK, m))
        self._hashes, self._ords = _grown(self._hashes, n + m), _grown(self._ords, n + m)
        for end in range(n, 0, -_MERGE_CHUNK):
            start = max(end - _MERGE_CHUNK, 0)
            moved_hashes, moved_ords = self._hashes[start:end].copy(), self._ords[start:end].copy()
            # Each destination is at or above its source and below those of the later chunks, moved already.
            to = np.searchsorted(hashes, moved_hashes, side="left")
            to += np.arange(start, end)
            self._hashes[to] = moved_hashes
            self._ords[to] = moved_ords
        self._hashes[at] = hashes
        self._ords[at] = ords

    def lookup(self, key_lists: KeyLists, *, per_key: int = MAX_PER_KEY, per_record: int = 100) -> list[list[str]]:
        """For each record's keys, the ids of the documents holding any of them: of each key its first
        ``per_key`` documents, of those the first ``per_record``, in the order they were written."""
        buckets = self._buckets()
        records, ords = (self._pairs(key_lists, per_key, per_record) if buckets is None else
                         native_keys.frozen_lookup(self._hashes, self._ords, buckets, key_lists.hashes,
                                                   key_lists.counts, per_key, per_record))
        out: list[list[str]] = [[] for _ in key_lists.counts]
        starts, ends = self._offsets[ords].tolist(), self._offsets[ords + np.uint64(1)].tolist()
        for r, start, end in zip(records.tolist(), starts, ends, strict=True):
            out[r].append(self._blob[start:end].decode("utf-8", "surrogatepass"))
        return out

    def _buckets(self) -> np.ndarray | None:
        """The table's `native_keys.bucket_starts`, made once a merge (None: the extension is not in use)."""
        if not native_keys.in_use():
            return None
        if self._starts is None:
            self._starts = native_keys.bucket_starts(self._hashes)
        return self._starts

    def _pairs(self, key_lists: KeyLists, per_key: int, per_record: int) -> tuple[np.ndarray, np.ndarray]:
        """`lookup` as (record, ordinal) pairs, by record, then ordinal: the records as int64, the ordinals as
        uint64 (the extension's `frozen_lookup` finds the same with fewer reads of the table)."""
        hashes = key_lists.hashes
        record_of = np.repeat(np.arange(len(key_lists.counts)), key_lists.counts)
        by_hash = np.argsort(hashes)  # sorted queries: each binary search starts where the last one ended
        queries = hashes[by_hash]
        first = np.searchsorted(self._hashes, queries, side="left")
        # Most keys are held by no earlier document: the end of a key's entries is searched for the others only.
        hit = np.zeros(0, dtype=np.int64)
        if len(self._hashes):
            hit = np.flatnonzero(self._hashes[np.minimum(first, len(self._hashes) - 1)] == queries)
        held = np.zeros(len(queries), dtype=np.int64)
        held[hit] = np.searchsorted(self._hashes, queries[hit], side="right") - first[hit]
        # A key's entries are in write order: its first per_key documents are its first per_key entries.
        held = np.minimum(held, max(per_key, 0))
        query = np.repeat(np.arange(len(queries)), held)
        at = np.repeat(first, held) + _rank_in_runs(query)
        records = record_of[by_hash[query]].astype(np.uint64)
        pairs = unique_sorted((records << np.uint64(32)) | self._ords[at].astype(np.uint64))
        records, ords = (pairs >> np.uint64(32)).astype(np.int64), pairs & np.uint64(0xFFFFFFFF)
        keep = _rank_in_runs(records) < per_record
        return records[keep], ords[keep]


def _ascending(values: np.ndarray) -> bool:
    """Whether ``values`` never go down."""
    return bool(np.all(values[1:] >= values[:-1]))


def _grown(a: np.ndarray, size: int) -> np.ndarray:
    """``a`` with room for ``size`` entries: the same array, reallocated in place, unless something else still
    holds it (numpy's reference check: a view, or a tracer such as a debugger or a line profiler keeping a
    frame's values), which a reallocation would leave reading freed memory; then a grown copy."""
    try:
        a.resize(size)
    except ValueError:
        grown = np.zeros(size, dtype=a.dtype)
        grown[:len(a)] = a
        return grown
    return a


#: Table entries moved at a time when a window is merged into `FrozenKeys` (bounds the temporary arrays).
_MERGE_CHUNK = 1 << 20


def _rank_in_runs(labels: np.ndarray) -> np.ndarray:
    """Each element's position within its run of equal ``labels`` (sorted): 0 for the first of a run."""
    if not len(labels):
        return np.zeros(0, dtype=np.int64)
    idx = np.arange(len(labels))
    starts = np.flatnonzero(np.r_[True, labels[1:] != labels[:-1]])
    return idx - np.repeat(starts, np.diff(np.r_[starts, len(labels)]))


class ClusterRoots:
    """The cluster merges of this run: a representative that joined an earlier cluster points at that
    cluster's representative (a union-find over representative ids).

    Not `esdedup.util.unionfind.UnionFind`, because of `forget`: it drops the links from and to some ids, so
    that a representative that joined the cluster through a forgotten one is its own representative again
    (with ``b`` joined to ``c`` and ``a`` to ``b``, forgetting ``b`` leaves ``a`` and ``c`` apart). A
    `UnionFind` cannot remove an item, and its path halving rewrites each parent to a grandparent as it
    finds (``a`` would point at ``c``), so it no longer holds the links `forget` must drop: this class's own
    links would have to be kept beside it and the `UnionFind` rebuilt from them at every `forget`, two
    structures for one. The links are also keyed by id and lead to a `Root` (``(seq, id)``), where a
    `UnionFind` of roots would tell two write orders of one id apart (an id whose text was replaced)."""

    def __init__(self) -> None:
        self._parent: dict[str, Root] = {}

    def find(self, root: Root) -> Root:
        while root[1] in self._parent:
            root = self._parent[root[1]]
        return root

    def union(self, roots: Iterable[Root]) -> tuple[Root, list[Root]]:
        """Join the clusters of ``roots``; returns their representative (the earliest) and the
        representatives that stopped being one."""
        found = {self.find(r) for r in roots}
        top = min(found)
        moved = [r for r in found if r != top]
        for r in moved:
            self._parent[r[1]] = top
        return top, moved

    def join(self, roots: Iterable[Root]) -> Root:
        """Join the clusters of ``roots``; returns their representative."""
        return self.union(roots)[0]

    def attach(self, root: Root, top: Root) -> None:
        """`union` of ``root``, a representative, with ``top``, an earlier one: ``root`` points at ``top``."""
        self._parent[root[1]] = top

    def forget(self, ids: set[str]) -> None:
        """Drop what this run knows of the clusters of ``ids`` (the store now labels them afresh)."""
        self._parent = {k: v for k, v in self._parent.items() if k not in ids and v[1] not in ids}


#: Written ids a statement of `EarlierWrites.add` inserts.
_EARLIER_ROWS = 100


def _insert_earlier(rows: int) -> str:
    """The statement that inserts ``rows`` (id, content SHA-1, represents its cluster) rows of `EarlierWrites`."""
    return "INSERT INTO w VALUES " + ",".join(["(?, ?, ?)"] * rows)


class EarlierWrites:
    """What a batch run wrote before its current run index (in its earlier windows): id -> content SHA-1,
    and whether the document still represents its cluster. Kept in a private temporary SQLite file (deleted
    when closed, a few MB of it cached), so that a run of any length still knows the ids it wrote, as one that
    keeps everything in memory would: a second record with such an id is a repeat, and a representative
    that joins an earlier cluster counts as a near-duplicate."""

    def __init__(self) -> None:
        self._db: sqlite3.Connection | None = None

    def add(self, written: Mapping[str, str], own_roots: set[str]) -> None:
        try:
            if self._db is None:
                self._db = sqlite3.connect("", isolation_level=None)
                self._db.execute("CREATE TABLE w (id TEXT PRIMARY KEY, sha1 TEXT NOT NULL, own INTEGER NOT NULL) "
                                 "WITHOUT ROWID")
            # Rows of a hundred documents a statement: the sqlite3 module's own cost of each execution was half of
            # inserting a window's ids one row a statement.
            values = [v for i, sha1 in written.items() for v in (i, sha1, i in own_roots)]
            whole = len(values) - len(values) % (3 * _EARLIER_ROWS)
            self._db.execute("BEGIN")
            self._db.executemany(_insert_earlier(_EARLIER_ROWS),
                                 (values[at:at + 3 * _EARLIER_ROWS] for at in range(0, whole, 3 * _EARLIER_ROWS)))
            if whole < len(values):
                self._db.execute(_insert_earlier((len(values) - whole) // 3), values[whole:])
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:  # the temporary directory is full or cannot be written
            raise OutputError(f"cannot write the run's temporary file of written ids: {exc}") from None

    def get(self, ids: Sequence[str]) -> dict[str, str]:
        """The content SHA-1 of each id of ``ids`` written earlier."""
        if self._db is None or not ids:
            return {}
        out: dict[str, str] = {}
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            out.update(self._db.execute(f"SELECT id, sha1 FROM w WHERE id IN ({','.join('?' * len(part))})", part))
        return out

    def take_root(self, doc_id: str) -> bool:
        """``doc_id`` represented its cluster and stops doing so now; False when it did not."""
        if self._db is None:
            return False
        return self._db.execute("UPDATE w SET own = 0 WHERE id = ? AND own = 1", (doc_id,)).rowcount == 1

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
