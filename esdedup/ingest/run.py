"""`ingest`: read records, fingerprint them in worker processes, label near-duplicates, write to a store.

Every record read ends in exactly one of: indexed, skipped (a near-duplicate with ``on_duplicate="skip"``,
or an exact repeat of a record already written in this run) or failed (rejected by the reader or the
store, or unconfirmed when the store went away); failed and skipped records go to the dead-letter file
with their source location and reason. So ``read == indexed + skipped + failed`` always holds.

Labels: a cluster is a set of documents joined by near-duplicate pairs (the rule of `esdedup.match.rule`); every
member carries the id of the cluster's representative in ``cluster_id``, and all but the representative
also in ``duplicate_of``. The representative is the cluster's earliest member in write order: every
document keeps ``seq``, when it was first written (nanoseconds since 1970; ties broken by id), so that
every writer that looks at a cluster picks the same representative, whoever wrote first. A document that
is a near-duplicate of documents in two clusters joins them (the later representative's members move to
the earlier one). A document already stored under the same id with the same content keeps its write order
and labels, so running the same ingest twice changes nothing.

Several writers (processes, threads with an `Ingester` each, machines) may write one index at once. On the
embedded store a lock makes each batch's lookup, labelling and write one step. On Elasticsearch, where a
document is found by other writers only after a refresh, each writer settles the labels of a batch after
writing it (`_Run._settle`): refresh, look the batch up again, join the clusters now found, with
conditional updates (``if_seq_no``/``if_primary_term``) where another writer may change the same
documents. Why this design rather than, say, one lock for all writers: Elasticsearch has no lock across
clients, a lock document would serialise every writer on one shard, and a writer that dies holding it
would stop all the others; settling costs a refresh and a second lookup per batch, and only when the index
counted writes other than the writer's own (`Store.alone`). With ``skip``, the later document of a pair
written at the same time is deleted again (skipped when it was the writer's own, ``removed`` otherwise).
`Ingester` takes one article at a time, for a service.

This module holds the run (`_Run`: accounting, labelling, writing, settling) and its entry points. What the
run uses but does not decide lives apart, one idea per module: the worker pool that fingerprints batches
(`esdedup.ingest.workers`), the run's memory of what it wrote (`esdedup.ingest.runindex`), and its two files, the
checkpoint (`esdedup.ingest.checkpoint`) and the dead letters (`esdedup.ingest.deadletters`).
"""
from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from itertools import repeat
from pathlib import Path
from typing import Any

import numpy as np

from esdedup.errors import ConfigError, IndexNotFound, OutputError, StoreError, Terminated
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprint, Fingerprinter
from esdedup.fingerprint.normalize import normalize
from esdedup.ingest.checkpoint import Checkpoint, lock_checkpoint, open_checkpoint
from esdedup.ingest.clock import WRITE_CLOCK
from esdedup.ingest.deadletters import DeadLetters
from esdedup.ingest.runindex import MAX_PER_KEY, ClusterRoots, EarlierWrites, FrozenKeys, RunIndex
from esdedup.ingest.workers import Batch, Fingerprinted, Stop, Workers, fingerprint_with
from esdedup.match.lookup import lookup_keys, probe_for
from esdedup.match.rule import Sketch, measure
from esdedup.match.thresholds import ThresholdOverrides, Thresholds, resolve_thresholds
from esdedup.readers import Record, Rejected, check_inputs, read_records
from esdedup.schema import DEDUP, content_sha1
from esdedup.store.base import NewDoc, OpenResult, Root, Store, StoredDoc, WriteResult
from esdedup.util.unionfind import UnionFind

log = logging.getLogger(__name__)

ON_DUPLICATE = ("index", "label", "skip")
#: Records fingerprinted per task sent to a worker process.
BATCH = 1000
#: ... and at most about this many characters of text per task (bounds memory with large documents).
BATCH_CHARS = 8 * 2**20
#: Documents a batch run keeps in memory (its run index, about 4 KB each, and what it wrote), plus one batch.
#: When that many are held, everything written is made searchable, and the run goes on with an empty run
#: index (`_Run._next_window`): a run's memory does not grow with its input (about 1 GB at most). A run that
#: created its index and has been its only writer keeps the band keys of the documents it let go
#: (`FROZEN_MAX_DOCS`) and asks the store only for the documents these name; any other run looks every batch
#: up in the store too, which costs speed (bench/scale.py, 100k documents: 1,434 docs/s with one window, 696
#: with windows of 50k, whose peak RSS is 317 MB instead of 503; with frozen keys, windows of 25k run at
#: 2.6-3.9x the rate of store lookups, with the node CPU of one window: BENCHMARKS.md, "Past the window").
RUN_INDEX_MAX_DOCS = 200_000
#: Documents of earlier windows whose band keys a run keeps frozen (`esdedup.ingest.runindex.FrozenKeys`, about 250
#: bytes each: 0.5 GB at most); past them the run looks its batches up in the store instead.
FROZEN_MAX_DOCS = 2_000_000
#: Ids the summary lists (``skipped_ids``, ``replaced_ids``), at most.
SUMMARY_IDS = 1000
#: Stored candidates a record is compared with, at most. Every member of a cluster carries its
#: representative, so a few members found are as good as all of them; a crowded key (thousands of copies)
#: must not make every lookup fetch and compare a thousand documents.
LOOKUP_LIMIT = 100


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
    #: Stored documents whose labels this run changed after they were written: clusters joined by a later
    #: document, or settled with documents other writers wrote at the same time.
    relabelled: int = 0
    #: Near-duplicates other writers wrote at the same time, deleted again by this run (``skip``); they are
    #: not among this run's records (their own writer counted them indexed).
    removed: int = 0
    #: Records that replaced a stored document of the same id with a new text (its old cluster is labelled
    #: again), and (the first `SUMMARY_IDS` of) their ids.
    replaced: int = 0
    replaced_ids: list[str] = field(default_factory=list)
    #: Band keys held by more of this run's documents than the in-run index compares (`MAX_PER_KEY`), with
    #: their counts, most crowded first: boilerplate or mass copies (labelled through their first ones).
    crowded_keys: list[tuple[str, int]] = field(default_factory=list)
    #: Records read from the input but not written when the run was stopped (`Terminated`); they are not
    #: counted in ``read``, and a resumed run reads them again.
    unwritten: int = 0
    bytes: int = 0
    resumed_files: int = 0
    seconds: float = 0.0
    dead_letter: str | None = None
    #: The first `SUMMARY_IDS` ids of the skipped records.
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
        d["skipped_ids"] = d["skipped_ids"][:SUMMARY_IDS]
        d["replaced_ids"] = d["replaced_ids"][:SUMMARY_IDS]
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
    #: The ``dedup`` fields encoded by the worker (`NewDoc.dedup_json`), when the store takes them.
    dedup_json: bytes | None = None


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


