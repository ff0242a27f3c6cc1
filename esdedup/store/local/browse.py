"""What a person browsing an embedded collection reads (`esdedup.store.base.Store.cluster_summary` and the
methods after it), each a bounded query.

Clusters: one ``GROUP BY cluster_id`` over the ``docs_cluster`` index into a temporary table of this
connection (`ClusterSizes`), with an index on the size, so that a page of clusters largest first, deep or
not, is an index range and the size histogram a small ``GROUP BY``. The snapshot is taken again when this
connection has changed the collection (``total_changes``), and when another one has (``PRAGMA data_version``)
once it is `SNAPSHOT_SECONDS` old. A temporary table is not a write to the collection: a read-only file is browsed alike.

Text: an FTS5 table ``texts`` (contentless: it keeps the index, not a second copy of the text), its rowid
the document's ``seq``. Like the key tables it is indexed lazily, up to a ``seq`` remembered in ``meta``:
after each `LocalStore.write` (the documents it wrote from their sources in memory, `TextIndex.texts_of`;
any others from their rows) and before a search. A replaced document gets a new ``seq``, so the old
entry joins no row and drops out of the answers without a delete. Chinese, Japanese and Korean characters
are indexed one token each (`spaced`), so a query of any length matches characters in sequence as a
phrase; other scripts are indexed by word. A file that cannot be written (and has no text index yet) is
searched by reading at most `SCAN_LIMIT` documents, and the answer says how many were read.
"""
from __future__ import annotations

import json
import random
import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from esdedup.fingerprint import native
from esdedup.store.base import ClusterSize, ClusterSummary, FoundDoc, SearchPage, StoredDoc, id_variants
from esdedup.store.local.rows import stored_docs
from esdedup.store.local.sqlite import MAX_PARAMS, Database, chunks, is_read_only, marks

#: Matches counted for a search's total, at most (a common character matches most of a collection).
TOTAL_CAP = 1000
#: Documents a search reads at most where there is no text index (a read-only file written before it).
SCAN_LIMIT = 20_000
#: Seconds a cluster snapshot stands for other writers' commits (this connection's own are taken in at once).
SNAPSHOT_SECONDS = 30.0
#: Documents indexed per statement when the text index catches up.
TEXT_CHUNK = 20_000
#: The characters `spaced` sets apart (inclusive code point ranges): the CJK blocks.
CJK_RANGES = ((0x2E80, 0x9FFF), (0xAC00, 0xD7AF), (0xF900, 0xFAFF), (0x20000, 0x3FFFF))
_CJK = re.compile("([" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in CJK_RANGES) + "])")


def spaced(text: str) -> str:
    """``text`` with a space around each CJK character, so that FTS5's ``unicode61`` tokenizer makes each
    one a token (it would take a run of them for one word)."""
    # The split keeps each captured character as its own piece: joined with spaces, each stands alone.
    return " ".join(_CJK.split(text))


def spaced_many(texts: list[str]) -> list[str]:
    """`spaced` of each text: in the native core when it is in use (`esdedup.fingerprint.native.spaced_texts`),
    but for the texts it hands back."""
    done = native.spaced_texts(texts, CJK_RANGES)
    if done is None:
        return [spaced(t) for t in texts]
    return [spaced(t) if s is None else s for t, s in zip(texts, done, strict=True)]


def fts_phrase(query: str) -> str | None:
    """``query`` as one FTS5 phrase (its tokens in sequence), or None when it has no token at all."""
    tokens = re.findall(r"\w+", spaced(query))
    if not tokens:
        return None
    return '"' + " ".join(tokens).replace('"', '""') + '"'


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


