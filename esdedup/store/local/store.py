"""`LocalStore`: the `Store` protocol on one SQLite file per collection (see the package docstring)."""
from __future__ import annotations

import contextlib
import functools
import inspect
import itertools
import json
import sqlite3
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from esdedup.errors import ConfigError, IndexNotFound, StoreError
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.minhash import SIGNATURE_DTYPE
from esdedup.fingerprint.simhash import from_hex
from esdedup.schema import META_KEY, config_from_meta, meta_for
from esdedup.store.base import (
    AllCreated,
    Capability,
    ClusterSize,
    ClusterSummary,
    KeyBatch,
    NewDoc,
    OpenResult,
    Outcome,
    Probe,
    Root,
    SearchPage,
    StoredDoc,
    TopKeys,
    WriteResult,
    write_outcome,
)
from esdedup.store.columns import SignatureColumns
from esdedup.store.local import labels as cluster_labels
from esdedup.store.local.browse import ClusterSizes, sample
from esdedup.store.local.keys import KeyTables
from esdedup.store.local.native_rows import read_signature_columns, sqlite_error
from esdedup.store.local.rows import INSERT_DOC, block_params, doc_rows, source_json, stored_docs
from esdedup.store.local.sqlite import (
    BUSY_SECONDS,
    MAX_PARAMS,
    Database,
    checked_folder,
    chunks,
    default_data_dir,
    marks,
)
from esdedup.store.local.texts import TextIndex, name_collection
from esdedup.store.names import mismatch_error, validate_name
from esdedup.store.partition import PairBatch, Partition
from esdedup.util.fieldtypes import checked_args
from esdedup.util.filelock import FileLock

#: Rows per transaction when writing.
WRITE_BATCH = 2000

F = TypeVar("F", bound=Callable[..., Any])


def _signature_rows(db: sqlite3.Connection, count: str, rows: str, size: int, perm: int,
                    vectors: bool) -> tuple[np.ndarray, list[str], list[int], list[int], list[int], list[bytes | None]]:
    """`LocalStore.signature_columns`'s rows read through ``db``: the signatures (a row each), ids, SimHashes,
    chars, shingles and (with ``vectors``) the vectors' blobs."""
    # A chunk of rows at a time into one array: the rows of a million documents held at once, their
    # signatures joined and then widened, were three copies of the signatures (1.4 GB at 1M documents).
    # The array has a row for every document, which the count of the signed ones would have read every row
    # once more to know (a fifth of this read): the pages of the rows never written are never touched, so
    # they take no memory, and the signatures are the written rows, a view of its start. One read
    # transaction, so that the count and the rows agree while writers commit.
    with _read_snapshot(db):
        sigs = np.empty((db.execute(count).fetchone()[0], perm), dtype=np.uint32)
        cur = db.execute(rows, (size,))
        ids: list[str] = []
        simhash: list[int] = []
        chars: list[int] = []
        shingles: list[int] = []
        blobs: list[bytes | None] = []
        while got := cur.fetchmany(1 << 14):
            at = len(ids)
            sigs[at:at + len(got)] = np.frombuffer(b"".join(r[4] for r in got), dtype=SIGNATURE_DTYPE
                                                   ).reshape(len(got), perm)
            ids += (r[0] for r in got)
            simhash += (from_hex(r[1]) for r in got)
            chars += (r[2] or 0 for r in got)
            shingles += (r[3] for r in got)
            if vectors:
                blobs += (r[5] for r in got)
    return sigs[:len(ids)], ids, simhash, chars, shingles, blobs


@contextlib.contextmanager
def _read_snapshot(db: sqlite3.Connection) -> Iterator[None]:
    """The reads inside see one state of the file (a deferred transaction), whatever writers commit meanwhile;
    inside a transaction already, that one."""
    if db.in_transaction:
        yield
        return
    db.execute("BEGIN")
    try:
        yield
    finally:
        db.execute("COMMIT")


def _sql_errors(fn: F) -> F:
    """Turn SQLite's exceptions in a public method (or generator) into one clear `StoreError`."""
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def gen(self: LocalStore, *args: Any, **kwargs: Any) -> Any:
            with self._database.errors():
                yield from fn(self, *args, **kwargs)
        return gen  # type: ignore[return-value]

    @functools.wraps(fn)
    def wrapper(self: LocalStore, *args: Any, **kwargs: Any) -> Any:
        with self._database.errors():
            return fn(self, *args, **kwargs)
    return wrapper  # type: ignore[return-value]