#: Fields of a stored document that ingest fills: ``id``, ``title`` and ``text`` from the fields chosen for
#: them, ``dedup`` with the fingerprint. A record's own fields of these names (when other fields were chosen,
#: e.g. ``id_field="doc_id"`` on records that also have an ``id``) are kept under `INPUT_FIELDS`.
FILLED_FIELDS = ("id", "title", "text", DEDUP)
INPUT_FIELDS = "input_fields"


def _field_clash(rec: Record) -> str | None:
    """Why a record cannot keep its own fields of `FILLED_FIELDS` (it has an `INPUT_FIELDS` already), or None."""
    own = [k for k in FILLED_FIELDS if k in rec.fields]
    if own and INPUT_FIELDS in rec.fields:
        return (f"the record's own field(s) {', '.join(map(repr, own))} would be kept under {INPUT_FIELDS!r} (other "
                f"fields were chosen as id, title or text), but it has a field {INPUT_FIELDS!r} already")
    return None


def _source_fields(rec: Record) -> dict[str, Any]:
    src = dict(rec.fields)
    own = {k: src.pop(k) for k in FILLED_FIELDS if k in src}
    if own:
        src[INPUT_FIELDS] = own
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


@dataclass(frozen=True)
class _Labels:
    """What labelling decided for one record: its write order and cluster, or that it is skipped."""

    seq: int
    root: Root
    skip_for: str | None = None  # ``skip``: the representative of the stored near-duplicate
    replaces: Root | None = None  # a new text under a stored id: the cluster the old text was in


@dataclass(eq=False)
class _BatchState:
    """What one batch carries from its labelling to the end of its write: with writes overlapped (`_Run.feed`),
    the next batch is labelled while this one is written, and each keeps its own."""

    batch: Batch
    #: What became of each record (by object id) and the cluster each one joined.
    fates: dict[int, tuple[str, str | None]] = field(default_factory=dict)
    clusters: dict[int, tuple[str, Root]] = field(default_factory=dict)
    #: Clusters the batch joined that the store must join too (`Store.merge_clusters`).
    joins: list[set[Root]] = field(default_factory=list)
    #: Ids given a new text in this batch -> (the old text's cluster, the new text's).
    replaced: dict[str, tuple[Root, Root]] = field(default_factory=dict)
    #: Ids of the batch that were new to the store.
    created: set[str] = field(default_factory=set)
    #: The batch's dead letters, committed with its checkpoint.
    lines: list[str] = field(default_factory=list)
    labelled: list[tuple[_Done, _Labels]] = field(default_factory=list)
    sent: list[tuple[NewDoc, _Done]] = field(default_factory=list)
    write: Future | None = None


def _collect(store: Store, docs: list[NewDoc]) -> tuple[list[WriteResult], StoreError | None]:
    """Write ``docs``; the results the store gave, and the error that stopped it (the rest unconfirmed)."""
    out: list[WriteResult] = []
    try:
        out.extend(store.write(docs))
    except StoreError as exc:
        return out, exc
    return out, None


