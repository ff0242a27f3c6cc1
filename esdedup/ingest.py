"""`ingest`: read records, fingerprint them in worker processes, label near-duplicates, write to a store.

Every record read ends in exactly one of: indexed, skipped (a near-duplicate with ``on_duplicate="skip"``,
or an exact repeat of a record already written in this run) or failed (rejected by the reader or the
store, or unconfirmed when the store went away); failed and skipped records go to the dead-letter file
with their source location and reason. So ``read == indexed + skipped + failed`` always holds.

Labels: a document whose near-duplicate is already stored (or was written earlier in this run) gets
``duplicate_of`` = that document and its ``cluster_id``; otherwise it starts its own cluster. A document
that is already in the store under the same id keeps its stored labels, so running the same ingest twice
changes nothing.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

from .config import FingerprintConfig
from .errors import ConfigError, IndexNotFound, StoreError
from .fingerprint import Fingerprint, Fingerprinter
from .lookup import lookup_keys, probe_for, verify
from .normalize import normalize
from .readers import Record, Rejected, read_records
from .schema import content_sha1
from .store.base import NewDoc, OpenResult, Store, StoredDoc
from .thresholds import ThresholdOverrides, Thresholds, resolve_thresholds

log = logging.getLogger(__name__)

ON_DUPLICATE = ("index", "label", "skip")
#: Records fingerprinted per task sent to a worker process.
BATCH = 1000
#: ... and at most about this many characters of text per task (bounds memory with large documents).
BATCH_CHARS = 8 * 2**20


@dataclass
class IngestSummary:
    """Counts of one ingest run; ``read == indexed + skipped + failed``."""

    read: int = 0
    indexed: int = 0
    created: int = 0
    updated: int = 0
    duplicates: int = 0
    skipped: int = 0
    failed: int = 0
    retried: int = 0
    bytes: int = 0
    resumed_files: int = 0
    seconds: float = 0.0
    dead_letter: str | None = None
    skipped_ids: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.failed == 0 and self.error is None

    @property
    def balanced(self) -> bool:
        return self.read == self.indexed + self.skipped + self.failed

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["skipped_ids"] = d["skipped_ids"][:1000]
        d["docs_per_s"] = round(self.read / self.seconds, 1) if self.seconds else None
        d["mb_per_s"] = round(self.bytes / 1e6 / self.seconds, 3) if self.seconds else None
        return d


@dataclass(frozen=True)
class _Done:
    """A fingerprinted record, as it comes back from a worker (compact: no exact TF table)."""

    record: Record
    fp: Fingerprint
    sha1: str
    id: str


# -- worker processes --------------------------------------------------------------------------------
_WORKER: Fingerprinter | None = None


def _init_worker(config_json: str) -> None:
    global _WORKER
    _WORKER = Fingerprinter(FingerprintConfig.from_json(config_json))


def _fingerprint_batch(texts: list[str]) -> list[tuple[Fingerprint, str]]:
    assert _WORKER is not None
    return _fingerprint_with(_WORKER, texts)


def _fingerprint_with(fper: Fingerprinter, texts: list[str]) -> list[tuple[Fingerprint, str]]:
    norms = [fper.normalize(t) for t in texts]
    # The exact TF table stays in the worker: it is not stored, and pickling it would cost more than
    # computing it.
    return [(dataclasses.replace(fp, tf={}), content_sha1(norm))
            for fp, norm in zip(fper.fingerprint_normalized(norms), norms, strict=True)]


# -- in-run index: the documents written earlier in this run ----------------------------------------
class RunIndex:
    """Band key -> documents written in this run, so a run labels duplicates among its own records without
    waiting for the store to make them searchable."""

    def __init__(self, complete: bool = False) -> None:
        self.docs: list[StoredDoc] = []
        # Key -> position in `docs` of the first document with it; further ones (rare) in `more`. Only
        # strings and ints: a run adds some 36 keys a document, and a million small lists would make every
        # garbage-collector pass crawl through them.
        self.first: dict[str, int] = {}
        self.more: dict[str, list[int]] = {}
        #: True when the store held nothing before this run (then this index is the whole store).
        self.complete = complete

    def add(self, doc: StoredDoc, keys: Iterable[str]) -> None:
        i = len(self.docs)
        self.docs.append(doc)
        first = self.first
        for k in keys:
            if first.setdefault(k, i) != i:
                self.more.setdefault(k, []).append(i)

    def lookup(self, keys: Sequence[str]) -> list[StoredDoc]:
        """The documents holding any of ``keys``, in the order they were added."""
        found = {i for i in map(self.first.get, keys) if i is not None}
        if found and self.more:
            for k in keys:
                if k in self.more:
                    found.update(self.more[k])
        return [self.docs[i] for i in sorted(found)]


def _best_match(fp: Fingerprint, cands: Sequence[StoredDoc], config: FingerprintConfig, t: Thresholds,
                exclude: str) -> StoredDoc | None:
    """The nearest verified candidate (smallest Hamming, then largest cosine, then id), as `verify` ranks."""
    matches = verify(fp, cands, config, t, exclude=exclude)
    if not matches:
        return None
    return next(d for d in cands if d.id == matches[0].id)


# -- dead letters and checkpoints --------------------------------------------------------------------
class DeadLetters:
    """One JSON line per failed or skipped record, appended to a file created on first use.

    Lines are held until `commit`, which ingest calls once a batch is accounted for (counted in the
    summary). A batch interrupted before that (Ctrl-C, a crash) is not checkpointed either: the next run
    reads it again and reports its records then, so `close` drops what was never committed rather than
    leave those records in the file twice.
    """

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path else None
        self._fh: TextIO | None = None
        self._pending: list[str] = []

    def write(self, *, source: str, location: str, reason: str, kind: str, id: str | None = None,
              excerpt: str | None = None) -> None:
        if self.path is None:
            return
        rec = {"kind": kind, "source": source, "location": location, "reason": reason, "id": id,
               "excerpt": excerpt}
        self._pending.append(json.dumps(rec, ensure_ascii=False) + "\n")

    def commit(self) -> None:
        """Write the held lines and flush them to the OS (a resumed run will not read those records again)."""
        if not self._pending:
            return
        if self._fh is None:
            assert self.path is not None
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "a", encoding="utf-8")
        self._fh.writelines(self._pending)
        self._fh.flush()
        self._pending.clear()

    def close(self) -> None:
        self._pending.clear()
        if self._fh is not None:
            self._fh.close()
            self._fh = None


class Checkpoint:
    """Per input file, the byte offset below which every record has been written (or dead-lettered),
    or that the whole file is done. Saved atomically after every confirmed batch."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path else None
        self.files: dict[str, dict[str, Any]] = {}
        if self.path is not None and self.path.exists():
            try:
                self.files = json.loads(self.path.read_text("utf-8")).get("files", {})
            except (OSError, ValueError) as exc:
                raise ConfigError(f"checkpoint {self.path} is unreadable ({exc}); delete it to start over") from exc

    def skip(self, source: str, offset: int) -> bool:
        return self.done(source) or offset < self.files.get(source, {}).get("offset", 0)

    def done(self, source: str) -> bool:
        """The whole file was finished by the run being resumed (it is not opened again)."""
        return bool(self.files.get(source, {}).get("done", False))

    def advance(self, source: str, next_offset: int) -> None:
        f = self.files.setdefault(source, {"offset": 0})
        f["offset"] = max(f.get("offset", 0), next_offset)

    def finish(self, source: str) -> None:
        self.files.setdefault(source, {})["done"] = True

    def save(self) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        tmp.write_text(json.dumps({"files": self.files}, ensure_ascii=False), "utf-8")
        os.replace(tmp, self.path)


