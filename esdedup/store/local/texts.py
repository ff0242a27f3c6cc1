"""The embedded store's text index: what `esdedup.store.base.Store.search_text` reads.

An FTS5 table ``texts`` (contentless: it keeps the index, not a second copy of the text), its rowid the
document's ``seq``, in a file of its own beside the collection's (``<name>.sqlite.texts``, `texts_path`). A
file of its own because it is written by readers (a search, the thread of `TextIndex.catch_up_in_background`)
while an ingest may be writing the collection: commits to another file neither wait for the collection's write
lock nor look to the collection like another writer's (``PRAGMA data_version``, which `LocalStore.write_lock`
reads).

The index is caught up lazily, up to a ``seq`` remembered in its own ``meta``: a search first indexes every
document written since, reading its title and text from its row, so ingest spends nothing on an index that
only a person searching needs. `TextIndex.catch_up_in_background` does that work ahead of a first search, in
a thread of its own (the review app starts it as it opens); a search waits for that thread, then catches up
whatever was written after it. A document replaced under its id gets a new ``seq``, so the old entry joins no
row and drops out of the answers without a delete. The file names the collection it indexes (a random id in
both ``meta`` tables): one whose collection was deleted and made again is emptied and built again.

Chinese, Japanese and Korean characters are indexed one token each (`spaced`), so a query of any length
matches characters in sequence as a phrase; other scripts are indexed by word. A collection whose text index
cannot be written or read (a read-only file or folder without one) is searched by reading at most
`SCAN_LIMIT` documents, and the answer says how many were read; a read-only collection written by an
esdedup that kept the table inside the collection's file is searched there.
"""
from __future__ import annotations

import json
import logging
import re
import secrets
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from esdedup.store.base import FoundDoc, SearchPage
from esdedup.store.local import native_texts
from esdedup.store.local.sqlite import (
    BUSY_SECONDS,
    MAX_PARAMS,
    Database,
    chunks,
    is_read_only,
    marks,
    read_as_it_is,
    switch_to_wal,
)
from esdedup.store.names import id_variants

log = logging.getLogger(__name__)

#: Matches counted for a search's total, at most (a common character matches most of a collection).
TOTAL_CAP = 1000
#: Documents a search reads at most where there is no text index (a read-only file written before it).
SCAN_LIMIT = 20_000
#: Documents indexed per statement when the text index catches up (FTS5 writes a segment per statement and
#: merges segments as they pile up: few large statements).
TEXT_CHUNK = 20_000
#: The characters `spaced` sets apart (inclusive code point ranges): the CJK blocks.
CJK_RANGES = ((0x2E80, 0x9FFF), (0xAC00, 0xD7AF), (0xF900, 0xFAFF), (0x20000, 0x3FFFF))
_CJK = re.compile("([" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in CJK_RANGES) + "])")
#: The ``meta`` key of the collection's id, in both files, and of the last ``seq`` indexed.
_ID_KEY = "text_index"
_MARK_KEY = "indexed"
_SCHEMA = ("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
           "CREATE VIRTUAL TABLE IF NOT EXISTS texts USING fts5(title, body, content='', "
           "tokenize='unicode61 remove_diacritics 2');")

#: The index searched as it is: the table an older esdedup kept in the collection's own file.
IN_COLLECTION = "in the collection's file"


def texts_path(collection: Path) -> Path:
    """The text index's file of the collection in ``collection``."""
    return Path(str(collection) + ".texts")


def spaced(text: str) -> str:
    """``text`` with a space around each CJK character, so that FTS5's ``unicode61`` tokenizer makes each
    one a token (it would take a run of them for one word)."""
    # The split keeps each captured character as its own piece: joined with spaces, each stands alone.
    return " ".join(_CJK.split(text))


def spaced_many(texts: list[str]) -> list[str]:
    """`spaced` of each text: in the native core when it is in use (`esdedup.store.local.native_texts.spaced_texts`),
    but for the texts it hands back."""
    done = native_texts.spaced_texts(texts, CJK_RANGES)
    if done is None:
        return [spaced(t) for t in texts]
    return [spaced(t) if s is None else s for t, s in zip(texts, done, strict=True)]


def fts_phrase(query: str) -> str | None:
    """``query`` as one FTS5 phrase (its tokens in sequence), or None when it has no token at all."""
    tokens = re.findall(r"\w+", spaced(query))
    if not tokens:
        return None
    return '"' + " ".join(tokens).replace('"', '""') + '"'


