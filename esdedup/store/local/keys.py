"""The key tables ``bands`` and ``lsh``: indexed lazily from the stored documents, read by lookups and by
the shared and crowded keys of all-pairs search (see the package docstring)."""
from __future__ import annotations

import itertools
import logging
import operator
import random
import sqlite3
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.minhash import SIGNATURE_DTYPE, lsh_keys_flat
from esdedup.fingerprint.simhash import from_hex
from esdedup.schema import LSH_KEYS, key_field
from esdedup.store.base import KeyBatch, Probe, TopKeys
from esdedup.store.local.rows import KEY_COLUMNS
from esdedup.store.local.sqlite import MAX_PARAMS, Database, chunks, is_read_only, marks
from esdedup.store.partition import PairBatch, Partition, pair_share
from esdedup.util.spill import SortedSpill

log = logging.getLogger(__name__)

#: Both key tables.
TABLES = ("bands", "lsh")
#: What each key table holds, as a person reads it.
KEY_KINDS = {"bands": "SimHash band", "lsh": "MinHash LSH"}
#: Documents to index at once above which `KeyTables.merge` says why the command waits (143 s at a million
#: documents on two loaded cores).
NOTICE_DOCS = 200_000
#: Members of shared keys per `KeyBatch` (`KeyTables.key_batches`).
KEY_BATCH = 5000
#: Candidate pairs of a partition held in memory before they are sorted and written out as one run
#: (`KeyTables.partition_candidates`): two ids each, some 10 MB a run.
CANDIDATES_A_RUN = 50_000
#: SELECTs per compound statement (SQLite's default limit is 500).
COMPOUND = 400
# Ids read per key in a lookup, at least: enough to rank a crowd of a few hundred near-identical documents
# by shared keys (the exact copy of a probe first), few enough that a key shared by thousands costs a bounded read.
SCAN_PER_KEY = 256
#: Up to this many documents `KeyTables.top_keys` counts every key value; above, those of a sample of
#: `TOP_KEYS_SAMPLE` documents.
TOP_KEYS_EXACT_MAX = 100_000
TOP_KEYS_SAMPLE = 2000


#: The documents after a mark (``seq > ?``) that hold keys of each table, as `KeyTables.keys_of` reads them
#: (`KEY_COLUMNS`), with the one column of the two a key is made from that the table reads: a text without
#: SimHash band keys (one under 200 characters, by default: most of a corpus of short texts) is not read for
#: the ``bands`` table, nor its signature.
_KEYED = {
    "bands": "SELECT seq, id, simhash, NULL, banded FROM docs WHERE seq > ? AND empty = 0 AND banded != 0",
    "lsh": "SELECT seq, id, NULL, minhash, banded FROM docs WHERE seq > ? AND empty = 0 AND minhash IS NOT NULL",
}


def key_table(band: str) -> str:
    """The table that holds a probe band's keys: ``lsh`` for the MinHash LSH bands (whose keys live in the
    one field `esdedup.schema.LSH_KEYS` on Elasticsearch), ``bands`` for the SimHash bands."""
    return "lsh" if key_field(band) == LSH_KEYS else "bands"


def tables_read(lsh: bool) -> tuple[str, ...]:
    """The key tables a caller reads: both, or ``bands`` alone (``lsh=False``)."""
    return TABLES if lsh else ("bands",)