# -- the pipeline ------------------------------------------------------------------------------------
@dataclass
class IngestOptions:
    format: str = "auto"
    id_field: str = "id"
    text_field: str = "text"
    title_field: str = "title"
    on_duplicate: str = "label"
    dead_letter: str | Path | None = None
    workers: int = 0
    #: What counts as a near-duplicate when labelling (default: the index's thresholds).
    thresholds: Thresholds | ThresholdOverrides | None = None
    checkpoint: str | Path | None = None
    resume: bool = False
    max_record_bytes: int = 64 * 2**20
    batch: int = BATCH

    def __post_init__(self) -> None:
        if self.on_duplicate not in ON_DUPLICATE:
            raise ConfigError(f"on_duplicate must be one of {', '.join(ON_DUPLICATE)}, got {self.on_duplicate!r}")
        if self.workers < 0:
            raise ConfigError(f"workers must be >= 0 (0 = one per CPU), got {self.workers}")
        if self.resume and not self.checkpoint:
            raise ConfigError("resume needs a checkpoint file")


def _doc_id(rec: Record, sha1: str) -> str:
    return rec.id if rec.id is not None else sha1


def _source_fields(rec: Record) -> dict[str, Any]:
    src = {k: v for k, v in rec.fields.items() if k != "dedup"}
    if rec.id is not None:
        src["id"] = rec.id
    if rec.title is not None:
        src["title"] = rec.title
    src["text"] = rec.text
    return src


