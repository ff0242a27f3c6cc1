"""The embedded store: one SQLite file per collection, no server.

Tables: ``meta`` (the FingerprintConfig, as in an Elasticsearch index's `_meta`), ``docs`` (one row per
document: SimHash hex, vector as float32 bytes, labels, article fields as JSON) and ``bands`` (band key,
document id). Band keys carry their table number (``"2:9f3a"``), so one ``bands`` table whose primary key
starts with the key is an index on every band at once.

MinHash LSH keys (40-bit integers in decimal, `esdedup.fingerprint.minhash.lsh_keys`) live in a table of their own,
``lsh``, laid out the same way. The vector is stored only when the config says documents carry it
(`FingerprintConfig.stores_vector`).
Writes only append document rows (a short text has 16 LSH keys, and 16 random B-tree inserts cost more
than the document itself). Keys are indexed lazily: ``docs.seq`` grows with every write (AUTOINCREMENT, never
reused, and a replaced document gets a new one), ``meta`` remembers up to which ``seq`` each key table is
indexed, and the first read that needs a table (lookup, shared keys, crowded keys) computes the keys of
the newer documents from their stored SimHash and MinHash signature, sorts them and inserts them in one
pass. An all-pairs search that joins LSH bands in memory (`esdedup.match.lookup`) never needs the ``lsh`` table.
Overwriting a document deletes its old key rows, recomputed the same way.

Several processes may use one collection. SQLite serialises their transactions (each write transaction
takes the write lock at its start, and waits up to `BUSY_SECONDS` for it); ingest also holds
`LocalStore.write_lock`, a lock file next to the database, for each batch, so that a batch's lookup,
labelling and write happen as one step for every writer (and labels need no settling afterwards). A
store that cannot be written (a read-only file or folder) is still read: keys of documents not yet
indexed are then indexed in temporary tables of the connection only.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import itertools
import json
import operator
import os
import sqlite3
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from esdedup.errors import ConfigError, IndexNotFound, StoreError
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.minhash import SIGNATURE_DTYPE
from esdedup.fingerprint.simhash import from_hex, to_hex
from esdedup.schema import LSH_KEYS, META_KEY, config_from_meta, key_field, meta_for
from esdedup.store.base import (
    KeyBatch,
    NewDoc,
    OpenResult,
    Probe,
    Root,
    StoredDoc,
    WriteResult,
    mismatch_error,
    union_groups,
    validate_name,
)
from esdedup.util.filelock import FileLock

_SCHEMA = """
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
#: Columns added after the first release of the schema above (added to older files when they are opened).
_ADDED_COLUMNS = {"wseq": "INTEGER NOT NULL DEFAULT 0", "cluster_seq": "INTEGER NOT NULL DEFAULT 0"}
#: How long a writer waits for another process's write transaction or batch before giving up.
BUSY_SECONDS = 120.0
#: Rows per transaction when writing.
WRITE_BATCH = 2000
#: Host parameters per statement (SQLite's default limit is 32766).
_MAX_PARAMS = 30000
#: Members of shared keys per `KeyBatch` (`LocalStore.key_batches`).
_KEY_BATCH = 5000
#: SELECTs per compound statement (SQLite's default limit is 500).
_COMPOUND = 400
# Ids read per key in a lookup, at least: enough to rank a crowd of a few hundred near-identical documents
# by shared keys (the exact copy of a probe first), few enough that a key shared by thousands costs a bounded read.
_SCAN_PER_KEY = 256


def default_data_dir() -> Path:
    """``$ESDEDUP_DATA_DIR``, else ``$XDG_DATA_HOME/esdedup``, else ``~/.local/share/esdedup``."""
    if os.environ.get("ESDEDUP_DATA_DIR"):
        return Path(os.environ["ESDEDUP_DATA_DIR"])
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "esdedup"


F = TypeVar("F", bound=Callable[..., Any])


def _sql_errors(fn: F) -> F:
    """Turn SQLite's exceptions in a public method (or generator) into one clear `StoreError`."""
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def gen(self: LocalStore, *args: Any, **kwargs: Any) -> Any:
            with self._errors():
                yield from fn(self, *args, **kwargs)
        return gen  # type: ignore[return-value]

    @functools.wraps(fn)
    def wrapper(self: LocalStore, *args: Any, **kwargs: Any) -> Any:
        with self._errors():
            return fn(self, *args, **kwargs)
    return wrapper  # type: ignore[return-value]