class TextIndex:
    """The FTS5 table ``texts`` of one collection (see the module docstring)."""

    def __init__(self, database: Database, fields: Callable[[], tuple[str, str]] = lambda: ("title", "text")) -> None:
        self._database = database
        self._fields = fields
        #: The file has no text index and cannot get one: searches read a bounded number of documents.
        self.unavailable = False

    def texts_of(self, written: Iterable[tuple[int, Mapping[str, Any]]]) -> dict[int, tuple[str, str]]:
        """The title and body `merge` indexes for documents just written, by ``seq``, from their sources as
        written (not read back and decoded). A document whose title or text is neither a string nor absent is
        left out: `merge` reads its row, and indexes what the stored JSON gives back."""
        title, text = self._fields()
        seqs: list[int] = []
        parts: list[str] = []
        for seq, src in written:
            a, b = src.get(title), src.get(text)
            if (a is None or type(a) is str) and (b is None or type(b) is str):
                seqs.append(seq)
                parts += (a or "", b or "")
        done = spaced_many(parts)
        return {seq: (done[2 * x], done[2 * x + 1]) for x, seq in enumerate(seqs)}

    def merge(self, known: Mapping[int, tuple[str, str]] | None = None) -> None:
        """Index the title and text of documents written since the last merge; ``known``: those of some of
        them already (`texts_of`), the others are read from their rows."""
        if self.unavailable:
            return
        known = known or {}
        db = self._database.connect()
        try:
            row = db.execute("SELECT value FROM meta WHERE key = 'indexed:texts'").fetchone()
            mark = int(row[0]) if row else 0
            top = db.execute("SELECT MAX(seq) FROM docs").fetchone()[0] or 0
            if top <= mark and row is not None:
                return
            if self._database.read_only:
                raise sqlite3.OperationalError("readonly database")
            title, text = self._fields()
            with db:
                db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS texts USING fts5(title, body, content='', "
                           "tokenize='unicode61 remove_diacritics 2')")
                while seqs := [r[0] for r in db.execute("SELECT seq FROM docs WHERE seq > ? ORDER BY seq LIMIT ?",
                                                        (mark, TEXT_CHUNK))]:
                    read: dict[int, tuple[str, str]] = {}
                    for chunk in chunks([s for s in seqs if s not in known], MAX_PARAMS):
                        read.update((s, _fields_of(src, title, text)) for s, src in db.execute(
                            f"SELECT seq, source FROM docs WHERE seq IN ({marks(len(chunk))})", chunk))
                    read.update((s, known[s]) for s in seqs if s in known)
                    # A row read by its seq alone and gone by the time its source was read has no text to index.
                    db.executemany("INSERT INTO texts (rowid, title, body) VALUES (?, ?, ?)",
                                   [(s, *read[s]) for s in seqs if s in read])
                    mark = seqs[-1]
                db.execute("INSERT OR REPLACE INTO meta VALUES ('indexed:texts', ?)", (str(max(mark, top)),))
        except sqlite3.OperationalError as exc:
            if not is_read_only(exc):
                raise
            self._database.read_only = True
            self.unavailable = not _has_table(db, "texts")

    def search(self, query: str, offset: int, size: int) -> SearchPage:
        query = query.strip()
        if not query:
            return SearchPage([], 0)
        self.merge()
        db = self._database.connect()
        ids = id_variants(query)
        exact = {i: (src, c) for i, src, c in db.execute(
            f"SELECT id, source, cluster_id FROM docs WHERE id IN ({marks(len(ids))})", ids)}
        if self.unavailable:
            return self._scan(db, query, offset, size)
        phrase = fts_phrase(query)
        found = [FoundDoc(i, _source(src), None, c) for i, (src, c) in sorted(exact.items())][offset:offset + size]
        total = len(exact)
        if phrase is not None and len(found) < size:
            match = "SELECT rowid FROM texts WHERE texts MATCH ?"
            total += db.execute(f"SELECT COUNT(*) FROM ({match} LIMIT {TOTAL_CAP + 1})", (phrase,)).fetchone()[0]
            # Write order, not a relevance rank: a rank would score every match of a common character.
            seqs = [r[0] for r in db.execute(f"{match} ORDER BY rowid LIMIT ? OFFSET ?",
                                             (phrase, size - len(found), max(0, offset - len(exact))))]
            by_seq: dict[int, tuple[str, str | None, str | None]] = {}
            for chunk in chunks(seqs, MAX_PARAMS):
                by_seq.update((s, (i, src, c)) for s, i, src, c in db.execute(
                    f"SELECT seq, id, source, cluster_id FROM docs WHERE seq IN ({marks(len(chunk))})", chunk))
            found += [FoundDoc(i, _source(src), None, c) for s in seqs if s in by_seq
                      for i, src, c in [by_seq[s]] if i not in exact]
        elif phrase is not None:
            total += db.execute(f"SELECT COUNT(*) FROM (SELECT rowid FROM texts WHERE texts MATCH ? LIMIT "
                                f"{TOTAL_CAP + 1})", (phrase,)).fetchone()[0]
        return SearchPage(found[:size], min(total, TOTAL_CAP), total > TOTAL_CAP)

    def _scan(self, db: sqlite3.Connection, query: str, offset: int, size: int) -> SearchPage:
        """No text index: the first `SCAN_LIMIT` documents in write order, read for ``query`` as a substring."""
        needle = query.casefold()
        title, text = self._fields()
        hits = []
        read = 0
        for doc_id, src, cluster_id in db.execute("SELECT id, source, cluster_id FROM docs ORDER BY seq LIMIT ?",
                                                  (SCAN_LIMIT,)):
            read += 1
            fields = _fields_of(src, title, text, spaced=False)
            if needle in doc_id.casefold() or any(needle in f.casefold() for f in fields):
                hits.append(FoundDoc(doc_id, _source(src), None, cluster_id))
        return SearchPage(hits[offset:offset + size], len(hits), False, read)


def _has_table(db: sqlite3.Connection, name: str) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone() is not None


def _source(raw: str | None) -> dict[str, Any]:
    return json.loads(raw) if raw else {}


def _fields_of(raw: str | None, title: str, text: str, *, spaced: bool = True) -> tuple[str, str]:
    src = _source(raw)
    a, b = str(src.get(title) or ""), str(src.get(text) or "")
    return (_spaced(a), _spaced(b)) if spaced else (a, b)


_spaced = spaced