def _batches(items: Iterable[Record | Rejected], size: int,
             max_chars: int = BATCH_CHARS) -> Iterator[list[Record | Rejected]]:
    """Batches of at most ``size`` records and about ``max_chars`` characters of text, so that a folder
    of novels does not travel to a worker (and sit in memory several times) as one task."""
    batch: list[Record | Rejected] = []
    chars = 0
    for item in items:
        batch.append(item)
        if isinstance(item, Record):
            chars += len(item.text)
        if len(batch) >= size or chars >= max_chars:
            yield batch
            batch, chars = [], 0
    if batch:
        yield batch


Batch = list[Record | Rejected]


class _Workers:
    """Fingerprinting in worker processes (or in this process with one worker), batches kept in input
    order with at most ``workers + 1`` of them in flight."""

    def __init__(self, config: FingerprintConfig, workers: int) -> None:
        self.workers = workers
        self._pool = ProcessPoolExecutor(workers, initializer=_init_worker, initargs=(config.to_json(),)) \
            if workers > 1 else None
        self._local = None if self._pool else Fingerprinter(config)

    def _submit(self, batch: Batch) -> Future | list:
        texts = [r.text for r in batch if isinstance(r, Record)]
        if self._pool is not None:
            return self._pool.submit(_fingerprint_batch, texts)
        return _fingerprint_with(self._local, texts)  # type: ignore[arg-type]

    def in_order(self, batches: Iterator[Batch]) -> Iterator[tuple[Batch, list[tuple[Fingerprint, str]]]]:
        in_flight: deque[tuple[Batch, Future | list]] = deque()
        for batch in batches:
            in_flight.append((batch, self._submit(batch)))
            if len(in_flight) > self.workers:
                yield self._next(in_flight)
        while in_flight:
            yield self._next(in_flight)

    @staticmethod
    def _next(in_flight: deque[tuple[Batch, Future | list]]) -> tuple[Batch, list[tuple[Fingerprint, str]]]:
        batch, fut = in_flight.popleft()
        return batch, fut.result() if isinstance(fut, Future) else fut

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)