class _Run:
    """One ingest run: its counts, dead letters, checkpoint and in-run index, and the one-job steps every
    batch goes through (account for what was read, look up, label, write, settle, advance the checkpoint).

    The shape follows elasticsearch-py's ``helpers.streaming_bulk``: `process` is the short driver; each
    step is a small method, and every record that does not end up written goes through `_fail` or
    `_skip`, which count it and dead-letter it (so ``read == indexed + skipped + failed`` holds by
    construction).

    Labels: a cluster is a set of documents connected by near-duplicate pairs; its representative is its
    earliest member by write order (``seq``, then id), and every member carries the representative's id
    (``cluster_id``; ``duplicate_of`` on all but the representative). A document that joins two clusters
    joins them (the later representative's members move to the earlier one). How that stays true with
    several writers: see `_settle`.
    """

    def __init__(self, store: Store, config: FingerprintConfig, thresholds: Thresholds, opts: IngestOptions,
                 *, created: bool, summary: IngestSummary, checkpoint: Checkpoint | None, dead: DeadLetters,
                 remember: bool = True) -> None:
        self.store, self.config, self.t, self.opts = store, config, thresholds, opts
        self.summary = summary
        self.dead = dead
        self.ckpt = checkpoint
        #: ``remember``: keep this run's documents in memory (a batch run); a service that settles every
        #: call finds them in the store instead, and keeps nothing that grows from one call to the next.
        self.remember = remember
        self.run_index = RunIndex(complete=created and remember)
        #: The band keys of the run's earlier windows, while the run index and they are the whole store.
        self.frozen: FrozenKeys | None = None
        self.roots = ClusterRoots()
        #: id -> content SHA-1 of what this run wrote (or skipped) under it since its run index was started;
        #: what it wrote before, in `earlier`.
        self.written: dict[str, str] = {}
        self.earlier = EarlierWrites()
        self.window = RUN_INDEX_MAX_DOCS
        self.deleted: set[str] = set()
        #: Records of this run written as their cluster's representative (for the count of duplicates).
        self.own_roots: set[str] = set()
        #: The batch being labelled or accounted for, and the one whose write runs in the writer thread.
        self.cur = _BatchState([])
        self._sending: _BatchState | None = None
        #: Writes overlap the next batch's labelling on a store that settles (Elasticsearch: its client may
        #: be used from two threads; the embedded store's SQLite connection belongs to one), in a batch run,
        #: unless near-duplicates are skipped (a later batch must not be skipped for a document that settling
        #: the earlier one deletes).
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="esdedup-write") \
            if store.settles and remember and opts.on_duplicate != "skip" else None
        self.last_source: str | None = None

    @property
    def fates(self) -> dict[int, tuple[str, str | None]]:
        return self.cur.fates

    @property
    def clusters(self) -> dict[int, tuple[str, Root]]:
        return self.cur.clusters

    def _enter(self, state: _BatchState) -> _BatchState:
        """Make ``state`` the batch that counts, labels and dead letters go to."""
        self.cur = state
        self.dead.use(state.lines)
        return state

    # -- the driver ---------------------------------------------------------------------------------
    def process(self, batch: Batch, results: Fingerprinted) -> list[_Done]:
        """Take one batch through every step; returns the records written (and still stored)."""
        self._start_window_if_full(batch, results)
        self._enter(_BatchState(batch))
        items = self._accept(batch, results)
        with self.store.write_lock() as others_wrote:
            if others_wrote:
                self._not_alone()
            self.cur.labelled = self._label(items, self._lookup(items))
            written = self._write(self._new_docs(self.cur.labelled))
            self._join_clusters(written)
            self._relabel_replaced()
        return self._after_write(written)

    def feed(self, batch: Batch, results: Fingerprinted) -> None:
        """Take one batch in: with overlapped writes, label it while the batch before is written, then
        account for that one (write results, joins, settling, checkpoint) and start writing this one; else
        `process` it. Either way a batch is checkpointed only once it is written and accounted for."""
        if self._writer is None:
            self.process(batch, results)
            return
        self._start_window_if_full(batch, results)
        try:
            state = self._enter(_BatchState(batch))
            items = self._accept(batch, results)
            state.labelled = self._label(items, self._lookup(items))
        except StoreError:
            with contextlib.suppress(StoreError):
                self.drain()
            raise
        try:
            self.drain()
        except (StoreError, OutputError) as exc:
            self._abandon(state, exc)
            raise
        self._enter(state)
        state.sent = self._new_docs(state.labelled)
        state.write = self._writer.submit(_collect, self.store, [new for new, _ in state.sent])
        self._sending = state

    def drain(self) -> None:
        """Wait for the batch being written, if any, and account for it."""
        state, self._sending = self._sending, None
        if state is None or state.write is None:
            return
        self._enter(state)
        with self.store.write_lock():
            written = self._account(state.sent, *state.write.result())
            self._join_clusters(written)
            self._relabel_replaced()
        self._after_write(written)

    def _start_window_if_full(self, batch: Batch, results: Fingerprinted) -> None:
        """Before labelling ``batch``: start a new run index when this one holds `window` documents. When
        that fails (the store or the dead-letter file failed), ``batch`` counts as failed, unconfirmed."""
        if not self.remember or len(self.written) < self.window:
            return
        try:
            self._next_window()
        except (StoreError, OutputError) as exc:
            state = self._enter(_BatchState(batch))
            self._abandon(state, exc, self._accept(batch, results))
            raise

    def _next_window(self) -> None:
        """Make everything written so far searchable (the batch being written first, with its joins) and go
        on with an empty run index: from now on batches are looked up in the store as well (only the
        documents the frozen keys name, `_freeze`, while the run writes its own index alone). The cluster
        merges of this run are in the store's labels by then (`_join_clusters`), so `roots` starts afresh
        too, and the ids written so far go to `earlier`."""
        self.drain()
        self.store.refresh()
        self.earlier.add(self.written, self.own_roots)
        self.written.clear()
        self.own_roots.clear()
        self.deleted.clear()
        self.roots = ClusterRoots()
        # Last, with the window's other structures let go: freezing is where a run's memory peaks.
        self.frozen = self._freeze()
        self.run_index = RunIndex(complete=self.frozen is not None, crowded=self.run_index.crowded)

    def _freeze(self) -> FrozenKeys | None:
        """At the end of a window: the band keys of every window so far, when the run index has been the
        whole store (this run created the index and was its only writer), so that lookups need the store
        only to fetch the documents the keys name. None otherwise, or past `FROZEN_MAX_DOCS` documents."""
        ended = self.run_index
        if not ended.complete or (self.store.settles and not self.store.alone()):
            return None
        frozen = self.frozen or FrozenKeys()
        if frozen.docs + len(ended.docs) > FROZEN_MAX_DOCS:
            log.info("more than %d documents written: batches are looked up in the store from now on",
                     FROZEN_MAX_DOCS)
            return None
        frozen.add_index(ended)  # empties the ended run index: the merge does not hold its documents
        log.debug("band keys of %d documents frozen: %.1f MB", frozen.docs, frozen.nbytes / 2**20)
        return frozen

    def _not_alone(self) -> None:
        """Another writer wrote to the store: it now holds documents this run's index does not know, so
        every batch is looked up in the store from now on."""
        self.run_index.complete = False
        self.frozen = None

    def _abandon(self, state: _BatchState, exc: StoreError | OutputError,
                 items: Iterable[_Done] | None = None) -> None:
        """A labelled batch (or the ``items`` of one) that will not be written (the store or the dead-letter
        file failed on the batch before): its records count as failed, unconfirmed, like the rest of a batch
        the store stopped on."""
        self._enter(state)
        what = "not written, the store failed" if isinstance(exc, StoreError) else "not written, the run stopped"
        for d in items if items is not None else (d for d, _ in state.labelled):
            self._fail(d.record, "unconfirmed", f"{what}: {exc}", doc_id=d.id)
        with contextlib.suppress(OutputError):  # the file that failed may fail again
            self.dead.commit()

    def close(self) -> None:
        """Stop the writer thread (after the write it may be running)."""
        if self._writer is not None:
            self._writer.shutdown(wait=True)
        self.earlier.close()

    def _after_write(self, written: list[_Done]) -> list[_Done]:
        """Settle, refresh for a service, advance the checkpoint."""
        batch = self.cur.batch
        if self.store.settles and self.opts.on_duplicate != "index" and written and not self.store.alone():
            self._not_alone()
            written = self._settle(written)
        elif not self.remember:  # a service's article is searchable when the call returns
            self.store.refresh()
        self._advance_checkpoint(batch)
        if not self.remember:  # a service: nothing of this batch is needed for the next
            self.run_index = RunIndex()
            self.written.clear()
            self.own_roots.clear()
            self.deleted.clear()
        return written

    def finish(self) -> None:
        """After the last batch: mark the last file done and make everything written searchable (so
        `similar` or `dups` run right after ingest do not miss documents waiting for a periodic refresh)."""
        if self.ckpt is not None:
            if self.last_source is not None:
                self.ckpt.finish(self.last_source)
            self.ckpt.save()
        self.store.refresh()
        if self.summary.replaced:
            log.warning("%d stored documents got a new text under the same id (the first: %s); their clusters "
                        "were labelled again", self.summary.replaced, self.summary.replaced_ids[0])
        self.summary.crowded_keys = self.run_index.most_crowded()
        if self.summary.crowded_keys:
            key, n = self.summary.crowded_keys[0]
            log.warning("%d band keys are each held by more than %d documents of this run (the most: %s, %d "
                        "documents): only the first %d of each were compared", len(self.run_index.crowded),
                        MAX_PER_KEY, key, n, MAX_PER_KEY)

    # -- accounting ---------------------------------------------------------------------------------
    def _fail(self, at: Record | Rejected, kind: str, reason: str, *, doc_id: str | None = None,
              excerpt: str | None = None) -> None:
        """Count one record as failed and dead-letter it."""
        self.summary.failed += 1
        self.fates[id(at)] = ("failed", reason)
        self.dead.write(source=at.source, location=at.location, kind=kind, id=doc_id, reason=reason,
                        excerpt=excerpt)

    def _skip(self, item: _Done, reason: str, *, listed: bool = True) -> None:
        """Count one record as skipped and dead-letter it; ``listed``: name it in ``skipped_ids``."""
        self.summary.skipped += 1
        self.fates[id(item.record)] = ("skipped", reason)
        if listed and len(self.summary.skipped_ids) < SUMMARY_IDS:
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
    def _accept(self, batch: Batch, results: Fingerprinted) -> list[_Done]:
        """Count what was read; rejected records fail here, the rest pair up with their fingerprints."""
        items: list[_Done] = []
        it = zip(results.fingerprints(), results.sha1s, results.dedup_json or repeat(None), strict=False)
        for rec in batch:
            self.summary.read += 1
            if isinstance(rec, Rejected):
                self._fail(rec, "rejected", rec.reason, excerpt=rec.excerpt)
                continue
            fp, sha1, dedup_json = next(it)
            clash = _field_clash(rec)
            if clash is not None:
                self._fail(rec, "rejected", clash, doc_id=rec.id)
                continue
            self.summary.bytes += len(rec.text.encode("utf-8", "surrogatepass"))
            items.append(_Done(rec, fp, sha1, _doc_id(rec, sha1), dedup_json))
        return items

    def _lookup(self, items: list[_Done]) -> list[list[StoredDoc]]:
        """The stored candidates of each record: one batched band lookup, and the stored document under the
        same id (``index`` mode: only that one, whose labels an idempotent re-ingest keeps). An index this
        run created holds nothing this run did not write: what is not in the run index is among the
        documents its frozen keys name (a repeated id is found by `_label`)."""
        if not items or self.run_index.complete:
            return self._frozen_candidates(items)
        try:
            # The stored document under each id, whatever its text (a new text finds no band key of the old).
            have = self.store.get([d.id for d in items])
            if self.opts.on_duplicate == "index":
                return [[have[d.id]] if d.id in have else [] for d in items]
            found = self.store.lookup([probe_for(d.fp, self.config) for d in items], limit=LOOKUP_LIMIT)
            return [cands if d.id not in have or any(c.id == d.id for c in cands) else [*cands, have[d.id]]
                    for d, cands in zip(items, found, strict=True)]
        except StoreError as exc:
            self._fail_unconfirmed(items, exc, "not written, the store failed")
            raise

    def _frozen_candidates(self, items: list[_Done]) -> list[list[StoredDoc]]:
        """The documents of earlier windows sharing a band key with each record, as the store holds them
        (their labels may have moved since): one fetch for the batch."""
        if self.frozen is None or not self.frozen.docs or self.opts.on_duplicate == "index":
            return [[] for _ in items]
        named = self.frozen.lookup([lookup_keys(d.fp, self.config) for d in items], per_record=LOOKUP_LIMIT)
        try:
            docs = self.store.get(sorted({i for ids in named for i in ids}))
        except StoreError as exc:
            self._fail_unconfirmed(items, exc, "not written, the store failed")
            raise
        return [[docs[i] for i in ids if i in docs] for ids in named]

    def _label(self, items: list[_Done], stored: list[list[StoredDoc]]) -> list[tuple[_Done, _Labels]]:
        """Decide each record's fate: a repeat within this run (skipped or failed), a near-duplicate to
        skip, or a document to write with its labels."""
        labelled: list[tuple[_Done, _Labels]] = []
        earlier = self.earlier.get([d.id for d in items])
        for d, found in zip(items, stored, strict=True):
            first_sha1 = self.written.get(d.id) or earlier.get(d.id)
            if first_sha1 is not None:
                self._repeat(d, first_sha1)
                continue
            self.written[d.id] = d.sha1
            labels = self._labels_of(d, found)
            if labels.skip_for is not None:
                self.summary.duplicates += 1
                self._skip(d, f"near-duplicate of {labels.skip_for}")
                continue
            if labels.root[1] != d.id:
                self.summary.duplicates += 1
            else:
                self.own_roots.add(d.id)
            if labels.replaces is not None:
                self.summary.replaced += 1
                if len(self.summary.replaced_ids) < SUMMARY_IDS:
                    self.summary.replaced_ids.append(d.id)
                self.cur.replaced[d.id] = (labels.replaces, labels.root)
            labelled.append((d, labels))
            self.clusters[id(d.record)] = (d.id, labels.root)
            if self.opts.on_duplicate != "index":  # the run index serves labelling only
                self.run_index.add(_as_stored(d, labels.seq, labels.root), d.fp.bands + d.fp.lsh)
        return labelled

    def _new_docs(self, labelled: list[tuple[_Done, _Labels]]) -> list[tuple[NewDoc, _Done]]:
        """The documents to write. Their clusters are read only now, when the batch is sent: a later record
        (of this batch, or of the next, labelled while the one before was written) or settling the batch
        before may have joined a record's cluster to another."""
        return [(self._new_doc(d, labels.seq, self.roots.find(labels.root)), d) for d, labels in labelled]

    def _new_doc(self, d: _Done, seq: int, root: Root) -> NewDoc:
        dup_of = root[1] if root[1] != d.id and self.opts.on_duplicate != "index" else None
        return NewDoc(d.id, d.fp, _source_fields(d.record), d.sha1, root[1], dup_of, seq=seq, cluster_seq=root[0],
                      dedup_json=d.dedup_json)

    def _repeat(self, d: _Done, first_sha1: str) -> None:
        """A second record with an id this run already wrote (with text ``first_sha1``)."""
        if first_sha1 == d.sha1:
            self._skip(d, "same id and text as a record already written in this run", listed=False)
        else:
            self._fail(d.record, "rejected", "duplicate id with different text (the first record with this id "
                       "was kept)", doc_id=d.id, excerpt=d.record.text[:200])

    def _labels_of(self, d: _Done, found: list[StoredDoc]) -> _Labels:
        """One record's write order and cluster.

        A document already stored with this content keeps its write order and labels (an idempotent
        re-ingest), joined with the clusters of its near-duplicates (a run killed after writing and before
        settling is mended by the next). A new document gets a write order after everything it was
        compared with, and joins the clusters of all its verified near-duplicates (``skip``: is skipped
        when it has any; ``index``: is its own cluster)."""
        self_doc = next((s for s in found if s.id == d.id), None)
        if self_doc is not None and not _same_text(self_doc, d):
            return self._labels_of_new_text(d, found, self_doc)
        same = self_doc is not None
        if self.opts.on_duplicate == "index":
            seq = self_doc.seq if same and self_doc.seq else WRITE_CLOCK.next()  # type: ignore[union-attr]
            return _Labels(seq, self_doc.root if same else (seq, d.id))  # type: ignore[union-attr]
        cands = self._candidates(d, found)
        roots = {self.roots.find(c.root) for c in self._matches(d.fp, d.id, cands)}
        if same and self_doc is not None:
            me = self.roots.find(self_doc.root)
            seq = self_doc.seq or WRITE_CLOCK.next()
            if self.opts.on_duplicate == "skip":  # stored already: settling decides whether it stays
                return _Labels(seq, me)
        else:
            seq = WRITE_CLOCK.next(after=max((c.seq for c in cands), default=0))
            me = (seq, d.id)
            if roots and self.opts.on_duplicate == "skip":
                return _Labels(seq, me, skip_for=min(roots)[1])
        if len(roots - {me}) > (0 if same else 1):  # clusters already stored that this record joins
            self.cur.joins.append(roots | {me})
        return _Labels(seq, self._join(roots | {me}))

    def _labels_of_new_text(self, d: _Done, found: list[StoredDoc], old: StoredDoc) -> _Labels:
        """A new text under an id already stored: labelled as a new document, apart from the cluster the
        old text was in (whose label names the old text; `_relabel_replaced` labels that one again after the
        write). ``skip``: a new text that duplicates another document is skipped, the old one stays."""
        self.roots.forget({d.id})
        cands = self._candidates(d, found)
        seq = WRITE_CLOCK.next(after=max((c.seq for c in cands), default=0))
        me = (seq, d.id)
        if self.opts.on_duplicate == "index":
            return _Labels(seq, me, replaces=old.root)
        roots = {r for r in (self.roots.find(c.root) for c in self._matches(d.fp, d.id, cands)) if r[1] != d.id}
        if roots and self.opts.on_duplicate == "skip":
            return _Labels(seq, me, skip_for=f"{min(roots)[1]} (the document stored under this id keeps its text)")
        if len(roots) > 1:
            self.cur.joins.append(roots | {me})
        return _Labels(seq, self._join(roots | {me}), replaces=old.root)

    def _relabel_replaced(self) -> None:
        """Label again the clusters that texts replaced in this batch were in, and the clusters the new texts
        joined: their members form one cluster per set still joined by near-duplicate pairs, each
        represented by its earliest member (the old text's pairs are gone)."""
        replaced, self.cur.replaced = self.cur.replaced, {}
        if not replaced or self.opts.on_duplicate == "index":
            return
        if self.store.settles:
            self.store.refresh()
        ids = {r[1] for old, new in replaced.values() for r in (old, self.roots.find(new))} | set(replaced)
        members = self.store.members(sorted(ids))
        if len(members) > MAX_RELABEL:
            log.warning("%d documents share clusters with texts replaced under the same id: more than %d, not "
                        "labelled again (run 'dups' with cluster labels to do it)", len(members), MAX_RELABEL)
            return
        labels: dict[str, Root] = {}
        for group in _connected(members, lambda a: self._matches(a, a.id, members)):
            root = min((m.seq, m.id) for m in group)
            labels.update((m.id, root) for m in group if m.root != root or m.duplicate_of != _dup_of(m.id, root))
        self.roots.forget({m.id for m in members})
        if labels:
            self.summary.relabelled += self.store.relabel(labels)

    def _join(self, roots: set[Root]) -> Root:
        """Join clusters in this run's view; a record of this run that represented a cluster and now joins
        an earlier one becomes a near-duplicate."""
        top, moved = self.roots.union(roots)
        for r in moved:
            if r[1] in self.own_roots:
                self.own_roots.discard(r[1])
                self.summary.duplicates += 1
            elif self.earlier.take_root(r[1]):
                self.summary.duplicates += 1
        return top

    def _candidates(self, d: _Done, found: list[StoredDoc]) -> list[StoredDoc]:
        """The stored candidates and this run's documents sharing a key with ``d``; the store's copy of a
        document wins (its labels may have moved since this run wrote it)."""
        seen = {c.id for c in found}
        extra = [c for c in self.run_index.lookup(lookup_keys(d.fp, self.config)) if c.id not in seen]
        return [c for c in list(found) + extra if c.id not in self.deleted]

    def _write(self, to_write: list[tuple[NewDoc, _Done]]) -> list[_Done]:
        """Write one batch and count each document's outcome; a document the store rejects fails. Returns
        the records written."""
        return self._account(to_write, *_collect(self.store, [new for new, _ in to_write]))

    def _account(self, to_write: list[tuple[NewDoc, _Done]], results: list[WriteResult],
                 error: StoreError | None) -> list[_Done]:
        """Count each written document's outcome; those the store never confirmed (``error``) fail."""
        where = {new.id: d for new, d in to_write}
        written: list[_Done] = []
        for res in results:
            d = where.pop(res.id)
            if not res.ok:
                self._fail(d.record, "rejected", f"rejected by the store: {res.error}", doc_id=res.id,
                           excerpt=d.record.text[:200])
                continue
            self.summary.indexed += 1
            self.fates[id(d.record)] = ("indexed", None)
            if res.created:
                self.summary.created += 1
                self.cur.created.add(d.id)
            else:
                self.summary.updated += 1
            written.append(d)
        if error is not None:
            self._fail_unconfirmed(where.values(), error, "not confirmed by the store")
            raise error
        return written

    def _join_clusters(self, written: list[_Done]) -> None:
        """Join in the store the clusters this batch's records joined (stored members move to the
        earlier representative)."""
        if self.cur.joins:
            joins, self.cur.joins = self.cur.joins, []
            try:
                self.summary.relabelled += self.store.merge_clusters(joins)
            except StoreError:
                self.dead.commit()  # the batch is counted: its dead letters go with it
                raise

    def _settle(self, written: list[_Done]) -> list[_Done]:
        """Settle the labels of a batch after writing it, for a store whose other writers' documents show
        up late (Elasticsearch).

        Two writers that write near-duplicates at the same time may each miss the other's document in the
        lookup before writing. Each writer therefore refreshes, looks its written batch up again, and joins
        the clusters it now finds (``skip``: deletes the later document of a pair). For any two documents,
        the writer whose lookup ran last sees both: its own document was visible before that lookup, and
        the other became visible before it, or else the other writer's lookup ran after both were visible.
        So every pair is settled by someone. Representatives are fixed by the write order stored in the
        documents, not by who settles first, and the store moves documents only with conditional updates
        (`Store.merge_clusters`), so the writers agree whatever the timing. Returns the records still
        stored."""
        try:
            self.store.refresh()
            found = self.store.lookup([probe_for(d.fp, self.config) for d in written], limit=LOOKUP_LIMIT)
            if self.opts.on_duplicate == "skip":
                return self._settle_skips(written, found)
            for d, cands in zip(written, found, strict=True):
                me = next((c for c in cands if c.id == d.id), None)
                if me is None:  # an empty text (no keys), or deleted since
                    continue
                roots = {self.roots.find(me.root)} | {self.roots.find(c.root) for c in self._matches(d.fp, d.id, cands)}
                if len(roots) > 1:
                    self.cur.joins.append(roots)
                    self._join(roots)
            self._join_clusters(written)
        except StoreError:
            self.dead.commit()  # the batch is counted: its dead letters go with it
            raise
        return written

    def _settle_skips(self, written: list[_Done], found: list[list[StoredDoc]]) -> list[_Done]:
        """``skip`` after writing: of two near-duplicates written at the same time, the later (by write
        order) is deleted again: this run's own counts as skipped, another writer's as removed."""
        own: dict[str, tuple[_Done, StoredDoc, StoredDoc]] = {}
        other: dict[str, tuple[StoredDoc, StoredDoc]] = {}
        mine = {d.id for d in written}
        for d, cands in zip(written, found, strict=True):
            me = next((c for c in cands if c.id == d.id), None)
            if me is None:
                continue
            for m in self._matches(d.fp, d.id, cands):
                if (m.seq, m.id) < (me.seq, me.id):
                    own.setdefault(d.id, (d, me, m))
                elif m.id not in mine:
                    other.setdefault(m.id, (m, me))
        other = {k: v for k, v in other.items() if v[1].id not in own}  # a deleted document keeps nothing
        gone = set(self.store.delete_if_unchanged([me for _, me, _ in own.values()] +
                                                  [m for m, _ in other.values()]))
        self.deleted |= gone
        for doc_id, (d, _me, m) in own.items():
            if doc_id in gone:
                self._unwrite(d, f"near-duplicate of {m.id}, written at the same time by another writer "
                                 "(deleted again)")
        for doc_id, (_m, me) in other.items():
            if doc_id in gone:
                self.summary.removed += 1
                self.dead.write(source="", location="", kind="removed", id=doc_id,
                                reason=f"near-duplicate of {me.id}, written at the same time by another writer "
                                       "(deleted again)")
        return [d for d in written if d.id not in gone]

    def _matches(self, sketch: Sketch, own_id: str, cands: list[StoredDoc]) -> list[StoredDoc]:
        """The candidates that are near-duplicates of a text by the rule (what `esdedup.match.lookup.verify` keeps,
        without ranking them: labelling joins them all)."""
        if sketch.empty:
            return []
        docs = [c for c in cands if not c.empty and c.id != own_id]
        if not docs:
            return []
        return [docs[i] for i in np.flatnonzero(measure(sketch, docs, self.config).decide(self.t)).tolist()]

    def _unwrite(self, d: _Done, reason: str) -> None:
        """A record counted as written was deleted again: count it as skipped instead."""
        self.summary.indexed -= 1
        if d.id in self.cur.created:
            self.summary.created -= 1
        else:
            self.summary.updated -= 1
        self.summary.duplicates += 1
        self._skip(d, reason)

    def _advance_checkpoint(self, batch: Batch) -> None:
        """Everything in ``batch`` is accounted for: move the checkpoint past it. Its dead letters go to
        disk first (a resumed run does not read these records again)."""
        self.dead.commit()
        if self.ckpt is None:
            return
        for item in batch:
            if self.last_source is not None and item.source != self.last_source:
                self.ckpt.finish(self.last_source)
            self.last_source = item.source
            if item.offset is not None:
                self.ckpt.advance(item.source, item.offset + 1)
        self.ckpt.save()


