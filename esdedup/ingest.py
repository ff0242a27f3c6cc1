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
from .readers import Record, Rejected, check_inputs, read_records
from .schema import content_sha1
from .store.base import NewDoc, Store, StoredDoc
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
        # Encoded before the file is opened (ASCII escapes: any source name can be saved), and the
        # temporary file removed on failure: a failed save never leaves a 0-byte .tmp behind.
        payload = json.dumps({"files": self.files}).encode("ascii")
        try:
            tmp.write_bytes(payload)
            os.replace(tmp, self.path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise


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
    check_inputs(paths)  # a mistyped path fails here, before the store (or an empty index) is opened
    try:
        opened = store.open(config, create=config is not None)
    except IndexNotFound:
        if config is not None:
            raise
        opened = store.open(FingerprintConfig(), create=True)
    cfg = opened.config
    t = resolve_thresholds(opts.thresholds, cfg)
    t.check_band_guarantee(cfg)
    summary = IngestSummary(dead_letter=str(opts.dead_letter) if opts.dead_letter else None)
    dead = DeadLetters(opts.dead_letter)
    ckpt = Checkpoint(opts.checkpoint)
    if opts.checkpoint and not opts.resume:
        ckpt.files = {}
    skip = ckpt.skip if opts.resume else None
    summary.resumed_files = sum(1 for f in ckpt.files.values() if f.get("done")) if opts.resume else 0
    run_index = RunIndex(complete=opened.created)
    written: dict[str, str] = {}  # id -> content sha1 of what this run wrote under it

    records = read_records(paths, format=opts.format, id_field=opts.id_field, text_field=opts.text_field,
                           title_field=opts.title_field, max_record_bytes=opts.max_record_bytes, skip=skip,
                           skip_file=ckpt.done if opts.resume else None)
    workers = opts.workers or (os.cpu_count() or 1)
    pool = ProcessPoolExecutor(workers, initializer=_init_worker, initargs=(cfg.to_json(),)) if workers > 1 else None
    local = None if pool else Fingerprinter(cfg)
    last_source: str | None = None

    def submit(batch: list[Record | Rejected]) -> tuple[list[Record | Rejected], Future | list]:
        texts = [r.text for r in batch if isinstance(r, Record)]
        if pool is not None:
            return batch, pool.submit(_fingerprint_batch, texts)
        return batch, _fingerprint_with(local, texts)  # type: ignore[arg-type]

    try:
        in_flight: list[tuple[list[Record | Rejected], Future | list]] = []
        batches = _batches(records, opts.batch)
        exhausted = False
        while True:
            while not exhausted and len(in_flight) < workers + 1:
                nxt = next(batches, None)
                if nxt is None:
                    exhausted = True
                else:
                    in_flight.append(submit(nxt))
            if not in_flight:
                break
            batch, fut = in_flight.pop(0)
            results = fut.result() if isinstance(fut, Future) else fut
            last_source = _process_batch(batch, results, store, cfg, t, opts, summary, dead, run_index,
                                         written, ckpt, last_source)
            if progress:
                summary.seconds = time.monotonic() - started
                progress(summary)
        if last_source is not None:
            ckpt.finish(last_source)
        ckpt.save()
        # What ingest wrote is searchable when it returns: `similar` or `dups` run right after it
        # must not miss documents still waiting for Elasticsearch's next periodic refresh.
        store.refresh()
    except StoreError as exc:
        summary.error = str(exc)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
        dead.close()
        summary.retried += getattr(store, "retried", 0)
        summary.seconds = time.monotonic() - started
    return summary


def _process_batch(batch: list[Record | Rejected], results: list[tuple[Fingerprint, str]], store: Store,
                   cfg: FingerprintConfig, t: Thresholds, opts: IngestOptions, summary: IngestSummary,
                   dead: DeadLetters, run_index: RunIndex, written: dict[str, str], ckpt: Checkpoint,
                   last_source: str | None) -> str | None:
    done: list[_Done] = []
    it = iter(results)
    for item in batch:
        summary.read += 1
        if isinstance(item, Rejected):
            summary.failed += 1
            dead.write(source=item.source, location=item.location, reason=item.reason, kind="rejected",
                       excerpt=item.excerpt)
            continue
        fp, sha1 = next(it)
        summary.bytes += len(item.text.encode("utf-8", "surrogatepass"))
        done.append(_Done(item, fp, sha1))

    # "index" writes no labels: only documents already stored under the same id matter (idempotent
    # re-ingest keeps their labels), so skip the band lookups and fetch those by id.
    try:
        if opts.on_duplicate == "index":
            ids = [_doc_id(d.record, d.sha1) for d in done]
            # An index this run created holds nothing this run did not write (repeats are caught below).
            have = store.get(ids) if done and not run_index.complete else {}
            stored = [[have[i]] if i in have else [] for i in ids]
        else:
            # An index this run created holds only this run's documents, all of them in the run index:
            # asking the store would find nothing more. Otherwise one lookup for the whole batch (one
            # _msearch for Elasticsearch).
            if done and not run_index.complete:
                stored = store.lookup([probe_for(d.fp, cfg) for d in done])
            else:
                stored = [[] for _ in done]
    except StoreError as exc:
        # The store went away before this batch was written: every record of it counts as failed
        # (so read == indexed + skipped + failed still holds) and a re-run or --resume sends it again.
        for d in done:
            summary.failed += 1
            dead.write(source=d.record.source, location=d.record.location, kind="unconfirmed",
                       id=_doc_id(d.record, d.sha1), reason=f"not written, the store failed: {exc}")
        dead.commit()  # the summary counts this batch: its dead letters go with it
        raise
    to_write: list[NewDoc] = []
    where: dict[str, _Done] = {}
    for d, found in zip(done, stored, strict=True):
        rec, fp = d.record, d.fp
        doc_id = _doc_id(rec, d.sha1)
        if doc_id in written:
            if written[doc_id] == d.sha1:
                summary.skipped += 1
                dead.write(source=rec.source, location=rec.location, kind="skipped", id=doc_id,
                           reason="same id and text as a record already written in this run")
            else:
                summary.failed += 1
                dead.write(source=rec.source, location=rec.location, kind="rejected", id=doc_id,
                           reason="duplicate id with different text (the first record with this id was kept)",
                           excerpt=rec.text[:200])
            continue
        self_doc = next((s for s in found if s.id == doc_id), None)
        cluster_id, dup_of = doc_id, None
        if self_doc is not None and self_doc.simhash == fp.simhash:
            # Already stored with this content: keep its labels (idempotent re-ingest).
            cluster_id, dup_of = self_doc.cluster_id or doc_id, self_doc.duplicate_of
        elif opts.on_duplicate != "index":
            match = _best_match(fp, list(found) + run_index.lookup(lookup_keys(fp, cfg)), cfg, t, doc_id)
            if match is not None:
                dup_of, cluster_id = match.id, match.cluster_id or match.id
        if dup_of is not None:
            summary.duplicates += 1
            if opts.on_duplicate == "skip" and self_doc is None:
                summary.skipped += 1
                summary.skipped_ids.append(doc_id)
                dead.write(source=rec.source, location=rec.location, kind="skipped", id=doc_id,
                           reason=f"near-duplicate of {dup_of}")
                written[doc_id] = d.sha1
                continue
        new = NewDoc(doc_id, fp, _source_fields(rec), d.sha1, cluster_id,
                     dup_of if opts.on_duplicate != "index" else None)
        to_write.append(new)
        where[doc_id] = d
        written[doc_id] = d.sha1
        if opts.on_duplicate != "index":  # the in-run index only serves duplicate labelling
            run_index.add(StoredDoc(doc_id, fp.simhash, fp.vector, fp.empty, fp.length, fp.chars, cluster_id, dup_of,
                                    minhash=fp.minhash, shingles=fp.shingles),
                          fp.bands + fp.lsh)

    confirmed: set[str] = set()
    try:
        for res in store.write(to_write):
            confirmed.add(res.id)
            d = where[res.id]
            if res.ok:
                summary.indexed += 1
                if res.created:
                    summary.created += 1
                else:
                    summary.updated += 1
            else:
                summary.failed += 1
                dead.write(source=d.record.source, location=d.record.location, kind="rejected", id=res.id,
                           reason=f"rejected by the store: {res.error}", excerpt=d.record.text[:200])
    except StoreError as exc:
        for doc_id, d in where.items():
            if doc_id not in confirmed:
                summary.failed += 1
                dead.write(source=d.record.source, location=d.record.location, kind="unconfirmed", id=doc_id,
                           reason=f"not confirmed by the store: {exc}")
        dead.commit()
        raise
    # Everything in this batch is accounted for: move the checkpoint past it.
    for item in batch:
        if last_source is not None and item.source != last_source:
            ckpt.finish(last_source)
        last_source = item.source
        offset = getattr(item, "offset", None)
        if offset is not None:
            ckpt.advance(item.source, offset + 1)
    dead.commit()  # a resumed run does not read these records again: their dead letters must be on disk
    ckpt.save()
    return last_source


def ids_for_texts(texts: Sequence[str], config: FingerprintConfig) -> list[str]:
    """The ids ingest gives records without an id: SHA-1 of the normalised text."""
    return [content_sha1(normalize(x, t2s=config.t2s)) for x in texts]