class _Run:
    """One ingest run: its counts, dead letters, checkpoint and in-run index, and the one-job steps every
    batch goes through (account for what was read, look up, label, write, advance the checkpoint).

    The shape follows elasticsearch-py's ``helpers.streaming_bulk``: `process` is the short driver; each
    step is a small method, and every record that does not end up written goes through `_fail` or
    `_skip`, which count it and dead-letter it (so ``read == indexed + skipped + failed`` holds by
    construction).
    """

    def __init__(self, store: Store, config: FingerprintConfig, thresholds: Thresholds, opts: IngestOptions,
                 *, created: bool, summary: IngestSummary, checkpoint: Checkpoint) -> None:
        self.store, self.config, self.t, self.opts = store, config, thresholds, opts
        self.summary = summary
        self.dead = DeadLetters(opts.dead_letter)
        self.ckpt = checkpoint
        self.run_index = RunIndex(complete=created)
        #: id -> content SHA-1 of what this run wrote (or skipped) under it.
        self.written: dict[str, str] = {}
        self.last_source: str | None = None

    # -- the driver ---------------------------------------------------------------------------------
    def process(self, batch: Batch, results: list[tuple[Fingerprint, str]]) -> None:
        items = self._accept(batch, results)
        stored = self._lookup(items)
        self._write(self._label(items, stored))
        self._advance_checkpoint(batch)

    def finish(self) -> None:
        """After the last batch: mark the last file done and make everything written searchable (so
        `similar` or `dups` run right after ingest do not miss documents waiting for a periodic refresh)."""
        if self.last_source is not None:
            self.ckpt.finish(self.last_source)
        self.ckpt.save()
        self.store.refresh()

    # -- accounting ---------------------------------------------------------------------------------
    def _fail(self, at: Record | Rejected, kind: str, reason: str, *, doc_id: str | None = None,
              excerpt: str | None = None) -> None:
        """Count one record as failed and dead-letter it."""
        self.summary.failed += 1
        self.dead.write(source=at.source, location=at.location, kind=kind, id=doc_id, reason=reason,
                        excerpt=excerpt)

    def _skip(self, item: _Done, reason: str, *, listed: bool = True) -> None:
        """Count one record as skipped and dead-letter it; ``listed``: name it in ``skipped_ids``."""
        self.summary.skipped += 1
        if listed:
            self.summary.skipped_ids.append(item.id)
        self.dead.write(source=item.record.source, location=item.record.location, kind="skipped", id=item.id,
                        reason=reason)

    def _fail_unconfirmed(self, items: Iterable[_Done], exc: StoreError, what: str) -> None:
        """The store went away: the records it never confirmed count as failed (a re-run or a resumed run
        sends them again), and their dead letters go with this batch's counts."""
        for d in items:
            self._fail(d.record, "unconfirmed", f"{what}: {exc}", doc_id=d.id)
        self.dead.commit()

    # -- the steps ----------------------------------------------------------------------------------
    def _accept(self, batch: Batch, results: list[tuple[Fingerprint, str]]) -> list[_Done]:
        """Count what was read; rejected records fail here, the rest pair up with their fingerprints."""
        items: list[_Done] = []
        it = iter(results)
        for rec in batch:
            self.summary.read += 1
            if isinstance(rec, Rejected):
                self._fail(rec, "rejected", rec.reason, excerpt=rec.excerpt)
                continue
            fp, sha1 = next(it)
            self.summary.bytes += len(rec.text.encode("utf-8", "surrogatepass"))
            items.append(_Done(rec, fp, sha1, _doc_id(rec, sha1)))
        return items

    def _lookup(self, items: list[_Done]) -> list[list[StoredDoc]]:
        """The stored candidates of each record: one batched band lookup (``index`` mode: only a stored
        document under the same id, whose labels an idempotent re-ingest keeps). An index this run
        created holds nothing this run did not write, all of it in the run index: nothing to ask."""
        if not items or self.run_index.complete:
            return [[] for _ in items]
        try:
            if self.opts.on_duplicate == "index":
                have = self.store.get([d.id for d in items])
                return [[have[d.id]] if d.id in have else [] for d in items]
            return self.store.lookup([probe_for(d.fp, self.config) for d in items])
        except StoreError as exc:
            self._fail_unconfirmed(items, exc, "not written, the store failed")
            raise

    def _label(self, items: list[_Done], stored: list[list[StoredDoc]]) -> list[tuple[NewDoc, _Done]]:
        """Decide each record's fate: a repeat within this run (skipped or failed), a near-duplicate to
        skip, or a document to write with its labels."""
        to_write: list[tuple[NewDoc, _Done]] = []
        for d, found in zip(items, stored, strict=True):
            if d.id in self.written:
                self._repeat(d)
                continue
            cluster_id, dup_of, self_doc = self._labels_of(d, found)
            self.written[d.id] = d.sha1
            if dup_of is not None:
                self.summary.duplicates += 1
                if self.opts.on_duplicate == "skip" and self_doc is None:
                    self._skip(d, f"near-duplicate of {dup_of}")
                    continue
            labels = (cluster_id, dup_of if self.opts.on_duplicate != "index" else None)
            to_write.append((NewDoc(d.id, d.fp, _source_fields(d.record), d.sha1, *labels), d))
            if self.opts.on_duplicate != "index":  # the in-run index only serves duplicate labelling
                self.run_index.add(StoredDoc(d.id, d.fp.simhash, d.fp.vector, d.fp.empty, d.fp.length, d.fp.chars,
                                             cluster_id, dup_of, minhash=d.fp.minhash, shingles=d.fp.shingles),
                                   d.fp.bands + d.fp.lsh)
        return to_write

    def _repeat(self, d: _Done) -> None:
        """A second record with an id this run already wrote."""
        if self.written[d.id] == d.sha1:
            self._skip(d, "same id and text as a record already written in this run", listed=False)
        else:
            self._fail(d.record, "rejected", "duplicate id with different text (the first record with this id "
                       "was kept)", doc_id=d.id, excerpt=d.record.text[:200])

    def _labels_of(self, d: _Done, found: list[StoredDoc]) -> tuple[str, str | None, StoredDoc | None]:
        """(cluster_id, duplicate_of, the stored document under the same id) of one record.

        A document already stored with this content keeps its labels (an idempotent re-ingest); otherwise
        the nearest verified near-duplicate among the stored candidates and this run's documents gives
        them (``index`` mode labels nothing)."""
        self_doc = next((s for s in found if s.id == d.id), None)
        if self_doc is not None and self_doc.simhash == d.fp.simhash:
            return self_doc.cluster_id or d.id, self_doc.duplicate_of, self_doc
        if self.opts.on_duplicate == "index":
            return d.id, None, self_doc
        cands = list(found) + self.run_index.lookup(lookup_keys(d.fp, self.config))
        match = _best_match(d.fp, cands, self.config, self.t, d.id)
        if match is None:
            return d.id, None, self_doc
        return match.cluster_id or match.id, match.id, self_doc

    def _write(self, to_write: list[tuple[NewDoc, _Done]]) -> None:
        """Write one batch and count each document's outcome; a document the store rejects fails."""
        where = {new.id: d for new, d in to_write}
        try:
            for res in self.store.write(new for new, _ in to_write):
                d = where.pop(res.id)
                if not res.ok:
                    self._fail(d.record, "rejected", f"rejected by the store: {res.error}", doc_id=res.id,
                               excerpt=d.record.text[:200])
                    continue
                self.summary.indexed += 1
                if res.created:
                    self.summary.created += 1
                else:
                    self.summary.updated += 1
        except StoreError as exc:
            self._fail_unconfirmed(where.values(), exc, "not confirmed by the store")
            raise

    def _advance_checkpoint(self, batch: Batch) -> None:
        """Everything in ``batch`` is accounted for: move the checkpoint past it. Its dead letters go to
        disk first (a resumed run does not read these records again)."""
        for item in batch:
            if self.last_source is not None and item.source != self.last_source:
                self.ckpt.finish(self.last_source)
            self.last_source = item.source
            if item.offset is not None:
                self.ckpt.advance(item.source, item.offset + 1)
        self.dead.commit()
        self.ckpt.save()