#: Documents `_Run._relabel_replaced` labels again at most (it compares every pair of them).
MAX_RELABEL = 2000


def _same_text(stored: StoredDoc, d: _Done) -> bool:
    """The stored document under ``d``'s id has ``d``'s text (its SimHash, where the store kept no SHA-1)."""
    if stored.content_sha1 is not None:
        return stored.content_sha1 == d.sha1
    return stored.simhash == d.fp.simhash


def _dup_of(doc_id: str, root: Root) -> str | None:
    return None if root[1] == doc_id else root[1]


def _connected(docs: list[StoredDoc], matches: Callable[[StoredDoc], list[StoredDoc]]) -> list[list[StoredDoc]]:
    """``docs`` grouped by the near-duplicate pairs among them (``matches(a)``: the docs paired with a)."""
    sets = UnionFind[str](d.id for d in docs)
    for a in docs:
        for b in matches(a):
            sets.union(a.id, b.id)
    groups: dict[str, list[StoredDoc]] = {}
    for d in docs:
        groups.setdefault(sets.find(d.id), []).append(d)
    return list(groups.values())


def _as_stored(d: _Done, seq: int, root: Root) -> StoredDoc:
    """A record of this run as the run index keeps it."""
    fp = d.fp
    return StoredDoc(d.id, fp.simhash, fp.vector, fp.empty, fp.length, fp.chars, root[1],
                     root[1] if root[1] != d.id else None, minhash=fp.minhash, shingles=fp.shingles, seq=seq,
                     cluster_seq=root[0])