def catch_up(index: sqlite3.Connection, docs: sqlite3.Connection, fields: tuple[str, str],
             stop: threading.Event | None = None) -> None:
    """Index the documents of the collection (``docs``) written since the index's mark, `TEXT_CHUNK` documents
    a transaction of ``index`` (a search waiting for another connection's catching up waits for one chunk);
    ``stop``: when set, return after the chunk being indexed. Nothing new: no transaction."""
    top = docs.execute("SELECT MAX(seq) FROM docs").fetchone()[0] or 0
    while _mark(index) < top and not (stop is not None and stop.is_set()):
        index.execute("BEGIN IMMEDIATE")
        try:
            mark = _mark(index)  # again, inside the transaction that moves it: another connection may have
            if mark < top:
                rows = docs.execute("SELECT seq, source FROM docs WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?",
                                    (mark, top, TEXT_CHUNK)).fetchall()
                _insert(index, _spaced_rows(rows, *fields))
                # A short chunk read every row up to top (the seqs in between are gone: replaced or deleted).
                mark = rows[-1][0] if len(rows) == TEXT_CHUNK else top
                index.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (_MARK_KEY, str(mark)))
            index.execute("COMMIT")
        except BaseException:
            if index.in_transaction:
                index.execute("ROLLBACK")
            raise


def _spaced_rows(rows: list[tuple[int, str | None]], title: str, text: str) -> list[tuple[int, str, str]]:
    """(``seq``, title, body) of each row of (``seq``, source), `spaced`; a row without either has nothing
    to index."""
    seqs: list[int] = []
    parts: list[str] = []
    for seq, src in rows:
        a, b = _fields_of(src, title, text)
        if a or b:
            seqs.append(seq)
            parts += (a, b)
    done = spaced_many(parts)
    return [(seq, done[2 * x], done[2 * x + 1]) for x, seq in enumerate(seqs)]


def _mark(index: sqlite3.Connection) -> int:
    """The last ``seq`` the index holds every document up to."""
    row = index.execute("SELECT value FROM meta WHERE key = ?", (_MARK_KEY,)).fetchone()
    return int(row[0]) if row else 0


#: Inserts the rows of a JSON array of [seq, title, body] (`_insert`).
_INSERT_FROM_JSON = ("INSERT INTO texts (rowid, title, body) SELECT json_extract(value, '$[0]'), "
                     "json_extract(value, '$[1]'), json_extract(value, '$[2]') FROM json_each(?)")


def _insert(index: sqlite3.Connection, rows: list[tuple[int, str, str]]) -> None:
    """Index ``rows`` (``seq``, title, body) in one statement that reads them from a JSON array: SQLite then
    indexes them all with the GIL released once, where a statement a row would take the GIL back for each
    (a thread indexing beside a busy one waits for it every time). Text that JSON cannot carry (a lone
    surrogate), or an SQLite built without its JSON functions, goes a row at a time."""
    try:
        index.execute(_INSERT_FROM_JSON, (orjson.dumps(rows).decode(),))
        return
    except orjson.JSONEncodeError:
        pass
    except sqlite3.OperationalError as exc:
        if "json" not in str(exc).lower():
            raise
    # SQLite takes no lone surrogate either (a source another client wrote may hold one): such a character is
    # indexed as U+FFFD, the rest of its text as it is.
    index.executemany("INSERT INTO texts (rowid, title, body) VALUES (?, ?, ?)",
                      [(seq, _storable(t), _storable(b)) for seq, t, b in rows])


def _storable(text: str) -> str:
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return re.sub("[\ud800-\udfff]", "\ufffd", text)


def name_collection(db: sqlite3.Connection) -> bool:
    """Give the collection the id its text index will name, unless it has one; True when this gave it. A new
    collection gets it in the transaction that creates it: a first search then writes nothing to the collection
    (an ingest running beside it would take such a write for another writer's, `LocalStore.write_lock`)."""
    return bool(db.execute("INSERT OR IGNORE INTO meta VALUES (?, ?)", (_ID_KEY, secrets.token_hex(16))).rowcount)


