"""The SQLite file of one collection: its schema, the connection, and SQLite's errors as `StoreError`."""
from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from esdedup.errors import ConfigError, StoreError
from esdedup.store.local.native_rows import open_row_writer
from esdedup.store.local.rows import DOC_COLUMNS

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS docs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, simhash TEXT NOT NULL, vector BLOB,
    tokens INTEGER, chars INTEGER, empty INTEGER NOT NULL, content_sha1 TEXT, cluster_id TEXT,
    duplicate_of TEXT, source TEXT, minhash BLOB, shingles INTEGER, banded INTEGER NOT NULL,
    wseq INTEGER NOT NULL DEFAULT 0, cluster_seq INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS bands (key TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY (key, id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS lsh (key TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY (key, id)) WITHOUT ROWID;
"""
#: The index of content SHA-1s (`Database.build_deferred_index`).
SHA1_INDEX = "docs_sha1 ON docs (content_sha1)"
#: Columns added after the first release of the schema above (added to older files when they are opened).
ADDED_COLUMNS = {"wseq": "INTEGER NOT NULL DEFAULT 0", "cluster_seq": "INTEGER NOT NULL DEFAULT 0"}
#: How long a writer waits for another process's write transaction or batch before giving up.
BUSY_SECONDS = 120.0
#: Host parameters per statement (SQLite's default limit is 32766).
MAX_PARAMS = 30000
#: Pages the write-ahead log holds before the connection that commits copies them into the file itself
#: (SQLite's default is 1,000): `Database.checkpoint_soon` has a thread copy them long before, so a commit
#: seldom waits for it; this bounds the log when that thread lags (64 MiB of 4 KiB pages).
WAL_PAGES = 16384

log = logging.getLogger(__name__)


def default_data_dir() -> Path:
    """``$ESDEDUP_DATA_DIR``, else ``$XDG_DATA_HOME/esdedup``, else ``~/.local/share/esdedup``."""
    if os.environ.get("ESDEDUP_DATA_DIR"):
        return Path(os.environ["ESDEDUP_DATA_DIR"])
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "esdedup"


def checked_folder(path: Path) -> Path:
    """``path`` if it is a folder or can become one; ConfigError when it, or a folder above it, is a file."""
    for p in (path, *path.parents):
        if p.exists():
            if not p.is_dir():
                raise ConfigError(f"local store folder {path}: {p} is a file, not a folder")
            break
    return path


def is_read_only(exc: sqlite3.Error) -> bool:
    """Whether SQLite refused ``exc``'s statement because the file or its folder cannot be written."""
    return "readonly" in str(exc).lower() or getattr(exc, "sqlite_errorname", "").startswith("SQLITE_READONLY")


def read_as_it_is(path: Path) -> sqlite3.Connection:
    """A connection that reads the file ``path`` as it is, without its write-ahead log's shared memory (which
    a read-only folder cannot hold): for a file no one writes meanwhile."""
    return sqlite3.connect(f"{path.resolve().as_uri()}?immutable=1", uri=True)


def chunks(items: list, size: int) -> Iterator[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def marks(n: int) -> str:
    """``n`` comma-separated host parameters, for ``IN (...)``."""
    return ",".join("?" * n)


#: How long `switch_to_wal` sleeps between two tries.
WAL_RETRY_SECONDS = 0.05


def switch_to_wal(db: sqlite3.Connection, wait: float = BUSY_SECONDS) -> None:
    """Put the file of ``db`` in write-ahead-log mode (a no-op when it is already), waiting up to ``wait``
    seconds for another connection that holds the file, as a write waits. SQLite's busy timeout does not
    cover the switch: while another process holds a write transaction on a file that is not in WAL mode yet
    (a new store that process is creating), the switch fails at once with "database is locked"."""
    deadline = time.monotonic() + wait
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL").fetchall()
            return
        except sqlite3.OperationalError as exc:
            if not ("locked" in str(exc) or "busy" in str(exc)) or time.monotonic() >= deadline:
                raise
        time.sleep(WAL_RETRY_SECONDS)


#: What a connection that writes sets first. Band keys are random, so every insert walks the band index from
#: its root: a page cache large enough for the index's upper levels keeps them in memory instead of reading
#: them again (SQLite's default is 2 MB; negative = KiB).
CONNECTION_PRAGMAS = ("PRAGMA synchronous=NORMAL", f"PRAGMA wal_autocheckpoint={WAL_PAGES}", "PRAGMA cache_size=-65536")
#: The same for the extension's writer of document rows (`Database.row_writer`), with a smaller page cache: it
#: inserts into the ``docs`` table and its two indexes only, never the band keys' tables, and its cache would
#: add to a run's peak memory beside the main connection's.
ROW_WRITER_PRAGMAS = (*CONNECTION_PRAGMAS[:2], "PRAGMA cache_size=-16384")


class Database:
    """The file ``path`` of the collection ``name``, connected on first use.

    ``read_only``: the file cannot be written (a read-only file or folder), found when it is opened or
    first written. ``doc_columns``: the ``docs`` columns a `StoredDoc` is read from (`DOC_COLUMNS`; a
    column an older read-only file lacks reads as 0)."""

    def __init__(self, name: str, path: Path) -> None:
        self.name = name
        self.path = path
        self.read_only = False
        self.doc_columns = DOC_COLUMNS
        self._db: sqlite3.Connection | None = None
        self._checkpointer: _Checkpointer | None = None
        #: The extension's writer of rows on a connection of its own (`row_writer`), None before it is asked
        #: for, False where there is none.
        self._row_writer: Any = None
        #: The file has no index of content SHA-1s yet: "created" (this connection created the file and left
        #: it for `build_deferred_index`), "missing" (found so: its creator stopped first; the next write
        #: builds it, `build_missing_index`), or None (it has one).
        self._sha1_pending: str | None = None

    @contextlib.contextmanager
    def errors(self) -> Iterator[None]:
        """SQLite's exceptions inside as one `StoreError` that says what to do."""
        try:
            yield
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise StoreError(f"local index {self.name!r} ({self.path}) stayed locked by another process for "
                                 f"more than {BUSY_SECONDS:.0f} s; try again when it has finished") from None
            if is_read_only(exc):
                raise StoreError(f"local index {self.name!r} ({self.path}) is read-only: this needs to write "
                                 "to it (check the permissions of the file and its folder)") from None
            raise StoreError(f"local index {self.name!r} ({self.path}): {exc}") from None
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"local index {self.name!r} ({self.path}) is damaged or not an esdedup store: "
                             f"{exc}") from None

    def connect(self) -> sqlite3.Connection:
        if self._db is None:
            with self.errors():
                self._db = self._open()
        return self._db

    def row_writer(self) -> Any | None:
        """The extension's writer of rows (`esdedup.store.local.native_rows`) on a connection of its own to the
        file, opened on first use; None where there is none (or the file cannot be written)."""
        if self._row_writer is None:
            self.connect()  # the file, its schema and its log mode first
            with self.errors():
                writer = None if self.read_only else open_row_writer(self.path, BUSY_SECONDS, ROW_WRITER_PRAGMAS)
            self._row_writer = writer if writer is not None else False
        return self._row_writer or None

    def checkpoint_soon(self) -> None:
        """Have what was just committed copied from the write-ahead log into the file by a thread of its own
        (`_Checkpointer`), not by the next commits."""
        if self._checkpointer is None:
            self._checkpointer = _Checkpointer(self.path, owner=self)
        self._checkpointer.ask()

    def build_deferred_index(self) -> None:
        """Index the content SHA-1s of a file this connection created (`_add_columns` left it for now): one
        sort of every row, where a row at a time (random SHA-1s) would cost an ingest of new documents about
        a tenth of its time."""
        if self._sha1_pending == "created":
            self._build_sha1_index()

    def build_missing_index(self) -> None:
        """Index the content SHA-1s of a file another connection created and left without that index: before
        this one writes to it (a connection that only reads writes nothing, which a writer would take for
        another writer's write)."""
        if self._sha1_pending == "missing":
            self._build_sha1_index()

    def _build_sha1_index(self) -> None:
        if self._db is None:
            return
        with self._db:
            self._db.execute(f"CREATE INDEX IF NOT EXISTS {SHA1_INDEX}")
        self._sha1_pending = None

    def close(self) -> None:
        if self._row_writer:  # after the write it may be making
            self._row_writer.close()
        self._row_writer = None
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):  # the next connection to write to the file builds it then
                self.build_deferred_index()
        if self._checkpointer is not None:
            self._checkpointer.stop()
            self._checkpointer = None
        if self._db is not None:
            self._db.close()
            self._db = None

    def drop(self) -> None:
        """Close the connection and delete the file with its write-ahead log."""
        self._sha1_pending = None
        self.close()
        for suffix in ("", "-wal", "-shm"):
            Path(str(self.path) + suffix).unlink(missing_ok=True)

    def _open(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Write transactions take the write lock when they begin (IMMEDIATE), waiting for it as long as
            # `timeout` says: a transaction that read first and wrote later would fail at once ("database is
            # locked") when another process had written in between.
            db = sqlite3.connect(self.path, timeout=BUSY_SECONDS, isolation_level="IMMEDIATE")
            switch_to_wal(db)
        except sqlite3.OperationalError as exc:
            if not (is_read_only(exc) and self.path.exists()):
                raise StoreError(f"cannot open local store {self.path}: {exc}") from exc
            # A read-only folder: WAL needs to create its shared-memory file, so read the file as it is.
            db = read_as_it_is(self.path)
            self.read_only = True
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open local store {self.path}: {exc}") from exc
        for pragma in CONNECTION_PRAGMAS:
            db.execute(pragma)
        have = {r[1] for r in db.execute("PRAGMA table_info(docs)")}
        if have and "seq" not in have:
            db.close()
            raise StoreError(f"local store {self.path} was written by an older esdedup (schema 1); its fingerprints "
                             "are not comparable with this version's: ingest the documents again into a new "
                             "index (or delete the file)")
        if not have or not self.read_only:
            db.executescript(SCHEMA)
        self._add_columns(db, have)
        return db

    def _add_columns(self, db: sqlite3.Connection, have: set[str]) -> None:
        """Add the columns newer versions keep to an older file; a read-only one reads them as 0."""
        missing = [c for c in ADDED_COLUMNS if have and c not in have]
        try:
            with db:
                for col in missing:
                    db.execute(f"ALTER TABLE docs ADD COLUMN {col} {ADDED_COLUMNS[col]}")
                db.execute("CREATE INDEX IF NOT EXISTS docs_cluster ON docs (cluster_id)")
                # Exact copies are found by their content SHA-1: those of a text without words always (it has no
                # band keys), those of any text where a crowded band lookup cut its candidates. It replaces
                # an index of the texts without words alone. A file created now gets it once its first
                # writes are done (`build_deferred_index`): nothing of a new file is looked up by it before.
                if not have:
                    self._sha1_pending = "created"
                elif db.execute("SELECT 1 FROM sqlite_master WHERE name = 'docs_sha1'").fetchone() is None:
                    self._sha1_pending = "missing"
                db.execute("DROP INDEX IF EXISTS docs_empty_sha1")
        except sqlite3.OperationalError as exc:
            if not is_read_only(exc):
                raise
            self.read_only = True
            for col in missing:
                self.doc_columns = self.doc_columns.replace(col, f"0 AS {col}")


class _Checkpointer:
    """A thread that copies the write-ahead log into the file (``PRAGMA wal_checkpoint(PASSIVE)``, which waits
    for no reader nor writer) over a connection of its own each time it is asked: the connection that writes
    then only appends its commits to the log, and this copies them meanwhile (SQLite lets go of the GIL as it
    does). A failure is logged and ends its work: the committing connection copies the log itself at
    `WAL_PAGES`, and when it closes."""

    def __init__(self, path: Path, owner: object | None = None) -> None:
        """``owner``: the object whose collection stops the thread too, when nobody called `stop` (a store
        dropped without `close` must not keep the thread and its connection to the file for the rest of the
        process: a service that opens a store per request, say)."""
        self._path = path
        self._asked = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="esdedup-checkpoint", daemon=True)
        self._thread.start()
        self._with_owner = weakref.finalize(owner, self.stop_soon) if owner is not None else None

    def ask(self) -> None:
        self._asked.set()

    def stop(self) -> None:
        """Stop after the copy under way, and wait for it."""
        if self._with_owner is not None:
            self._with_owner.detach()  # stopped: the owner's collection has nothing left to stop
        self.stop_soon()
        self._thread.join()

    def stop_soon(self) -> None:
        """Stop after the copy under way, without waiting (what a finalizer may do, in any thread)."""
        self._stopping = True
        self._asked.set()

    def _run(self) -> None:
        db = None
        try:
            db = sqlite3.connect(self._path, timeout=BUSY_SECONDS)
            while True:
                self._asked.wait()
                self._asked.clear()
                if self._stopping:
                    return
                db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except sqlite3.Error as exc:
            log.warning("the write-ahead log of %s is copied into the file by the commits from now on (%s)",
                        self._path, exc)
        finally:
            if db is not None:
                db.close()