def _open(store: Store, config: FingerprintConfig | None) -> OpenResult:
    """Open ``store`` with ``config``; without one, with the store's own config, or the default config
    when the store does not exist yet. A store that other writers may be filling is refreshed once: what
    they wrote before this writer started is then found by its lookups (what they write later, `_settle`
    finds)."""
    try:
        opened = store.open(config, create=config is not None)
    except IndexNotFound:
        if config is not None:
            raise
        opened = store.open(FingerprintConfig(), create=True)
    if store.settles and not opened.created:
        store.refresh()
    return opened



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
    check_inputs(paths)  # a mistyped path fails here, before the store (or an empty index) is opened
    ckpt_lock = lock_checkpoint(opts.checkpoint)
    dead: DeadLetters | None = None
    try:
        # The files this run writes are checked before the store is opened (or created).
        dead = DeadLetters(opts.dead_letter, fresh=not opts.resume)
        ckpt = open_checkpoint(opts.checkpoint, resume=opts.resume)
        opened = _open(store, config)
        t = resolve_thresholds(opts.thresholds, opened.config)
        t.check_band_guarantee(opened.config)
        summary = IngestSummary(dead_letter=str(opts.dead_letter) if opts.dead_letter else None)
        summary.resumed_files = sum(1 for f in ckpt.files.values() if f.get("done")) if opts.resume else 0
        run = _Run(store, opened.config, t, opts, created=opened.created, summary=summary, checkpoint=ckpt,
                   dead=dead)
        return _run_ingest(paths, run, progress)
    finally:
        if dead is not None:
            dead.close()
        if ckpt_lock is not None:
            ckpt_lock.release()