def _open(store: Store, config: FingerprintConfig | None) -> OpenResult:
    """Open ``store`` with ``config``; without one, with the store's own config, or the default config
    when the store does not exist yet."""
    try:
        return store.open(config, create=config is not None)
    except IndexNotFound:
        if config is not None:
            raise
        return store.open(FingerprintConfig(), create=True)


def _checkpoint(opts: IngestOptions) -> Checkpoint:
    ckpt = Checkpoint(opts.checkpoint)
    if opts.checkpoint and not opts.resume:
        ckpt.files = {}
    return ckpt


def ingest(paths: Sequence[str | Path], store: Store, config: FingerprintConfig | None = None,
           options: IngestOptions | None = None,
           progress: Callable[[IngestSummary], None] | None = None) -> IngestSummary:
    """Read, fingerprint, label and write every record under ``paths`` into ``store``.

    ``config`` None means: the store's config if it exists, else the default config.
    Returns the summary; raises ConfigMismatchError before writing anything when the store was built
    with another config. A store failure mid-run (server gone) ends the run: the summary carries the
    error, in-flight records count as failed (dead-lettered as unconfirmed), and a re-run completes it.
    """
    opts = options or IngestOptions()
    started = time.monotonic()
    opened = _open(store, config)
    cfg = opened.config
    t = resolve_thresholds(opts.thresholds, cfg)
    t.check_band_guarantee(cfg)
    summary = IngestSummary(dead_letter=str(opts.dead_letter) if opts.dead_letter else None)
    ckpt = _checkpoint(opts)
    summary.resumed_files = sum(1 for f in ckpt.files.values() if f.get("done")) if opts.resume else 0
    run = _Run(store, cfg, t, opts, created=opened.created, summary=summary, checkpoint=ckpt)
    records = read_records(paths, format=opts.format, id_field=opts.id_field, text_field=opts.text_field,
                           title_field=opts.title_field, max_record_bytes=opts.max_record_bytes,
                           skip=ckpt.skip if opts.resume else None, skip_file=ckpt.done if opts.resume else None)
    workers = _Workers(cfg, opts.workers or (os.cpu_count() or 1))
    retried_before = store.retried
    try:
        for batch, results in workers.in_order(_batches(records, opts.batch)):
            run.process(batch, results)
            if progress:
                summary.seconds = time.monotonic() - started
                progress(summary)
        run.finish()
    except StoreError as exc:
        summary.error = str(exc)
    finally:
        workers.close()
        run.dead.close()
        summary.retried += store.retried - retried_before
        summary.seconds = time.monotonic() - started
    return summary


def ids_for_texts(texts: Sequence[str], config: FingerprintConfig) -> list[str]:
    """The ids ingest gives records without an id: SHA-1 of the normalised text."""
    return [content_sha1(normalize(x, t2s=config.t2s)) for x in texts]
