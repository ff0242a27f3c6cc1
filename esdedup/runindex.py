"""What a batch ingest remembers of the documents it wrote, to label duplicates among its own records without
asking the store: the run index of the current window (`RunIndex`: band key -> documents, with their
fingerprints), and the keys of the windows before it, frozen into sorted numpy arrays (`FrozenKeys`: band key
-> document ids, about 250 bytes a document instead of 4 KB).

Besides the band keys, what the run needs to label as one that kept everything in memory would: the cluster
merges it made (`ClusterRoots`: a union-find over representatives, the earliest by write order winning), and
the ids it wrote in its earlier windows with their content SHA-1 (`EarlierWrites`).

No store: `esdedup.ingest` decides when a window is frozen and fetches the documents a frozen lookup names.
Everything is in memory but `EarlierWrites`, which keeps its ids in a private temporary SQLite file (a run of
any length knows every id it wrote).
"""
from __future__ import annotations

import sqlite3
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain

import numpy as np

from .errors import OutputError
from .minhash import mix64
from .store.base import Root, StoredDoc

#: Documents of a run the in-run index keeps per band key. A key held by more (boilerplate, or thousands of
#: copies of one text) is crowded: its first documents stand for it. Near-duplicates share several keys,
#: so a document still finds its cluster through them, and the run stays linear in its documents.
MAX_PER_KEY = 32


class RunIndex:
    """Band key -> documents written in this run (since the store last made them searchable: at most about
    `esdedup.ingest.RUN_INDEX_MAX_DOCS`), so a run labels duplicates among its own records without waiting
    for the store to make them searchable. At most `MAX_PER_KEY` documents per key; ``crowded`` counts the
    documents of each key held by more."""

    def __init__(self, complete: bool = False, crowded: dict[str, int] | None = None) -> None:
        self.docs: list[StoredDoc] = []
        # Key -> position in `docs` of the first document with it; further ones (rare) in `more`. Only
        # strings and ints: a run adds some 36 keys a document, and a million small lists would make every
        # garbage-collector pass crawl through them.
        self.first: dict[str, int] = {}
        self.more: dict[str, list[int]] = {}
        #: True when the store holds nothing this run did not write and that this index (with the run's
        #: frozen keys, if any) does not know.
        self.complete = complete
        #: Crowded keys of this run, with the count of each (``crowded``: carried over from the run's earlier
        #: run indexes; a key crowded there counts every document of this one that holds it).
        self.crowded: dict[str, int] = crowded if crowded is not None else {}
        self._carried = bool(self.crowded)

    def add(self, doc: StoredDoc, keys: Iterable[str]) -> None:
        i = len(self.docs)
        self.docs.append(doc)
        first = self.first
        for k in keys:
            if first.setdefault(k, i) != i:
                more = self.more.setdefault(k, [])
                if len(more) < MAX_PER_KEY - 1:
                    more.append(i)
                else:
                    self.crowded[k] = self.crowded.get(k, MAX_PER_KEY) + 1
                    continue
            if self._carried and k in self.crowded:
                self.crowded[k] += 1

    def most_crowded(self, limit: int = 10) -> list[tuple[str, int]]:
        """The most crowded keys and how many documents of the run hold each, most first."""
        return sorted(self.crowded.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]

    def lookup(self, keys: Sequence[str]) -> list[StoredDoc]:
        """The documents holding any of ``keys``, in the order they were added."""
        found = {i for i in map(self.first.get, keys) if i is not None}
        if found and self.more:
            for k in keys:
                if k in self.more:
                    found.update(self.more[k])
        return [self.docs[i] for i in sorted(found)]

    def entries(self) -> tuple[list[str], np.ndarray]:
        """Every (key, position in `docs`) this index holds, as a list of keys and an array of positions."""
        keys = list(self.first)
        keys.extend(chain.from_iterable([k] * len(more) for k, more in self.more.items()))
        positions = np.fromiter(chain(self.first.values(), chain.from_iterable(self.more.values())),
                                dtype=np.uint32, count=len(keys))
        return keys, positions


#: Keys hashed at a time (bounds the temporary arrays when a window of millions of keys is frozen).
_HASH_CHUNK = 1 << 20
_LENGTH_SEED = np.uint64(0x9E3779B97F4A7C15)