def _run_ingest(paths: Sequence[str | Path], run: _Run,
                progress: Callable[[IngestSummary], None] | None) -> IngestSummary:
    started = time.monotonic()
    store, cfg, opts, summary, ckpt = run.store, run.config, run.opts, run.summary, run.ckpt
    assert ckpt is not None
    records = read_records(paths, format=opts.format, id_field=opts.id_field, text_field=opts.text_field,
                           title_field=opts.title_field, max_record_bytes=opts.max_record_bytes,
                           skip=ckpt.skip if opts.resume else None, skip_file=ckpt.done if opts.resume else None)
    # Documents for Elasticsearch leave the workers as JSON already (the embedded store keeps fingerprints).
    workers = Workers(cfg, opts.workers or (os.cpu_count() or 1), encode=store.takes_dedup_json)
    retried_before = store.retried
    stop = Stop()
    try:
        with stop.on_stop_signals():
            for batch, results in workers.in_order(_batches(records, opts.batch), stop):
                run.feed(batch, results)
                if progress:
                    summary.seconds = time.monotonic() - started
                    progress(summary)
                if stop.asked:
                    break
            run.drain()
            if stop.asked:
                summary.unwritten = workers.unwritten()
                workers.close(terminate=True)
                store.refresh()
                raise Terminated(f"stopped by {stop.asked}: read {summary.read} = indexed {summary.indexed} + "
                                 f"skipped {summary.skipped} + failed {summary.failed}; {summary.unwritten} more "
                                 "records read were not written (a resumed run reads them again); the worker "
                                 "processes were stopped", summary=summary, signal_name=stop.asked)
            run.finish()
    except (StoreError, OutputError) as exc:
        summary.error = str(exc)
    finally:
        run.close()
        workers.close(terminate=True)
        summary.retried += store.retried - retried_before
        summary.seconds = time.monotonic() - started
    return summary