class LocalStore:
    """A collection in ``data_dir/<name>.sqlite``."""

    #: Every protocol of `Store`, and its signatures read as columns (`signature_columns`).
    capabilities = frozenset({Capability.LABELS, Capability.KEY_SCANS, Capability.PARTITIONED_PAIRS,
                              Capability.BROWSING, Capability.SIGNATURE_COLUMNS,
                              Capability.COPY_COLUMNS, Capability.BACKGROUND_WRITES})

    def __init__(self, name: str, data_dir: str | Path | None = None) -> None:
        self.name = validate_name(name)
        self.data_dir = checked_folder(Path(data_dir) if data_dir is not None else default_data_dir())
        self.path = self.data_dir / f"{name}.sqlite"
        self.lock_path = self.data_dir / f"{name}.sqlite.lock"
        self._database = Database(self.name, self.path)
        self._keys = KeyTables(self._database, lambda: self.config)
        self._clusters = ClusterSizes(self._database)
        self._texts = TextIndex(self._database)
        self._config: FingerprintConfig | None = None
        #: Nothing is ever re-sent here (see `Store.retried`).
        self.retried = 0
        #: Writers never need to settle labels here: `write_lock` serialises their batches.
        self.settles = False
        #: Rows, not JSON: the ``dedup`` fields are not encoded in advance for this store.
        self.takes_dedup_json = False
        self._data_version: int | None = None

    @property
    def read_only(self) -> bool:
        """The file cannot be written: keys not yet indexed are indexed in temporary tables only."""
        return self._database.read_only

    # -- lifecycle -------------------------------------------------------------------------------
    @_sql_errors
    @checked_args
    def open(self, config: FingerprintConfig | None = None, *, create: bool = True) -> OpenResult:
        if not self.path.exists() and (config is None or not create):
            raise IndexNotFound(f"local index {self.name!r} does not exist in {self.data_dir}", index=self.name)
        db = self._database.connect()
        self._data_version = db.execute("PRAGMA data_version").fetchone()[0]
        row = db.execute("SELECT value FROM meta WHERE key = ?", (META_KEY,)).fetchone()
        if row is None:
            if config is None:
                raise IndexNotFound(f"local index {self.name!r} has no esdedup config")
            with db:
                # Another process opening the new file at the same time may write its config first: then
                # this one is checked against it, as against any stored config.
                created = db.execute("INSERT OR IGNORE INTO meta VALUES (?, ?)",
                                     (META_KEY, json.dumps(meta_for(config)[META_KEY]))).rowcount == 1
                if created:
                    name_collection(db)
            if created:
                self._config = config
                return OpenResult(config, True)
            row = db.execute("SELECT value FROM meta WHERE key = ?", (META_KEY,)).fetchone()
        stored = config_from_meta({META_KEY: _stored_meta(row[0], self.path)}, f"local index {self.name!r}")
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
        self._texts.close()
        self._database.close()

    def drop(self) -> None:
        self._texts.drop()
        self._database.drop()

    def refresh(self) -> None:
        """Every write is visible at once (the text index catches up when it is searched). A file this store
        created gets its index of content SHA-1s when a lookup first reads it, or when the store closes
        (`Database.build_deferred_index`), not here: an ingest refreshes at each roll of its window, and every
        row written after the index is a random B-tree insert in it (the writer then took 2.5 times as long a
        batch, and the ingest waited for it)."""

    def alone(self) -> bool:
        """Writers never settle here (`write_lock` serialises them), so this does not matter: True."""
        return True

    @contextlib.contextmanager
    def write_lock(self) -> Iterator[bool]:
        """Hold the lock file for one batch, waiting up to `BUSY_SECONDS` for another writer's batch; yields
        True when another connection committed changes since this one last held it (``PRAGMA
        data_version``)."""
        db = self._database.connect()
        with FileLock(self.lock_path, wait=BUSY_SECONDS, busy=StoreError(
                f"local index {self.name!r} is being written by another process that held it for more than "
                f"{BUSY_SECONDS:.0f} s; try again when it has finished")), self._database.errors():
            version = db.execute("PRAGMA data_version").fetchone()[0]
            changed = self._data_version is not None and version != self._data_version
            try:
                yield changed
            finally:
                self._data_version = db.execute("PRAGMA data_version").fetchone()[0]

    @_sql_errors
    def count(self) -> int:
        return int(self._database.connect().execute("SELECT COUNT(*) FROM docs").fetchone()[0])

    # -- writing ---------------------------------------------------------------------------------
    @_sql_errors
    def write(self, docs: Iterable[NewDoc]) -> Iterator[WriteResult]:
        db = self._database.connect()
        config = self.config
        batch: list[NewDoc] = []
        for doc in docs:
            batch.append(doc)
            if len(batch) >= WRITE_BATCH:
                yield from self._write_batch(db, config, batch)
                batch = []
        if batch:
            yield from self._write_batch(db, config, batch)

    def start_write(self, docs: list[NewDoc]) -> PendingRows | Written:
        """See `esdedup.store.base.BackgroundWrites`: the rows are written in one transaction by the extension's
        writer (`Database.row_writer`), the GIL released; the rows of documents that came in one block of
        arrays are made from the arrays on the writer's thread (`block_params`). Written at once, as `write`
        writes, where there is no such writer, where a document replaces a stored one (its key rows are
        deleted in the same transaction) and where a value is not one the writer binds (``sqlite3`` then says
        what is wrong)."""
        try:
            with self._database.errors():
                writer = self._database.row_writer()
                if writer is not None and docs and not _existing(self._database.connect(), [d.id for d in docs]):
                    self._database.build_missing_index()
                    with contextlib.suppress(ValueError):
                        config = self.config
                        block = block_params(docs, config.bits, config.stores_vector)
                        if block is not None:
                            writer.start_block(INSERT_DOC, *block, source_json)
                        else:
                            writer.start(INSERT_DOC, doc_rows(docs, config.bits, config.stores_vector))
                        return PendingRows(self._database, writer, AllCreated([d.id for d in docs]))
        except StoreError as exc:
            return Written(([], exc))
        return Written(write_outcome(self, docs))

    def _write_batch(self, db: sqlite3.Connection, config: FingerprintConfig, batch: list[NewDoc]) -> list[WriteResult]:
        """Write one transaction's documents, the key rows of the stored ones they replace deleted first."""
        ids = [d.id for d in batch]
        existing = _existing(db, ids)
        old = [i for i in ids if i in existing]
        old_keys = self._keys.indexed_keys(old) if old else []
        self._database.build_missing_index()
        with db:
            self._keys.delete(db, old_keys)
            db.executemany(INSERT_DOC, doc_rows(batch, config.bits, config.stores_vector))
        self._database.checkpoint_soon()
        return [WriteResult(d.id, True, created=d.id not in existing) for d in batch]

    @_sql_errors
    def set_labels(self, labels: Mapping[str, tuple[str, str | None]]) -> int:
        return cluster_labels.set_labels(self._database.connect(), labels)

    def move_dotted_keys_aside(self) -> int:
        """See `Store.move_dotted_keys_aside`: the labels are columns of their own here, which no input key
        reaches; nothing to move."""
        return 0

    @_sql_errors
    def merge_clusters(self, groups: Iterable[Collection[Root]]) -> int:
        """See `Store.merge_clusters`. Writers are serialised here, so one UPDATE per group does it."""
        return cluster_labels.merge_clusters(self._database.connect(), groups)

    @_sql_errors
    def relabel(self, labels: Mapping[str, Root]) -> int:
        """See `Store.relabel`."""
        return cluster_labels.relabel(self._database.connect(), labels)

    @_sql_errors
    def delete_if_unchanged(self, docs: Sequence[StoredDoc]) -> list[str]:
        """See `Store.delete_if_unchanged` (writers are serialised here: nothing changes under a batch)."""
        ids = sorted({d.id for d in docs})
        if not ids:
            return []
        old_keys = self._keys.indexed_keys(ids)
        db = self._database.connect()
        deleted: list[str] = []
        with db:
            self._keys.delete(db, old_keys)
            for doc_id in ids:
                if db.execute("DELETE FROM docs WHERE id = ?", (doc_id,)).rowcount:
                    deleted.append(doc_id)
        return deleted

    # -- reading ---------------------------------------------------------------------------------
    def _docs_where(self, column: str, values: Sequence[str]) -> Iterator[StoredDoc]:
        """The stored documents whose ``column`` is one of ``values``."""
        db = self._database.connect()
        for chunk in chunks(list(values), MAX_PARAMS):
            rows = db.execute(f"SELECT {self._database.doc_columns} FROM docs WHERE {column} IN "
                              f"({marks(len(chunk))})", chunk)
            yield from stored_docs(rows, self.config.dims)

    @_sql_errors
    def get(self, ids: Sequence[str]) -> dict[str, StoredDoc]:
        return {d.id: d for d in self._docs_where("id", ids)}

    @_sql_errors
    def copies(self, sha1s: Sequence[str], *, limit: int = 1000) -> list[list[StoredDoc]]:
        """See `Store.copies` (the index ``docs_sha1`` serves it)."""
        self._database.build_deferred_index()
        by_sha1: dict[str, list[StoredDoc]] = {}
        for d in self._docs_where("content_sha1", sorted(set(sha1s))):
            by_sha1.setdefault(d.content_sha1 or "", []).append(d)
        return [sorted(by_sha1.get(s, []), key=lambda d: d.id)[:limit] for s in sha1s]

    @_sql_errors
    def scan_empty(self, *, batch: int = 5000) -> Iterator[list[StoredDoc]]:
        cur = self._database.connect().execute(
            f"SELECT {self._database.doc_columns} FROM docs WHERE empty = 1 ORDER BY id")
        while rows := cur.fetchmany(batch):
            yield list(stored_docs(rows, self.config.dims))

    @_sql_errors
    def members(self, cluster_ids: Sequence[str]) -> list[StoredDoc]:
        """See `Store.members`."""
        return list(self._docs_where("cluster_id", cluster_ids))

    @_sql_errors
    def get_source(self, doc_id: str) -> dict[str, Any] | None:
        row = self._database.connect().execute("SELECT source FROM docs WHERE id = ?", (doc_id,)).fetchone()
        return json.loads(row[0]) if row and row[0] else None

    @_sql_errors
    def labels(self) -> dict[str, tuple[str | None, str | None]]:
        return cluster_labels.read_labels(self._database.connect())

    @_sql_errors
    def lookup(self, probes: Sequence[Probe], *, limit: int = 1000) -> list[list[StoredDoc]]:
        out = []
        for ids in self._keys.candidates(probes, limit):
            found = self.get(ids)
            out.append([found[i] for i in ids if i in found])
        return out

    @_sql_errors
    def knn(self, vector: np.ndarray, k: int = 10) -> list[StoredDoc]:
        self.config.require_vector(self.name)
        q = np.asarray(vector, dtype=np.float32)
        best: list[tuple[float, str]] = []
        cur = self._database.connect().execute("SELECT id, vector FROM docs WHERE empty = 0")
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
        cur = self._database.connect().execute(f"SELECT {self._database.doc_columns} FROM docs ORDER BY id")
        while rows := cur.fetchmany(batch):
            yield list(stored_docs(rows, self.config.dims))

    @_sql_errors
    def copy_columns(self) -> list[tuple[str, str, bool]]:
        """See `esdedup.store.columns.CopyColumnsStore` (the rows `copy_rows` reads of `scan`'s documents,
        those whose content SHA-1 another document holds too: grouped by the SHA-1 index, not in memory)."""
        self._database.build_deferred_index()
        rows = self._database.connect().execute(
            "SELECT id, content_sha1, empty FROM docs WHERE content_sha1 IN (SELECT content_sha1 FROM docs "
            "WHERE content_sha1 IS NOT NULL AND content_sha1 != '' GROUP BY content_sha1 HAVING count(*) > 1)")
        return [(doc_id, sha1, bool(empty)) for doc_id, sha1, empty in rows]

    @_sql_errors
    def signature_columns(self, perm: int) -> SignatureColumns:
        """See `esdedup.store.columns.SignatureColumnsStore` (the documents `stored_docs` reads, the same values)."""
        dims, vectors = self.config.dims, self.config.stores_vector
        db = self._database.connect()
        count = "SELECT count(*) FROM docs"
        signed = "minhash IS NOT NULL AND shingles > 0 AND length(minhash) = ?1"
        # The documents this store holds band keys for (its key tables' rule) and no such signature come in the
        # same pass, as rows of shingles -1 (a signature of zeros): counted, not kept (`banded_elsewhere`).
        rows = (f"SELECT id, simhash, chars, CASE WHEN {signed} THEN shingles ELSE -1 END, CASE WHEN {signed} THEN "
                f"minhash ELSE zeroblob(?1) END{', vector' if vectors else ''} FROM docs WHERE empty = 0 AND "
                f"({signed} OR banded != 0)")
        size = perm * np.dtype(SIGNATURE_DTYPE).itemsize
        # The extension reads the rows without a tuple each, on a connection of its own: not inside this
        # connection's transaction, whose writes that one would not see, nor the vectors. It reads them in the
        # file's order and sorts them by id itself: ids not written in their order (most are not: URLs,
        # hashes) made a walk of the id index a random read of the file for each row.
        read = (None if vectors or db.in_transaction or self._database.read_only else
                read_signature_columns(self._database.path, BUSY_SECONDS, count, rows, size, perm))
        blobs: list[bytes | None] = []
        if read is not None:
            sigs, ids, simhash, chars, shingles = read
        else:
            sigs, ids, simhash, chars, shingles, blobs = _signature_rows(db, count, f"{rows} ORDER BY id", size,
                                                                         perm, vectors)
        elsewhere = sum(1 for k in shingles if k < 0)
        unsorted = any(a > b for a, b in zip(ids, itertools.islice(ids, 1, None), strict=False))
        if elsewhere or unsorted:
            # SQLite's order is the bytes of the ids' UTF-8, which is Python's order of str; an id stored as
            # another type would not be: sorted here as `SignatureColumns.of` sorts.
            order = [i for i in (sorted(range(len(ids)), key=ids.__getitem__) if unsorted else range(len(ids)))
                     if shingles[i] >= 0]
            ids = [ids[i] for i in order]
            simhash, chars, shingles = ([col[i] for i in order] for col in (simhash, chars, shingles))
            blobs = [blobs[i] for i in order] if vectors else []
            sigs = sigs[order]
        n = len(ids)

        def read_vectors() -> np.ndarray:
            out = np.zeros((n, dims), dtype=np.float32)
            for i, blob in enumerate(blobs):
                if blob is not None:
                    out[i] = np.frombuffer(blob, dtype="<f4")
            return out

        return SignatureColumns(ids, simhash, chars, shingles, sigs, elsewhere, read_vectors)

    @_sql_errors
    def key_batches(self, *, max_bucket: int = 1000, lsh: bool = True) -> Iterator[KeyBatch]:
        yield from self._keys.key_batches(max_bucket=max_bucket, lsh=lsh)

    @_sql_errors
    def partition_candidates(self, partition: Partition, *, max_bucket: int = 1000,
                             lsh: bool = True) -> Iterator[PairBatch]:
        """See `esdedup.store.partition.PartitionedPairs`."""
        yield from self._keys.partition_candidates(partition, max_bucket=max_bucket, lsh=lsh)

    # -- browsing (see esdedup.store.local.browse and texts) ---------------------------------------------
    @_sql_errors
    def cluster_summary(self) -> ClusterSummary:
        return self._clusters.summary()

    @_sql_errors
    def cluster_page(self, *, offset: int, size: int) -> list[ClusterSize]:
        return self._clusters.page(offset, size)

    @_sql_errors
    def cluster_sizes(self, cluster_ids: Sequence[str]) -> dict[str, int]:
        return self._clusters.of(cluster_ids)

    @_sql_errors
    def top_keys(self, *, lsh: bool, limit: int = 15) -> TopKeys:
        return self._keys.top_keys(lsh=lsh, limit=limit)

    @_sql_errors
    def search_text(self, query: str, *, offset: int = 0, size: int = 20) -> SearchPage:
        return self._texts.search(query, offset, size)

    @_sql_errors
    def prepare_text_search(self) -> None:
        self._texts.catch_up_in_background()

    @_sql_errors
    def sample(self, n: int, *, seed: int = 0) -> list[StoredDoc]:
        return sample(self._database, self.config.dims, n, seed)

    @_sql_errors
    def crowded_keys(self, *, min_count: int, limit: int = 20, lsh: bool = True) -> list[tuple[str, int]]:
        return self._keys.crowded_keys(min_count=min_count, limit=limit, lsh=lsh)