def _read_only(exc: sqlite3.Error) -> bool:
    return "readonly" in str(exc).lower() or getattr(exc, "sqlite_errorname", "").startswith("SQLITE_READONLY")


class LocalStore:
    """A collection in ``data_dir/<name>.sqlite``."""

    def __init__(self, name: str, data_dir: str | Path | None = None) -> None:
        self.name = validate_name(name)
        self.data_dir = _folder(Path(data_dir) if data_dir is not None else default_data_dir())
        self.path = self.data_dir / f"{name}.sqlite"
        self.lock_path = self.data_dir / f"{name}.sqlite.lock"
        self._db: sqlite3.Connection | None = None
        self._config: FingerprintConfig | None = None
        #: Nothing is ever re-sent here (see `Store.retried`).
        self.retried = 0
        #: Writers never need to settle labels here: `write_lock` serialises their batches.
        self.settles = False
        #: Rows, not JSON: the ``dedup`` fields are not encoded in advance for this store.
        self.takes_dedup_json = False
        #: The file cannot be written: keys not yet indexed are indexed in temporary tables only.
        self.read_only = False
        self._tail_marks: dict[str, int] = {}
        self._data_version: int | None = None
        self._cols = self._COLS

    # -- lifecycle -------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise StoreError(f"local index {self.name!r} ({self.path}) stayed locked by another process for "
                                 f"more than {BUSY_SECONDS:.0f} s; try again when it has finished") from None
            if _read_only(exc):
                raise StoreError(f"local index {self.name!r} ({self.path}) is read-only: this needs to write "
                                 "to it (check the permissions of the file and its folder)") from None
            raise StoreError(f"local index {self.name!r} ({self.path}): {exc}") from None
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"local index {self.name!r} ({self.path}) is damaged or not an esdedup store: "
                             f"{exc}") from None

    def _connect(self) -> sqlite3.Connection:
        if self._db is None:
            with self._errors():
                self._db = self._open_db()
        return self._db

    def _open_db(self) -> sqlite3.Connection:
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            # Write transactions take the write lock when they begin (IMMEDIATE), waiting for it as long as
            # `timeout` says: a transaction that read first and wrote later would fail at once ("database is
            # locked") when another process had written in between.
            db = sqlite3.connect(self.path, timeout=BUSY_SECONDS, isolation_level="IMMEDIATE")
            db.execute("PRAGMA journal_mode=WAL")
        except sqlite3.OperationalError as exc:
            if not (_read_only(exc) and self.path.exists()):
                raise StoreError(f"cannot open local store {self.path}: {exc}") from exc
            # A read-only folder: WAL needs to create its shared-memory file, so read the file as it is.
            db = sqlite3.connect(f"{self.path.resolve().as_uri()}?immutable=1", uri=True)
            self.read_only = True
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open local store {self.path}: {exc}") from exc
        db.execute("PRAGMA synchronous=NORMAL")
        # Band keys are random: a page cache that holds the band index's upper levels makes bulk writes
        # several times faster than SQLite's 2 MB default (negative = KiB).
        db.execute("PRAGMA cache_size=-65536")
        have = {r[1] for r in db.execute("PRAGMA table_info(docs)")}
        if have and "seq" not in have:
            db.close()
            raise StoreError(f"local store {self.path} was written by an older esdedup (schema 1); its fingerprints "
                             "are not comparable with this version's: ingest the documents again into a new "
                             "index (or delete the file)")
        if not have or not self.read_only:
            db.executescript(_SCHEMA)
        self._add_columns(db, have)
        return db

    def _add_columns(self, db: sqlite3.Connection, have: set[str]) -> None:
        """Add the columns newer versions keep to an older file; a read-only one reads them as 0."""
        missing = [c for c in _ADDED_COLUMNS if have and c not in have]
        try:
            with db:
                for col in missing:
                    db.execute(f"ALTER TABLE docs ADD COLUMN {col} {_ADDED_COLUMNS[col]}")
                db.execute("CREATE INDEX IF NOT EXISTS docs_cluster ON docs (cluster_id)")
        except sqlite3.OperationalError as exc:
            if not _read_only(exc):
                raise
            self.read_only = True
            for col in missing:
                self._cols = self._cols.replace(col, f"0 AS {col}")

    @_sql_errors
    def open(self, config: FingerprintConfig | None = None, *, create: bool = True) -> OpenResult:
        if not self.path.exists() and (config is None or not create):
            raise IndexNotFound(f"local index {self.name!r} does not exist in {self.data_dir}", index=self.name)
        db = self._connect()
        self._data_version = db.execute("PRAGMA data_version").fetchone()[0]
        row = db.execute("SELECT value FROM meta WHERE key = ?", (META_KEY,)).fetchone()
        if row is None:
            if config is None:
                raise IndexNotFound(f"local index {self.name!r} has no esdedup config")
            with db:
                db.execute("INSERT INTO meta VALUES (?, ?)", (META_KEY, json.dumps(meta_for(config)[META_KEY])))
            self._config = config
            return OpenResult(config, True)
        stored = config_from_meta({META_KEY: json.loads(row[0])})
        assert stored is not None
        if config is not None and not stored.compatible_with(config):
            raise mismatch_error(self.name, stored, config)
        # Keep the caller's paths (resource files on this machine) when it gave a compatible config.
        self._config = config if config is not None else stored
        return OpenResult(self._config, False)

    @property
    def config(self) -> FingerprintConfig:
        if self._config is None:
            raise StoreError("store is not open: call open() first")
        return self._config

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def drop(self) -> None:
        self.close()
        for suffix in ("", "-wal", "-shm"):
            Path(str(self.path) + suffix).unlink(missing_ok=True)

    def refresh(self) -> None:
        """Nothing to do: every write is visible at once (reads index newer documents when they need to)."""

    def alone(self) -> bool:
        """Writers never settle here (`write_lock` serialises them), so this does not matter: True."""
        return True

    @contextlib.contextmanager
    def write_lock(self) -> Iterator[bool]:
        """Hold the lock file for one batch, waiting up to `BUSY_SECONDS` for another writer's batch; yields
        True when another connection committed changes since this one last held it (``PRAGMA
        data_version``)."""
        db = self._connect()
        with FileLock(self.lock_path, wait=BUSY_SECONDS, busy=StoreError(
                f"local index {self.name!r} is being written by another process that held it for more than "
                f"{BUSY_SECONDS:.0f} s; try again when it has finished")), self._errors():
            version = db.execute("PRAGMA data_version").fetchone()[0]
            changed = self._data_version is not None and version != self._data_version
            try:
                yield changed
            finally:
                self._data_version = db.execute("PRAGMA data_version").fetchone()[0]

    def _merge(self, tables: Sequence[str] = ("bands", "lsh"), chunk: int = 50_000) -> None:
        """Index the keys of documents written since the last merge (see the module docstring)."""
        db = self._connect()
        for table in tables:
            mark_key = f"indexed:{table}"
            row = db.execute("SELECT value FROM meta WHERE key = ?", (mark_key,)).fetchone()
            mark = int(row[0]) if row else 0
            top = db.execute("SELECT MAX(seq) FROM docs").fetchone()[0] or 0
            if top <= max(mark, self._tail_marks.get(table, 0)):
                continue
            if not self.read_only:
                try:
                    self._merge_table(db, table, mark, top, chunk)
                    continue
                except sqlite3.OperationalError as exc:
                    if not _read_only(exc):
                        raise
                    self.read_only = True
            self._merge_in_memory(db, table, max(mark, self._tail_marks.get(table, 0)), top, chunk)

    def _merge_in_memory(self, db: sqlite3.Connection, table: str, mark: int, top: int, chunk: int) -> None:
        """The read-only case of `_merge`: the keys go to a temporary table of this connection, and a temporary
        view of the same name (which SQLite finds before the file's table) joins the two."""
        db.isolation_level = None  # no write transaction can begin on a read-only file
        db.execute(f"CREATE TEMP TABLE IF NOT EXISTS {table}_tail (key TEXT NOT NULL, id TEXT NOT NULL, "
                   "PRIMARY KEY (key, id)) WITHOUT ROWID")
        db.execute(f"CREATE TEMP VIEW IF NOT EXISTS {table} AS SELECT key, id FROM main.{table} "
                   f"UNION ALL SELECT key, id FROM temp.{table}_tail")
        while rows := db.execute(f"SELECT seq, id, simhash, minhash, banded FROM docs WHERE seq > ? AND empty = 0 "
                                 f"ORDER BY seq LIMIT {chunk}", (mark,)).fetchall():
            db.executemany(f"INSERT OR IGNORE INTO temp.{table}_tail VALUES (?, ?)", self._keys_of(rows, table))
            mark = rows[-1][0]
        self._tail_marks[table] = max(mark, top)

    def _merge_table(self, db: sqlite3.Connection, table: str, mark: int, top: int, chunk: int) -> None:
        """Index the keys of ``table`` of the documents after ``mark`` in the file, and move the mark."""
        mark_key = f"indexed:{table}"
        with db:
            # Keys are appended to a scratch table (cheap), then moved into the index in key order in one
            # statement: SQLite sorts them faster than Python, and sorted inserts fill B-tree pages in turn.
            db.execute("CREATE TEMP TABLE IF NOT EXISTS merging (key TEXT NOT NULL, id TEXT NOT NULL)")
            while True:
                rows = db.execute(f"SELECT seq, id, simhash, minhash, banded FROM docs WHERE seq > ? AND "
                                  f"empty = 0 ORDER BY seq LIMIT {chunk}", (mark,)).fetchall()
                if not rows:
                    break
                db.executemany("INSERT INTO temp.merging VALUES (?, ?)", self._keys_of(rows, table))
                mark = rows[-1][0]
            db.execute(f"INSERT OR IGNORE INTO {table} SELECT key, id FROM temp.merging ORDER BY key, id")
            db.execute("DELETE FROM temp.merging")
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (mark_key, str(max(mark, top))))

    def _current_root(self, root: Root) -> Root:
        """Where a cluster's representative now points: a representative merged into another cluster since
        ``root`` was read carries that cluster's labels."""
        db = self._connect()
        for _ in range(64):
            row = db.execute("SELECT cluster_id, cluster_seq, wseq FROM docs WHERE id = ?", (root[1],)).fetchone()
            if row is None or row[0] is None or row[0] == root[1]:
                return (row[2], root[1]) if row is not None else root
            root = (row[1], row[0])
        return root

    def _keys_of(self, rows: Sequence[tuple], table: str) -> list[tuple[str, str]]:
        """(key, id) of every ``table`` key of the documents ``rows`` (seq, id, simhash, minhash, banded)."""
        from esdedup.fingerprint import minhash as mh
        if table == "bands":
            layout = self.config.band_layout()
            return [(k, doc_id) for _, doc_id, sh, _, banded in rows if banded for k in layout.keys(from_hex(sh))]
        signed = [(doc_id, sig) for _, doc_id, _, sig, _ in rows if sig is not None]
        if not signed:
            return []
        sigs = np.stack([np.frombuffer(sig, dtype=SIGNATURE_DTYPE) for _, sig in signed])
        keys_of = mh.lsh_keys_many(sigs, self.config.minhash_bands, self.config.minhash_rows)
        return [(k, doc_id) for (doc_id, _), keys in zip(signed, keys_of, strict=True) for k in keys]

    def _old_keys(self, ids: list[str]) -> list[tuple[str, str]]:
        """(key, id) of every key row the stored documents ``ids`` have in either table."""
        out: list[tuple[str, str]] = []
        for chunk in _chunks(ids, _MAX_PARAMS):
            q = f"SELECT seq, id, simhash, minhash, banded FROM docs WHERE id IN ({','.join('?' * len(chunk))})"
            rows = self._connect().execute(q, chunk).fetchall()
            out += self._keys_of(rows, "bands") + self._keys_of(rows, "lsh")
        return out

    @_sql_errors
    def count(self) -> int:
        return int(self._connect().execute("SELECT COUNT(*) FROM docs").fetchone()[0])

    # -- writing ---------------------------------------------------------------------------------
    @_sql_errors
    def write(self, docs: Iterable[NewDoc]) -> Iterator[WriteResult]:
        db = self._connect()
        bits = self.config.bits
        vectors = self.config.stores_vector
        batch: list[NewDoc] = []

        def flush() -> list[WriteResult]:
            ids = [d.id for d in batch]
            existing: set[str] = set()
            for chunk in _chunks(ids, _MAX_PARAMS):
                q = f"SELECT id FROM docs WHERE id IN ({','.join('?' * len(chunk))})"
                existing.update(r[0] for r in db.execute(q, chunk))
            old = [i for i in ids if i in existing]
            if old:
                self._merge()
            old_keys = self._old_keys(old) if old else []
            with db:
                db.executemany("DELETE FROM bands WHERE key = ? AND id = ?", old_keys)
                db.executemany("DELETE FROM lsh WHERE key = ? AND id = ?", old_keys)
                db.executemany(
                    "INSERT OR REPLACE INTO docs (id, simhash, vector, tokens, chars, empty, content_sha1, "
                    "cluster_id, duplicate_of, source, minhash, shingles, banded, wseq, cluster_seq) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    [(d.id, to_hex(d.fingerprint.simhash, bits),
                      _stored_vector(d.fingerprint.vector) if vectors and not d.fingerprint.empty else None,
                      d.fingerprint.length, d.fingerprint.chars, int(d.fingerprint.empty), d.content_sha1,
                      d.cluster_id, d.duplicate_of, json.dumps(d.source, ensure_ascii=False, default=str),
                      None if d.fingerprint.minhash is None else _stored_signature(d.fingerprint.minhash),
                      d.fingerprint.shingles, int(bool(d.fingerprint.bands)), d.seq, d.cluster_seq)
                     for d in batch])
            results = [WriteResult(d.id, True, created=d.id not in existing) for d in batch]
            batch.clear()
            return results

        for doc in docs:
            batch.append(doc)
            if len(batch) >= WRITE_BATCH:
                yield from flush()
        if batch:
            yield from flush()

    @_sql_errors
    def set_labels(self, labels: Mapping[str, tuple[str, str | None]]) -> int:
        db = self._connect()
        with db:
            cur = db.executemany("UPDATE docs SET cluster_id = ?, duplicate_of = ? WHERE id = ?",
                                 [(c, d, i) for i, (c, d) in labels.items()])
        return cur.rowcount

    @_sql_errors
    def merge_clusters(self, groups: Iterable[Collection[Root]]) -> int:
        """See `Store.merge_clusters`. Writers are serialised here, so one UPDATE per group does it."""
        db = self._connect()
        relabelled = 0
        with db:
            for group in union_groups(groups):
                roots = {self._current_root(r) for r in group}
                target = min(roots)
                others = sorted({r[1] for r in roots | set(group)} - {target[1]})
                for chunk in _chunks(others, _MAX_PARAMS - 4):
                    cur = db.execute(f"UPDATE docs SET cluster_id = ?, cluster_seq = ?, duplicate_of = CASE WHEN "
                                     f"id = ? THEN NULL ELSE ? END WHERE cluster_id IN ({','.join('?' * len(chunk))})",
                                     (target[1], target[0], target[1], target[1], *chunk))
                    relabelled += cur.rowcount
        return relabelled

    @_sql_errors
    def members(self, cluster_ids: Sequence[str]) -> list[StoredDoc]:
        """See `Store.members`."""
        out: list[StoredDoc] = []
        for chunk in _chunks(list(cluster_ids), _MAX_PARAMS):
            q = f"SELECT {self._cols} FROM docs WHERE cluster_id IN ({','.join('?' * len(chunk))})"
            out.extend(self._docs(self._connect().execute(q, chunk)))
        return out

    @_sql_errors
    def relabel(self, labels: Mapping[str, Root]) -> int:
        """See `Store.relabel`."""
        db = self._connect()
        with db:
            cur = db.executemany("UPDATE docs SET cluster_id = ?, cluster_seq = ?, duplicate_of = ? WHERE id = ?",
                                 [(root, seq, None if i == root else root, i) for i, (seq, root) in labels.items()])
        return cur.rowcount

    @_sql_errors
    def delete_if_unchanged(self, docs: Sequence[StoredDoc]) -> list[str]:
        """See `Store.delete_if_unchanged` (writers are serialised here: nothing changes under a batch)."""
        ids = sorted({d.id for d in docs})
        if not ids:
            return []
        self._merge()
        db = self._connect()
        old_keys = self._old_keys(ids)
        deleted: list[str] = []
        with db:
            db.executemany("DELETE FROM bands WHERE key = ? AND id = ?", old_keys)
            db.executemany("DELETE FROM lsh WHERE key = ? AND id = ?", old_keys)
            for doc_id in ids:
                if db.execute("DELETE FROM docs WHERE id = ?", (doc_id,)).rowcount:
                    deleted.append(doc_id)
        return deleted

    # -- reading ---------------------------------------------------------------------------------
    def _docs(self, rows: Iterable[tuple]) -> Iterator[StoredDoc]:
        dims = self.config.dims
        for (doc_id, sh, vec, tokens, chars, empty, cluster_id, dup_of, sig, shingles, seq, cluster_seq,
             sha1) in rows:
            vector = np.frombuffer(vec, dtype="<f4") if vec is not None else np.zeros(dims, dtype=np.float32)
            minhash = np.frombuffer(sig, dtype=SIGNATURE_DTYPE).astype(np.uint32) if sig is not None else None
            yield StoredDoc(doc_id, from_hex(sh), vector, bool(empty), tokens or 0, chars or 0, cluster_id, dup_of,
                            minhash=minhash, shingles=shingles or 0, seq=seq or 0, cluster_seq=cluster_seq or 0,
                            content_sha1=sha1)

    _COLS = ("id, simhash, vector, tokens, chars, empty, cluster_id, duplicate_of, minhash, shingles, wseq, "
             "cluster_seq, content_sha1")

    @_sql_errors
    def get(self, ids: Sequence[str]) -> dict[str, StoredDoc]:
        db = self._connect()
        out: dict[str, StoredDoc] = {}
        for chunk in _chunks(list(ids), _MAX_PARAMS):
            q = f"SELECT {self._cols} FROM docs WHERE id IN ({','.join('?' * len(chunk))})"
            out.update((d.id, d) for d in self._docs(db.execute(q, chunk)))
        return out

    @_sql_errors
    def get_source(self, doc_id: str) -> dict[str, Any] | None:
        row = self._connect().execute("SELECT source FROM docs WHERE id = ?", (doc_id,)).fetchone()
        return json.loads(row[0]) if row and row[0] else None

    @_sql_errors
    def lookup(self, probes: Sequence[Probe], *, limit: int = 1000) -> list[list[StoredDoc]]:
        self._merge()
        db = self._connect()
        out = []
        for probe in probes:
            keys = sorted({(_key_table(band), k) for band, band_keys in probe.items() for k in band_keys})
            scan = max(limit, _SCAN_PER_KEY)
            shared: Counter[str] = Counter()
            for chunk in _chunks(keys, _COMPOUND):
                # One subquery per key, each stopping after `scan` ids (the smallest: the index is in (key, id)
                # order), so a key that thousands of documents share costs no more than a rarer one and a run
                # of near-identical documents stays linear. UNION ALL keeps one row per shared key: the
                # documents sharing the most keys come first (ties by id), as the Elasticsearch store ranks them.
                q = " UNION ALL ".join(f"SELECT * FROM (SELECT id FROM {table} WHERE key = ? LIMIT ?)"
                                       for table, _ in chunk)
                shared.update(r[0] for r in db.execute(q, [x for _, k in chunk for x in (k, scan)]))
            ids = sorted(sorted(shared, key=lambda i: (-shared[i], i))[:limit])
            found = self.get(ids)
            out.append([found[i] for i in ids if i in found])
        return out

    @_sql_errors
    def knn(self, vector: np.ndarray, k: int = 10) -> list[StoredDoc]:
        self.config.require_vector(self.name)
        db = self._connect()
        q = np.asarray(vector, dtype=np.float32)
        best: list[tuple[float, str]] = []
        cur = db.execute("SELECT id, vector FROM docs WHERE empty = 0")
        while rows := cur.fetchmany(20000):
            mat = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), -1)
            sims = mat @ q
            top = np.argsort(-sims)[:k]
            best.extend((float(sims[i]), rows[i][0]) for i in top)
            best = sorted(best, key=lambda x: (-x[0], x[1]))[:k]
        found = self.get([i for _, i in best])
        return [found[i] for _, i in best if i in found]

    @_sql_errors
    def scan(self, *, batch: int = 5000) -> Iterator[list[StoredDoc]]:
        cur = self._connect().execute(f"SELECT {self._cols} FROM docs ORDER BY id")
        while rows := cur.fetchmany(batch):
            yield list(self._docs(rows))

    @_sql_errors
    def key_batches(self, *, max_bucket: int = 1000, lsh: bool = True) -> Iterator[KeyBatch]:
        tables = ("bands", "lsh") if lsh else ("bands",)
        self._merge(tables)
        db = self._connect()
        crowded = frozenset(k for t in tables for (k,) in
                            db.execute(f"SELECT key FROM {t} GROUP BY key HAVING COUNT(*) > ?", (max_bucket,)))
        for table in tables:
            cur = db.execute(f"SELECT key, id FROM {table} WHERE key IN "
                             f"(SELECT key FROM {table} GROUP BY key HAVING COUNT(*) > 1) ORDER BY key, id")
            groups: list[tuple[str, int, list[str]]] = []
            members = 0
            for key, rows in itertools.groupby(cur, key=operator.itemgetter(0)):
                ids = [i for _, i in rows]
                groups.append((key, len(ids), ids[:max_bucket]))
                members += min(len(ids), max_bucket)
                if members >= _KEY_BATCH:
                    yield self._key_batch(groups, tables, crowded)
                    groups, members = [], 0
            if groups:
                yield self._key_batch(groups, tables, crowded)

    def _key_batch(self, groups: list[tuple[str, int, list[str]]], tables: Sequence[str],
                   crowded: frozenset[str]) -> KeyBatch:
        """``groups`` with the keys of their members (computed from the stored documents, as indexed)."""
        ids = sorted({i for _, _, g in groups for i in g})
        keys: dict[str, set[str]] = {i: set() for i in ids}
        for chunk in _chunks(ids, _MAX_PARAMS):
            q = f"SELECT seq, id, simhash, minhash, banded FROM docs WHERE id IN ({','.join('?' * len(chunk))})"
            rows = self._connect().execute(q, chunk).fetchall()
            for table in tables:
                for k, i in self._keys_of(rows, table):
                    keys[i].add(k)
        return KeyBatch(groups, {i: frozenset(k - crowded) for i, k in keys.items()})

    @_sql_errors
    def crowded_keys(self, *, min_count: int, limit: int = 20, lsh: bool = True) -> list[tuple[str, int]]:
        tables = ("bands", "lsh") if lsh else ("bands",)
        self._merge(tables)
        union = " UNION ALL ".join(f"SELECT key, COUNT(*) AS n FROM {t} GROUP BY key HAVING n >= ?" for t in tables)
        rows = self._connect().execute(f"SELECT key, n FROM ({union}) ORDER BY n DESC, key LIMIT ?",
                                       (*[min_count] * len(tables), limit)).fetchall()
        return [(k, int(n)) for k, n in rows]

    @_sql_errors
    def labels(self) -> dict[str, tuple[str | None, str | None]]:
        rows = self._connect().execute("SELECT id, cluster_id, duplicate_of FROM docs")
        return {i: (c, d) for i, c, d in rows}


