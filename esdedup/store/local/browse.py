"""What a person browsing an embedded collection reads (`esdedup.store.base.Store.cluster_summary` and the
methods after it), each a bounded query.

Clusters: one ``GROUP BY cluster_id`` over the ``docs_cluster`` index into a temporary table of this
connection (`ClusterSizes`), with an index on the size, so that a page of clusters largest first, deep or
not, is an index range and the size histogram a small ``GROUP BY``. The snapshot is taken again when this
connection has changed the collection (``total_changes``), and when another one has (``PRAGMA data_version``)
once it is `SNAPSHOT_SECONDS` old. A temporary table is not a write to the collection: a read-only file is
browsed alike. Text: `esdedup.store.local.texts`.
"""
from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Sequence

from esdedup.store.base import ClusterSize, ClusterSummary, StoredDoc
from esdedup.store.local.rows import stored_docs
from esdedup.store.local.sqlite import MAX_PARAMS, Database, chunks, marks

#: Seconds a cluster snapshot stands for other writers' commits (this connection's own are taken in at once).
SNAPSHOT_SECONDS = 30.0


class ClusterSizes:
    """The cluster sizes of one connection's snapshot (see the module docstring)."""

    def __init__(self, database: Database) -> None:
        self._database = database
        self._version: tuple[int, int] | None = None
        self._taken = 0.0

    def _fresh(self) -> sqlite3.Connection:
        db = self._database.connect()
        version = (db.execute("PRAGMA data_version").fetchone()[0], db.total_changes)
        own = self._version is not None and version[1] != self._version[1]
        # Other writers' commits are taken in at most every `SNAPSHOT_SECONDS`: during an ingest every
        # commit changes the version, and a page should not count a million cluster labels each time.
        other = version != self._version and time.monotonic() - self._taken >= SNAPSHOT_SECONDS
        if self._version is None or own or other:
            # DDL only: Python's sqlite3 opens no transaction for it, so nothing takes the write lock.
            db.execute("DROP TABLE IF EXISTS temp.cluster_sizes")
            db.execute("CREATE TEMP TABLE cluster_sizes AS SELECT cluster_id, COUNT(*) AS n FROM docs "
                       "WHERE cluster_id IS NOT NULL GROUP BY cluster_id HAVING COUNT(*) >= 2")
            db.execute("CREATE INDEX temp.cluster_sizes_n ON cluster_sizes (n DESC, cluster_id)")
            self._version = (db.execute("PRAGMA data_version").fetchone()[0], db.total_changes)
            self._taken = time.monotonic()
        return db

    def summary(self) -> ClusterSummary:
        db = self._fresh()
        sizes = [(int(n), int(c)) for n, c in db.execute("SELECT n, COUNT(*) FROM temp.cluster_sizes GROUP BY n "
                                                         "ORDER BY n")]
        return ClusterSummary(sum(c for _, c in sizes), sum(n * c for n, c in sizes), sizes)

    def page(self, offset: int, size: int) -> list[ClusterSize]:
        rows = self._fresh().execute("SELECT cluster_id, n FROM temp.cluster_sizes ORDER BY n DESC, cluster_id "
                                     "LIMIT ? OFFSET ?", (max(0, size), max(0, offset)))
        return [ClusterSize(c, int(n)) for c, n in rows]

    def of(self, cluster_ids: Sequence[str]) -> dict[str, int]:
        db = self._database.connect()
        out: dict[str, int] = {}
        for chunk in chunks(list(dict.fromkeys(cluster_ids)), MAX_PARAMS):
            out.update((c, int(n)) for c, n in db.execute(
                f"SELECT cluster_id, COUNT(*) FROM docs WHERE cluster_id IN ({marks(len(chunk))}) GROUP BY cluster_id",
                chunk))
        return out


def sample(database: Database, dims: int, n: int, seed: int) -> list[StoredDoc]:
    """About ``n`` documents at random positions of the write order (``seq``, an index range each: no
    scan); positions left by replaced documents are skipped, so a little fewer may come back."""
    db = database.connect()
    lo, hi = db.execute("SELECT MIN(seq), MAX(seq) FROM docs").fetchone()
    if lo is None or n <= 0:
        return []
    span = hi - lo + 1
    seqs = sorted(random.Random(seed).sample(range(lo, hi + 1), min(n, span)))
    out: list[StoredDoc] = []
    for chunk in chunks(seqs, MAX_PARAMS):
        rows = db.execute(f"SELECT {database.doc_columns} FROM docs WHERE seq IN ({marks(len(chunk))}) ORDER BY seq",
                          chunk)
        out.extend(stored_docs(rows, dims))
    return out