@dataclass(frozen=True)
class Added:
    """What became of one article given to `Ingester.add`: ``status`` is ``"indexed"``, ``"skipped"``
    (a near-duplicate with ``on_duplicate="skip"``) or ``"failed"`` (with the ``reason``); an indexed
    article carries its cluster's representative (``cluster_id``, and ``duplicate_of`` when that is another
    document) as they stood when the call returned."""

    id: str | None
    status: str
    cluster_id: str | None = None
    duplicate_of: str | None = None
    reason: str | None = None


class Ingester:
    """Ingest articles one at a time (or a few at a time) from a long-running program, such as a crawler's
    callback: the store is opened (its mapping read once) and the `Fingerprinter` built once, here.

    Each call fingerprints in the calling thread, labels, writes and, on Elasticsearch, settles the labels
    with whatever other writers (other Ingesters, threads, processes or ``esdedup ingest`` runs) wrote at
    the same time, so the article is searchable and labelled when the call returns. One Ingester may be
    shared by threads (calls take turns); ``summary`` counts every call so far.

    >>> import tempfile
    >>> from esdedup import FingerprintConfig, open_store
    >>> ingester = Ingester(open_store("crawl", data_dir=tempfile.mkdtemp()), FingerprintConfig())
    >>> ingester.add("台湾居民明日起持台胞证可通关，无需另行申请签注，出入境手续更加便利。", id="a").status
    'indexed'
    >>> ingester.add("台湾居民明日起持台胞证可通关，无需另行申请签注，出入境手续更加便利！", id="b").duplicate_of
    'a'

    Raises ConfigError (bad options), ConfigMismatchError (``config`` differs from the index's) or
    StoreError here; `add` raises StoreError when the store fails (the article was then not written).
    """

    def __init__(self, store: Store, config: FingerprintConfig | None = None, *, on_duplicate: str = "label",
                 thresholds: Thresholds | ThresholdOverrides | None = None,
                 dead_letter: str | Path | None = None) -> None:
        opts = IngestOptions(on_duplicate=on_duplicate, thresholds=thresholds, dead_letter=dead_letter, workers=1)
        self.store = store
        self.config = _open(store, config).config
        t = resolve_thresholds(opts.thresholds, self.config)
        t.check_band_guarantee(self.config)
        self.summary = IngestSummary(dead_letter=str(dead_letter) if dead_letter else None)
        self._run = _Run(store, self.config, t, opts, created=False, summary=self.summary, checkpoint=None,
                         dead=DeadLetters(dead_letter), remember=False)
        self._fper = Fingerprinter(self.config)
        self._lock = threading.Lock()
        self._calls = 0

    def add(self, text: str, *, id: str | int | None = None, title: str | None = None, **fields: Any) -> Added:
        """Ingest one article (``fields``: url, source, timestamp, ... stored with it)."""
        return self.add_many([{**fields, "id": id, "title": title, "text": text}])[0]

    def add_many(self, docs: Iterable[Mapping[str, Any]]) -> list[Added]:
        """Ingest a few articles at once (one lookup and one write for all): mappings with ``text`` and
        optionally ``id``, ``title`` and other fields. Returns one `Added` per article, in order."""
        with self._lock:
            records = [self._record(d) for d in docs]
            results = fingerprint_with(self._fper, [r.text for r in records if isinstance(r, Record)])
            self._run.process(records, results)
            return [self._added(r) for r in records]

    def _record(self, doc: Mapping[str, Any]) -> Record | Rejected:
        self._calls += 1
        where = ("ingester", f"article {self._calls}")
        text, doc_id, title = doc.get("text"), doc.get("id"), doc.get("title")
        if not isinstance(text, str) or not text.strip():
            return Rejected(*where, f"text is {'empty' if isinstance(text, str) else type(text).__name__}")
        if doc_id is not None and (isinstance(doc_id, bool) or not isinstance(doc_id, (str, int))):
            return Rejected(*where, f"id is not a string or integer (got {type(doc_id).__name__})")
        if title is not None and not isinstance(title, str):
            return Rejected(*where, f"title is not a string (got {type(title).__name__})")
        fields = {k: v for k, v in doc.items() if k not in ("text", "id", "title")}
        return Record(id=None if doc_id is None else str(doc_id), text=text, title=title, fields=fields,
                      source=where[0], location=where[1], offset=0, encoding="utf-8")

    def _added(self, rec: Record | Rejected) -> Added:
        status, reason = self._run.fates.get(id(rec), ("failed", "not written"))
        labelled = self._run.clusters.get(id(rec))
        if status != "indexed" or labelled is None:
            return Added(rec.id if isinstance(rec, Record) else None, status, reason=reason)
        doc_id, root = labelled[0], self._run.roots.find(labelled[1])
        return Added(doc_id, status, root[1], root[1] if root[1] != doc_id else None)

    def close(self) -> None:
        """Write the dead letters held and release the store (the caller's client stays open)."""
        self._run.dead.close()
        self.store.close()


def settle_stored(store: Store, config: FingerprintConfig, thresholds: Thresholds,
                  docs: Sequence[tuple[str, int, Fingerprint]]) -> tuple[dict[str, Root], int]:
    """Settle documents that another program wrote, as ingest settles each batch it writes (`_Run._settle`):
    refresh, look each document up, join the clusters of its near-duplicates in the store (conditional
    updates). ``docs``: (id, seq, fingerprint) of stored documents. Returns each id's representative as this
    step found it, and the documents relabelled. `esdedup.ingest.label` labels pipeline-written documents with it."""
    summary = IngestSummary()
    run = _Run(store, config, thresholds, IngestOptions(), created=False, summary=summary, checkpoint=None,
               dead=DeadLetters(None), remember=False)
    run._settle([_Done(None, fp, "", doc_id) for doc_id, _, fp in docs])  # type: ignore[arg-type]
    return {doc_id: run.roots.find((seq, doc_id)) for doc_id, seq, _ in docs}, summary.relabelled


def ids_for_texts(texts: Sequence[str], config: FingerprintConfig) -> list[str]:
    """The ids ingest gives records without an id: SHA-1 of the normalised text."""
    return [content_sha1(normalize(x, t2s=config.t2s)) for x in texts]