def _folder(path: Path) -> Path:
    """``path`` if it is a folder or can become one; ConfigError when it, or a folder above it, is a file."""
    for p in (path, *path.parents):
        if p.exists():
            if not p.is_dir():
                raise ConfigError(f"local store folder {path}: {p} is a file, not a folder")
            break
    return path


def _stored_vector(vector: np.ndarray) -> bytes:
    """The vector as float32 bytes, each value first rounded to 6 decimals exactly as the Elasticsearch
    store writes it into ``_source`` (`esdedup.schema.dedup_source`), so cosines agree to the last bit on
    both stores. ``x * 1e6`` is exact for a float32 ``x``, so this is Python's correctly rounded
    ``round(x, 6)``, vectorised."""
    return (np.rint(np.asarray(vector, dtype=np.float64) * 1e6) / 1e6).astype("<f4").tobytes()


def _key_table(band: str) -> str:
    """The table that holds a probe band's keys: ``lsh`` for the MinHash LSH bands (whose keys live in the
    one field `esdedup.schema.LSH_KEYS` on Elasticsearch), ``bands`` for the SimHash bands."""
    return "lsh" if key_field(band) == LSH_KEYS else "bands"


def _stored_signature(sig: np.ndarray) -> bytes:
    """A MinHash signature's 16-bit values as bytes (`esdedup.fingerprint.minhash.SIGNATURE_DTYPE`, as in Elasticsearch)."""
    return np.asarray(sig, dtype=SIGNATURE_DTYPE).tobytes()


def _chunks(items: list, size: int) -> Iterator[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