def key_hashes(keys: Sequence[str]) -> np.ndarray:
    """A fixed 64-bit hash of each key (uint64): the key's UTF-8 bytes read as little-endian 64-bit words,
    folded with SplitMix64's finaliser (`esdedup.minhash.mix64`) from a seed that holds the byte length.
    Reproducible on every machine and in every process (never Python's ``hash()``); two keys that share a
    hash (trailing NUL bytes are not seen: band keys have none) only share candidates, which the rule then
    verifies.

    >>> hex(int(key_hashes(["0:1f2e", "661681052612"])[0]))
    '0x40ad0678c6525e95'
    """
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
    """The band keys of a run's earlier windows: key hash -> document ordinal, in sorted arrays (one pair per
    window), and ordinal -> id. Built from each `RunIndex` when its window closes (`add`); `lookup` finds the
    ids of the documents holding a record's keys as the run index that kept every document would (the first
    `MAX_PER_KEY` documents of each key, in the order they were written), at most ``per_record`` of them.

    About 12 bytes per key a document holds (16 to 20) plus its id (`nbytes`)."""

    def __init__(self) -> None:
        self._keys: list[np.ndarray] = []  # per window, sorted (then by ordinal)
        self._ords: list[np.ndarray] = []  # per window, the ordinal of each key's document
        self._bases: list[int] = []  # per window, the ordinal of its first document
        self._ids: list[tuple[bytes, np.ndarray]] = []  # per window, the ids' UTF-8 bytes and their offsets
        self.docs = 0

    @property
    def nbytes(self) -> int:
        """Memory the tables hold, in bytes."""
        return sum(a.nbytes for a in chain(self._keys, self._ords)) + sum(len(b) + o.nbytes for b, o in self._ids)

    def add(self, ids: Sequence[str], keys: Sequence[str], positions: np.ndarray) -> None:
        """Freeze one window: its documents' ``ids``, and each (key, position in ``ids``) of its index."""
        hashes = key_hashes(keys)
        ords = np.asarray(positions, dtype=np.uint32) + np.uint32(self.docs)
        order = np.lexsort((ords, hashes))
        self._keys.append(hashes[order])
        self._ords.append(ords[order])
        encoded = [i.encode("utf-8", "surrogatepass") for i in ids]
        offsets = np.zeros(len(encoded) + 1, dtype=np.uint64)
        offsets[1:] = np.cumsum([len(e) for e in encoded])
        self._ids.append((b"".join(encoded), offsets))
        self._bases.append(self.docs)
        self.docs += len(ids)

    def lookup(self, key_lists: Sequence[Sequence[str]], *, per_key: int = MAX_PER_KEY,
               per_record: int = 100) -> list[list[str]]:
        """For each list of keys (one record's), the ids of the documents holding any of them: of each key its
        first ``per_key`` documents, of those the first ``per_record``, in the order they were written."""
        hashes = key_hashes(list(chain.from_iterable(key_lists)))
        record_of = np.repeat(np.arange(len(key_lists)), [len(k) for k in key_lists])
        by_hash = np.argsort(hashes)  # sorted queries: each binary search starts where the last one ended
        query, ords = self._matches(hashes[by_hash])
        order = np.lexsort((ords, query))
        query, ords = query[order], ords[order]
        keep = _rank_in_runs(query) < per_key
        records = record_of[by_hash[query[keep]]].astype(np.uint64)
        pairs = np.unique((records << np.uint64(32)) | ords[keep].astype(np.uint64))
        records, ords = (pairs >> np.uint64(32)).astype(np.int64), pairs & np.uint64(0xFFFFFFFF)
        keep = _rank_in_runs(records) < per_record
        records, ords = records[keep], ords[keep]
        out: list[list[str]] = [[] for _ in key_lists]
        for r, o in zip(records.tolist(), ords.tolist(), strict=True):
            out[r].append(self._id(o))
        return out

    def _matches(self, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every (query position, document ordinal) whose key hash equals the query's, over all windows. One
        binary search per query and window; the entries after the first are read next to it (a key has
        few: at most `MAX_PER_KEY` a window)."""
        queries, ords = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.uint32)]
        for keys, window_ords in zip(self._keys, self._ords, strict=True):
            query = np.arange(len(hashes))
            at = np.searchsorted(keys, hashes)
            while len(query):
                inside = at < len(keys)
                query, at = query[inside], at[inside]
                same = keys[at] == hashes[query]
                query, at = query[same], at[same]
                queries.append(query)
                ords.append(window_ords[at])
                at = at + 1
        return np.concatenate(queries), np.concatenate(ords)

    def _id(self, ordinal: int) -> str:
        w = bisect_right(self._bases, ordinal) - 1
        blob, offsets = self._ids[w]
        i = ordinal - self._bases[w]
        return blob[int(offsets[i]):int(offsets[i + 1])].decode("utf-8", "surrogatepass")


def _rank_in_runs(labels: np.ndarray) -> np.ndarray:
    """Each element's position within its run of equal ``labels`` (sorted): 0 for the first of a run."""
    if not len(labels):
        return np.zeros(0, dtype=np.int64)
    idx = np.arange(len(labels))
    starts = np.flatnonzero(np.r_[True, labels[1:] != labels[:-1]])
    return idx - np.repeat(starts, np.diff(np.r_[starts, len(labels)]))


class ClusterRoots:
    """The cluster merges of this run: a representative that joined an earlier cluster points at that
    cluster's representative (a union-find over representative ids)."""

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

    def forget(self, ids: set[str]) -> None:
        """Drop what this run knows of the clusters of ``ids`` (the store now labels them afresh)."""
        self._parent = {k: v for k, v in self._parent.items() if k not in ids and v[1] not in ids}


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
            self._db.execute("BEGIN")
            self._db.executemany("INSERT INTO w VALUES (?, ?, ?)",
                                 ((i, sha1, i in own_roots) for i, sha1 in written.items()))
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