def open_index(path: Path, collection_id: str) -> sqlite3.Connection:
    """The text index file ``path`` of the collection ``collection_id``, made when missing; emptied when
    it indexed another collection under the same name."""
    db = sqlite3.connect(path, timeout=BUSY_SECONDS, isolation_level=None, check_same_thread=False)
    try:
        switch_to_wal(db)
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(_SCHEMA)
        db.execute("BEGIN IMMEDIATE")
        row = db.execute("SELECT value FROM meta WHERE key = ?", (_ID_KEY,)).fetchone()
        if row is None or row[0] != collection_id:
            db.execute("INSERT INTO texts (texts) VALUES ('delete-all')")
            db.execute("DELETE FROM meta")
            db.execute("INSERT INTO meta VALUES (?, ?)", (_ID_KEY, collection_id))
        db.execute("COMMIT")
    except BaseException:
        db.close()
        raise
    return db


class _CatchingUp:
    """A thread that catches the index up (`catch_up`) over connections of its own to the index and to the
    collection. A failure is logged and ends its work: the documents are in the collection, and the next search
    catches up from their rows."""

    def __init__(self, index_path: Path, collection_path: Path, collection_id: str,
                 fields: tuple[str, str]) -> None:
        self._paths = (index_path, collection_path)
        self._collection_id = collection_id
        self._fields = fields
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="esdedup-texts", daemon=True)
        self._thread.start()

    def wait(self) -> None:
        self._thread.join()

    def stop(self) -> None:
        """Stop after the chunk being indexed, and wait for that."""
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        index = docs = None
        try:
            index = open_index(self._paths[0], self._collection_id)
            docs = sqlite3.connect(self._paths[1], timeout=BUSY_SECONDS, check_same_thread=False)
            catch_up(index, docs, self._fields, self._stop)
        except Exception as exc:  # noqa: BLE001 - whatever it was, the rows still hold the texts
            log.warning("the text index of %s could not be brought up to date ahead of a search (%s); the search "
                        "will catch up from the stored documents", self._paths[1], exc)
        finally:
            for db in (index, docs):
                if db is not None:
                    db.close()