def _stored_meta(value: Any, path: Path) -> Any:
    """The esdedup block of the meta table, as JSON; a value that is not JSON (edited by hand, another
    program's table) is a ConfigError naming the file."""
    try:
        return json.loads(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"local index {path} holds an esdedup config that is not JSON ({exc}); restore the "
                          "file from a backup, or ingest into a new local index") from None


def _existing(db: sqlite3.Connection, ids: Sequence[str]) -> set[str]:
    """Those of ``ids`` stored already."""
    found: set[str] = set()
    for chunk in chunks(list(ids), MAX_PARAMS):
        found.update(r[0] for r in db.execute(f"SELECT id FROM docs WHERE id IN ({marks(len(chunk))})", chunk))
    return found


class PendingRows:
    """A batch the extension's writer is writing (`LocalStore.start_write`)."""

    def __init__(self, database: Database, writer: Any, results: AllCreated) -> None:
        self._database, self._writer, self._results = database, writer, results

    def result(self) -> Outcome:
        failure = self._writer.wait()
        if failure is None:
            self._database.checkpoint_soon()
            return self._results, None
        try:
            with self._database.errors():
                raise sqlite_error(*failure)
        except StoreError as exc:
            return [], exc


class Written:
    """A batch written before `LocalStore.start_write` returned."""

    def __init__(self, outcome: Outcome) -> None:
        self._outcome = outcome

    def result(self) -> Outcome:
        return self._outcome