class KeyTables:
    """The key tables of one collection's ``database``, whose keys come from ``config()`` (the collection's
    config, known once the store is open)."""

    def __init__(self, database: Database, config: Callable[[], FingerprintConfig]) -> None:
        self._database = database
        self._config = config
        #: Per table, up to which ``seq`` a read-only file's keys are indexed in this connection's temporary tables.
        self._tail_marks: dict[str, int] = {}
        #: Per table, the last `top_keys` answer and the collection's version it was read at.
        self._top: dict[str, tuple[tuple[int, int, int], TopKeys]] = {}

    # -- indexing ---------------------------------------------------------------------------------
    def merge(self, tables: Sequence[str] = TABLES, chunk: int = 50_000) -> None:
        """Index the keys of documents written since the last merge."""
        db = self._database.connect()
        for table in tables:
            row = db.execute("SELECT value FROM meta WHERE key = ?", (f"indexed:{table}",)).fetchone()
            mark = int(row[0]) if row else 0
            top = db.execute("SELECT MAX(seq) FROM docs").fetchone()[0] or 0
            if top <= max(mark, self._tail_marks.get(table, 0)):
                continue
            if top - mark > NOTICE_DOCS:
                # An ingest that writes alone keeps its keys in memory and leaves them to the first lookup.
                log.warning("indexing the %s keys of up to %d documents written since this index was last looked "
                            "up (once: later lookups find them indexed)", KEY_KINDS[table], top - mark)
            if not self._database.read_only:
                try:
                    self._merge_table(db, table, mark, top, chunk)
                    continue
                except sqlite3.OperationalError as exc:
                    if not is_read_only(exc):
                        raise
                    self._database.read_only = True
            self._merge_in_memory(db, table, max(mark, self._tail_marks.get(table, 0)), top, chunk)

    def _merge_in_memory(self, db: sqlite3.Connection, table: str, mark: int, top: int, chunk: int) -> None:
        """The read-only case of `merge`: the keys go to a temporary table of this connection, and a temporary
        view of the same name (which SQLite finds before the file's table) joins the two."""
        db.isolation_level = None  # no write transaction can begin on a read-only file
        db.execute(f"CREATE TEMP TABLE IF NOT EXISTS {table}_tail (key TEXT NOT NULL, id TEXT NOT NULL, "
                   "PRIMARY KEY (key, id)) WITHOUT ROWID")
        db.execute(f"CREATE TEMP VIEW IF NOT EXISTS {table} AS SELECT key, id FROM main.{table} "
                   f"UNION ALL SELECT key, id FROM temp.{table}_tail")
        while rows := db.execute(f"{_KEYED[table]} ORDER BY seq LIMIT {chunk}", (mark,)).fetchall():
            db.executemany(f"INSERT OR IGNORE INTO temp.{table}_tail VALUES (?, ?)", self.keys_of(rows, table))
            mark = rows[-1][0]
        self._tail_marks[table] = max(mark, top)

    def _merge_table(self, db: sqlite3.Connection, table: str, mark: int, top: int, chunk: int) -> None:
        """Index the keys of ``table`` of the documents after ``mark`` in the file, and move the mark."""
        with db:
            # Keys are appended to a scratch table (cheap), then moved into the index in key order in one
            # statement: SQLite sorts them faster than Python, and sorted inserts fill B-tree pages in turn.
            db.execute("CREATE TEMP TABLE IF NOT EXISTS merging (key TEXT NOT NULL, id TEXT NOT NULL)")
            while True:
                rows = db.execute(f"{_KEYED[table]} ORDER BY seq LIMIT {chunk}", (mark,)).fetchall()
                if not rows:
                    break
                db.executemany("INSERT INTO temp.merging VALUES (?, ?)", self.keys_of(rows, table))
                mark = rows[-1][0]
            db.execute(f"INSERT OR IGNORE INTO {table} SELECT key, id FROM temp.merging ORDER BY key, id")
            db.execute("DELETE FROM temp.merging")
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (f"indexed:{table}", str(max(mark, top))))

    def keys_of(self, rows: Sequence[tuple], table: str) -> list[tuple[str, str]]:
        """(key, id) of every ``table`` key of the documents ``rows`` (`KEY_COLUMNS`)."""
        config = self._config()
        if table == "bands":
            layout = config.band_layout()
            return [(k, doc_id) for _, doc_id, sh, _, banded in rows if banded for k in layout.keys(from_hex(sh))]
        signed = [(doc_id, sig) for _, doc_id, _, sig, _ in rows if sig is not None]
        if not signed:
            return []
        # One config's signatures, all of one length: read as one array, their keys as one list.
        sigs = np.frombuffer(b"".join([sig for _, sig in signed]), dtype=SIGNATURE_DTYPE).reshape(len(signed), -1)
        bands = config.minhash_bands
        keys = lsh_keys_flat(sigs, bands, config.minhash_rows)
        return list(zip(keys, itertools.chain.from_iterable(itertools.repeat(doc_id, bands) for doc_id, _ in signed),
                        strict=True))

    def indexed_keys(self, ids: list[str]) -> list[tuple[str, str]]:
        """(key, id) of every key row the stored documents ``ids`` have in either table, once the tables are
        indexed (what `delete` takes to forget them)."""
        self.merge()
        out: list[tuple[str, str]] = []
        for chunk in chunks(ids, MAX_PARAMS):
            rows = self._database.connect().execute(
                f"SELECT {KEY_COLUMNS} FROM docs WHERE id IN ({marks(len(chunk))})", chunk).fetchall()
            out += self.keys_of(rows, "bands") + self.keys_of(rows, "lsh")
        return out

    @staticmethod
    def delete(db: sqlite3.Connection, keys: list[tuple[str, str]]) -> None:
        """Delete key rows (`indexed_keys`), inside the caller's transaction."""
        for table in TABLES:
            db.executemany(f"DELETE FROM {table} WHERE key = ? AND id = ?", keys)

    # -- reading ----------------------------------------------------------------------------------
    def candidates(self, probes: Sequence[Probe], limit: int) -> list[list[str]]:
        """For each probe, the ids of at most ``limit`` documents holding any of its keys, sorted."""
        self.merge()
        return [self._ranked_ids(probe, limit) for probe in probes]

    def _ranked_ids(self, probe: Probe, limit: int) -> list[str]:
        """The documents holding any of the probe's keys: those sharing the most keys with it when more than
        ``limit`` do (ties by id), as the Elasticsearch store ranks them."""
        db = self._database.connect()
        keys = sorted({(key_table(band), k) for band, band_keys in probe.items() for k in band_keys})
        scan = max(limit, SCAN_PER_KEY)
        shared: dict[str, int] = {}
        for chunk in chunks(keys, COMPOUND):
            # One subquery per key, each stopping after `scan` ids (the smallest: the index is in (key, id)
            # order), so a key that thousands of documents share costs no more than a rarer one and a run
            # of near-identical documents stays linear. UNION ALL keeps one row per shared key, which SQLite
            # counts: one row per document comes back, not one per key it shares.
            q = " UNION ALL ".join(f"SELECT * FROM (SELECT id FROM {table} WHERE key = ? LIMIT ?)"
                                   for table, _ in chunk)
            counted = db.execute(f"SELECT id, COUNT(*) FROM ({q}) GROUP BY id",
                                 [x for _, k in chunk for x in (k, scan)])
            if shared:  # a probe of more keys than one statement takes
                for doc_id, n in counted:
                    shared[doc_id] = shared.get(doc_id, 0) + n
            else:
                shared = dict(counted)
        if len(shared) <= limit:
            return sorted(shared)
        # Most shared keys first, ties by id: sorted by id, then (stable) by count.
        return sorted(sorted(sorted(shared), key=shared.__getitem__, reverse=True)[:limit])

    def key_batches(self, *, max_bucket: int, lsh: bool) -> Iterator[KeyBatch]:
        """See `esdedup.store.base.Store.key_batches`."""
        tables = tables_read(lsh)
        self.merge(tables)
        db = self._database.connect()
        crowded = frozenset(k for t in tables for (k,) in
                            db.execute(f"SELECT key FROM {t} GROUP BY key HAVING COUNT(*) > ?", (max_bucket,)))
        groups: list[tuple[str, int, list[str]]] = []
        members = 0
        for key, ids in self._shared(db, tables):
            groups.append((key, len(ids), ids[:max_bucket]))
            members += min(len(ids), max_bucket)
            if members >= KEY_BATCH:
                yield self._key_batch(groups, tables, crowded)
                groups, members = [], 0
        if groups:
            yield self._key_batch(groups, tables, crowded)

    def partition_candidates(self, partition: Partition, *, max_bucket: int, lsh: bool) -> Iterator[PairBatch]:
        """See `esdedup.store.partition.PartitionedPairs`: every shared key read in order (the key index), the
        pairs of each group that `pair_share` gives ``partition`` kept, each once.

        A pair sharing several keys comes once a key: rather than remember every pair seen (memory growing with
        the candidates), the pairs go to a temporary file in sorted runs (`SortedSpill`, `CANDIDATES_A_RUN` in
        memory) and come out merged, a repeated pair once. The keys are all read first (their batches carry no
        pairs), then the pairs come. A pair is written as one string (`_pair_text`): strings sort and merge in
        half the time tuples take, and a partition writes every pair once a key it shares (11.4 million for 1.8
        million pairs at a million documents)."""
        tables = tables_read(lsh)
        self.merge(tables)
        crowded: list[tuple[str, int]] = []
        keys = members = found = 0
        count, index = partition.count, partition.index
        with SortedSpill[str](run=CANDIDATES_A_RUN) as spill:
            for key, ids in self._shared(self._database.connect(), tables):
                if len(ids) > max_bucket:
                    crowded.append((key, len(ids)))
                    ids = ids[:max_bucket]
                keys += 1
                members += len(ids)
                for x, a in enumerate(ids[:-1]):
                    for b in ids[x + 1:]:
                        if count == 1 or pair_share(a, b, count) == index:
                            spill.add(f"{len(a)}\0{a}{b}")
                            found += 1
                if found >= KEY_BATCH:  # the keys read so far, for the progress shown
                    found = 0
                    yield PairBatch([], keys, members, crowded)
                    crowded, keys, members = [], 0, 0
            pairs: list[tuple[str, str]] = []
            last = None
            for text in spill:
                if text != last:
                    pairs.append(_pair_of(text))
                    last = text
                    if len(pairs) >= KEY_BATCH:
                        yield PairBatch(pairs, keys, members, crowded)
                        pairs, crowded, keys, members = [], [], 0, 0
            yield PairBatch(pairs, keys, members, crowded)

    @staticmethod
    def _shared(db: sqlite3.Connection, tables: Sequence[str]) -> Iterator[tuple[str, list[str]]]:
        """Every key held by two documents or more, with its holders' ids (sorted), in key order a table."""
        for table in tables:
            cur = db.execute(f"SELECT key, id FROM {table} WHERE key IN "
                             f"(SELECT key FROM {table} GROUP BY key HAVING COUNT(*) > 1) ORDER BY key, id")
            for key, rows in itertools.groupby(cur, key=operator.itemgetter(0)):
                yield key, [i for _, i in rows]

    def _key_batch(self, groups: list[tuple[str, int, list[str]]], tables: Sequence[str],
                   crowded: frozenset[str]) -> KeyBatch:
        """``groups`` with the keys of their members (computed from the stored documents, as indexed)."""
        ids = sorted({i for _, _, g in groups for i in g})
        keys: dict[str, set[str]] = {i: set() for i in ids}
        for chunk in chunks(ids, MAX_PARAMS):
            rows = self._database.connect().execute(
                f"SELECT {KEY_COLUMNS} FROM docs WHERE id IN ({marks(len(chunk))})", chunk).fetchall()
            for table in tables:
                for k, i in self.keys_of(rows, table):
                    keys[i].add(k)
        return KeyBatch(groups, {i: frozenset(k - crowded) for i, k in keys.items()})

    def crowded_keys(self, *, min_count: int, limit: int, lsh: bool) -> list[tuple[str, int]]:
        """See `esdedup.store.base.Store.crowded_keys`."""
        tables = tables_read(lsh)
        self.merge(tables)
        union = " UNION ALL ".join(f"SELECT key, COUNT(*) AS n FROM {t} GROUP BY key HAVING n >= ?" for t in tables)
        rows = self._database.connect().execute(f"SELECT key, n FROM ({union}) ORDER BY n DESC, key LIMIT ?",
                                                (*[min_count] * len(tables), limit)).fetchall()
        return [(k, int(n)) for k, n in rows]

    def top_keys(self, *, lsh: bool, limit: int) -> TopKeys:
        """See `esdedup.store.base.Store.top_keys`. Up to `TOP_KEYS_EXACT_MAX` documents, one ``GROUP BY``
        over the key table; above, a pass over every key row would cost seconds (16 rows a document), so the
        values are chosen among the keys of `TOP_KEYS_SAMPLE` documents at random seq positions, each value
        then counted exactly on the key index. The answer is kept for this connection until the collection
        changes (``PRAGMA data_version``, ``total_changes``)."""
        table = "lsh" if lsh else "bands"
        self.merge((table,))
        db = self._database.connect()
        version = (db.execute("PRAGMA data_version").fetchone()[0], db.total_changes, limit)
        cached = self._top.get(table)
        if cached is not None and cached[0] == version:
            return cached[1]
        lo, hi = db.execute("SELECT MIN(seq), MAX(seq) FROM docs").fetchone()
        if lo is None or hi - lo < TOP_KEYS_EXACT_MAX:
            rows = db.execute(f"SELECT key, COUNT(*) AS n FROM {table} GROUP BY key HAVING n >= 2 "
                              "ORDER BY n DESC, key LIMIT ?", (limit,)).fetchall()
            top = TopKeys([(k, int(n)) for k, n in rows])
        else:
            seqs = sorted(random.Random(0).sample(range(lo, hi + 1), min(TOP_KEYS_SAMPLE, hi - lo + 1)))
            docs = []
            for chunk in chunks(seqs, MAX_PARAMS):
                docs += db.execute(f"SELECT {KEY_COLUMNS} FROM docs WHERE seq IN ({marks(len(chunk))}) AND empty = 0",
                                   chunk).fetchall()
            counts = {k: db.execute(f"SELECT COUNT(*) FROM {table} WHERE key = ?", (k,)).fetchone()[0]
                      for k in sorted({k for k, _ in self.keys_of(docs, table)})}
            best = sorted(((k, int(n)) for k, n in counts.items() if n >= 2), key=lambda kn: (-kn[1], kn[0]))
            top = TopKeys(best[:limit], sampled=len(docs))
        self._top[table] = (version, top)
        return top


def _pair_of(text: str) -> tuple[str, str]:
    """The pair ``(a, b)`` that ``f"{len(a)}\\0{a}{b}"`` wrote (its length first: an id may hold any character).

    >>> _pair_of("3\\0x\\0yz")
    ('x\\x00y', 'z')
    """
    size, _, rest = text.partition("\0")
    n = int(size)
    return rest[:n], rest[n:]