class TextIndex:
    """The text index of one collection (see the module docstring)."""

    def __init__(self, database: Database, fields: Callable[[], tuple[str, str]] = lambda: ("title", "text")) -> None:
        self._database = database
        self._path = texts_path(database.path)
        self._fields = fields
        #: The file has no text index and cannot get one: searches read a bounded number of documents.
        self.unavailable = False
        self._catching_up: _CatchingUp | None = None
        #: The index this connection catches up and searches; the one it searches as it is where it cannot.
        self._index: sqlite3.Connection | None = None
        self._as_is: sqlite3.Connection | str | None = None

    def catch_up_in_background(self) -> None:
        """Start catching the index up with the documents written since it was last searched, in a thread of its
        own, so that a first search finds it ready (a search waits for the thread). Nothing where the index
        cannot be written."""
        if self._catching_up is not None or self.unavailable or self._database.read_only:
            return
        try:
            collection_id = self._collection_id()
        except sqlite3.OperationalError as exc:
            if not is_read_only(exc):
                raise
            return
        self._catching_up = _CatchingUp(self._path, self._database.path, collection_id, self._fields())

    def close(self) -> None:
        """Stop catching up in the background (after the chunk being indexed) and close the index."""
        catching_up, self._catching_up = self._catching_up, None
        if catching_up is not None:
            catching_up.stop()
        for db in (self._index, self._as_is):
            if isinstance(db, sqlite3.Connection):
                db.close()
        self._index = self._as_is = None

    def drop(self) -> None:
        """Close, and delete the index's file with its write-ahead log."""
        self.close()
        for suffix in ("", "-wal", "-shm"):
            Path(str(self._path) + suffix).unlink(missing_ok=True)

    def _collection_id(self) -> str:
        """The collection's id that its text index names, written into the collection's ``meta`` on first use. A
        collection an older esdedup indexed in its own file loses that table then (an index of its own
        replaces it)."""
        db = self._database.connect()
        row = db.execute("SELECT value FROM meta WHERE key = ?", (_ID_KEY,)).fetchone()
        if row is None:
            with db:
                if name_collection(db):
                    db.execute("DROP TABLE IF EXISTS texts")
                    db.execute("DELETE FROM meta WHERE key = 'indexed:texts'")
            row = db.execute("SELECT value FROM meta WHERE key = ?", (_ID_KEY,)).fetchone()
        return str(row[0])

    def caught_up(self) -> sqlite3.Connection | None:
        """A connection to the index to search, caught up with every document written where it can be
        written; None when there is none (`unavailable`). Waits for the thread catching up in the background,
        if any (what it could not do, this does)."""
        catching_up, self._catching_up = self._catching_up, None
        if catching_up is not None:
            catching_up.wait()
        db = self._database.connect()
        if self._index is None and not self.unavailable and not self._database.read_only:
            try:
                self._index = open_index(self._path, self._collection_id())
            except sqlite3.OperationalError as exc:
                if not is_read_only(exc):
                    raise
        if self._index is not None:
            catch_up(self._index, db, self._fields())
            return self._index
        if self._as_is is None and not self.unavailable:
            self._as_is = self._as_it_is(db)
        if self._as_is == IN_COLLECTION:
            return db
        return self._as_is if isinstance(self._as_is, sqlite3.Connection) else None

    def _as_it_is(self, db: sqlite3.Connection) -> sqlite3.Connection | str | None:
        """The index of a collection whose index cannot be written, searched as it is: its own file where
        that names this collection, else the table an older esdedup kept in the collection's file; None
        (`unavailable`) when neither is there."""
        row = db.execute("SELECT value FROM meta WHERE key = ?", (_ID_KEY,)).fetchone()
        if row is not None and self._path.exists():
            index = read_as_it_is(self._path)
            try:
                named = index.execute("SELECT value FROM meta WHERE key = ?", (_ID_KEY,)).fetchone()
                if named is not None and named[0] == row[0]:
                    return index
            except sqlite3.DatabaseError:
                pass
            index.close()
        elif row is None and db.execute("SELECT 1 FROM sqlite_master WHERE name = 'texts'").fetchone():
            return IN_COLLECTION
        self.unavailable = True
        return None

    def search(self, query: str, offset: int, size: int) -> SearchPage:
        query = query.strip()
        if not query:
            return SearchPage([], 0)
        index = self.caught_up()
        db = self._database.connect()
        ids = id_variants(query)
        exact = {i: (src, c) for i, src, c in db.execute(
            f"SELECT id, source, cluster_id FROM docs WHERE id IN ({marks(len(ids))})", ids)}
        if index is None:
            return self._scan(db, query, offset, size)
        phrase = fts_phrase(query)
        found = [FoundDoc(i, _source(src), None, c) for i, (src, c) in sorted(exact.items())][offset:offset + size]
        total = len(exact)
        if phrase is not None and len(found) < size:
            match = "SELECT rowid FROM texts WHERE texts MATCH ?"
            total += index.execute(f"SELECT COUNT(*) FROM ({match} LIMIT {TOTAL_CAP + 1})", (phrase,)).fetchone()[0]
            # Write order, not a relevance rank: a rank would score every match of a common character.
            seqs = [r[0] for r in index.execute(f"{match} ORDER BY rowid LIMIT ? OFFSET ?",
                                                (phrase, size - len(found), max(0, offset - len(exact))))]
            by_seq: dict[int, tuple[str, str | None, str | None]] = {}
            for chunk in chunks(seqs, MAX_PARAMS):
                by_seq.update((s, (i, src, c)) for s, i, src, c in db.execute(
                    f"SELECT seq, id, source, cluster_id FROM docs WHERE seq IN ({marks(len(chunk))})", chunk))
            found += [FoundDoc(i, _source(src), None, c) for s in seqs if s in by_seq
                      for i, src, c in [by_seq[s]] if i not in exact]
        elif phrase is not None:
            total += index.execute(f"SELECT COUNT(*) FROM (SELECT rowid FROM texts WHERE texts MATCH ? LIMIT "
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
            fields = _fields_of(src, title, text)
            if needle in doc_id.casefold() or any(needle in f.casefold() for f in fields):
                hits.append(FoundDoc(doc_id, _source(src), None, cluster_id))
        return SearchPage(hits[offset:offset + size], len(hits), False, read)


def _source(raw: str | None) -> dict[str, Any]:
    if not raw:
        return {}
    try:
        return orjson.loads(raw)  # type: ignore[no-any-return]
    except orjson.JSONDecodeError:  # what orjson refuses (a lone surrogate) was stored by the standard library
        return json.loads(raw)  # type: ignore[no-any-return]


def _fields_of(raw: str | None, title: str, text: str) -> tuple[str, str]:
    """The title and text of a stored source, as strings (absent: empty)."""
    src = _source(raw)
    return str(src.get(title) or ""), str(src.get(text) or "")
