"""The ingest run as a driver over its parts: every batch goes through the same steps (account for what
was read, look up, label, write, settle, advance the checkpoint), each done by the part whose job it is:
the books (`esdedup.ingest.accounting`), the memory window (`esdedup.ingest.window`), labelling
(`esdedup.ingest.labels`), the overlapped writer (`esdedup.ingest.writer`) and settling
(`esdedup.ingest.settle`), with the way the store is shared chosen once (`esdedup.ingest.sharing`).
"""
from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from itertools import count, repeat

from esdedup.errors import OutputError, StoreError
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.ingest.accounting import BatchState, CheckpointProgress, Ledger
from esdedup.ingest.checkpoint import Checkpoint
from esdedup.ingest.deadletters import DeadLetters
from esdedup.ingest.documents import FingerprintedRecord, doc_id, field_clash
from esdedup.ingest.labels import Labeller
from esdedup.ingest.options import IngestOptions, IngestSummary
from esdedup.ingest.runindex import MAX_PER_KEY
from esdedup.ingest.settle import Settler
from esdedup.ingest.sharing import StoreSharing, open_for_ingest
from esdedup.ingest.window import RUN_INDEX_MAX_DOCS, MemoryWindow
from esdedup.ingest.workers import Batch, Fingerprinted
from esdedup.ingest.writer import OverlappedWriter
from esdedup.match.thresholds import lookup_thresholds
from esdedup.readers import Rejected
from esdedup.store.base import LabelledStore, NewDoc, Outcome, write_outcome, writes_in_background

log = logging.getLogger(__name__)

#: Why a document of this run that settling deleted again was skipped, and why another writer's was removed.
_DELETED_AGAIN = "near-duplicate of {}, written at the same time by another writer (deleted again)"


class IngestRun:
    """One ingest run (a batch run over files, or the calls of one `esdedup.ingest.service.Ingester`): the
    driver that takes each batch through its steps. `process` does them in turn; `feed` overlaps a batch's
    write with the reading of the next one (a store that writes in the background) or with its labelling
    (Elasticsearch), where the store allows it (`drain` waits for the write)."""

    def __init__(self, store: LabelledStore, config: FingerprintConfig, opts: IngestOptions, *, sharing: StoreSharing,
                 window: MemoryWindow, ledger: Ledger, checkpoint: Checkpoint | None) -> None:
        self.store, self.config, self.opts, self.sharing = store, config, opts, sharing
        self.window = window
        self.ledger = ledger
        self.progress = CheckpointProgress(checkpoint)
        thresholds = lookup_thresholds(opts.thresholds, config)
        self.labeller = Labeller(store, config, thresholds, opts.on_duplicate, window, ledger)
        self.settler = Settler(store, config, self.labeller.rule, self.labeller)
        overlap = window.remember and (writes_in_background(store) or (sharing.overlaps_writes
                                                                         and opts.on_duplicate != "skip"))
        self.writer = OverlappedWriter(store) if overlap else None
        #: The store's write lock, held from a batch's labelling until its write in the background is
        #: accounted for (`_label_and_start`).
        self._held: contextlib.ExitStack | None = None
        #: Called once each batch is accounted for (its write, joins, dead letters, checkpoint).
        self.after_batch: Callable[[], None] | None = None

    @property
    def summary(self) -> IngestSummary:
        return self.ledger.summary

    @property
    def reads_fingerprints(self) -> bool:
        """Whether the run reads its records' fingerprints: to label them (every mode but ``index``), or to
        write them to a store that encodes the ``dedup`` fields itself. Otherwise each record's SimHash and
        encoded fields are all it reads (`FingerprintedRecord.fingerprint` is None)."""
        return self.labeller.holds_run_keys or not self.sharing.takes_json

    # -- the driver ---------------------------------------------------------------------------------
    def process(self, batch: Batch, results: Fingerprinted) -> list[FingerprintedRecord]:
        """Take one batch through every step; returns the records written (and still stored)."""
        self._roll_window_if_full(batch, results)
        state = self.ledger.enter(BatchState(batch))
        items = self._accept(batch, results)
        with self.store.write_lock() as others_wrote:
            sent = self._label(state, items, others_wrote)
            written = self._account(sent, write_outcome(self.store, [new for new, _ in sent]))
        return self._after_write(written)

    def feed(self, batch: Batch, results: Fingerprinted) -> None:
        """Take one batch in. A store that writes in the background: account for the batch before (write
        results, joins, checkpoint; its write ran while this batch was read), then label this one and start
        writing it, holding the store's write lock from its labelling until it is accounted for. Other
        overlapped writes: label it while the batch before is written, then account for that one (with
        settling) and start writing this one. Else `process` it. Either way a batch is checkpointed only once
        it is written and accounted for."""
        if self.writer is None:
            self.process(batch, results)
            return
        self._roll_window_if_full(batch, results)
        if self.writer.background is not None:
            self.drain()
            self._label_and_start(batch, results)
            return
        try:
            state = self.ledger.enter(BatchState(batch))
            items = self._accept(batch, results)
            state.labelled = self.labeller.label(items)
        except StoreError:
            with contextlib.suppress(StoreError):
                self.drain()
            raise
        try:
            self.drain()
        except (StoreError, OutputError) as exc:
            self.ledger.abandon(state, exc)
            raise
        self.ledger.enter(state)
        self.writer.start(state, self.labeller.new_docs(state.labelled))

    def _label_and_start(self, batch: Batch, results: Fingerprinted) -> None:
        """Label ``batch`` under the store's write lock and start writing it in the background; the lock stays
        held until `drain` has accounted for it."""
        state = self.ledger.enter(BatchState(batch))
        items = self._accept(batch, results)
        with contextlib.ExitStack() as held:  # released here if labelling or the start fails
            sent = self._label(state, items, held.enter_context(self.store.write_lock()))
            assert self.writer is not None
            self.writer.start(state, sent)
            self._held = held.pop_all()

    def drain(self) -> None:
        """Wait for the batch being written, if any, and account for it."""
        taken = self.writer.take() if self.writer is not None else None
        if taken is None:
            return
        held, self._held = self._held, None
        sending, (results, error) = taken
        self.ledger.enter(sending.state)
        with held or self.store.write_lock():
            written = self._account(sending.sent, (results, error))
        self._after_write(written)

    def finish(self) -> None:
        """After the last batch: mark the last file done and make everything written searchable (so
        `similar` or `dups` run right after ingest do not miss documents waiting for a periodic refresh)."""
        self.progress.finish()
        self.store.refresh()
        summary = self.summary
        if summary.replaced:
            log.warning("%d stored documents got a new text under the same id (the first: %s); their clusters "
                        "were labelled again", summary.replaced, summary.replaced_ids[0])
        run_index = self.window.run_index
        summary.crowded_keys = run_index.most_crowded()
        if summary.crowded_keys:
            key, n = summary.crowded_keys[0]
            log.warning("%d band keys are each held by more than %d documents of this run (the most: %s, %d "
                        "documents): only the first %d of each were compared", len(run_index.crowded),
                        MAX_PER_KEY, key, n, MAX_PER_KEY)

    def close(self) -> None:
        """Stop the writer (after the write it may be making) and let the window go."""
        if self.writer is not None:
            self.writer.close()
        if self._held is not None:
            self._held.close()
            self._held = None
        self.window.close()

    # -- the steps ----------------------------------------------------------------------------------
    def _label(self, state: BatchState, items: list[FingerprintedRecord],
               others_wrote: bool) -> list[tuple[NewDoc, FingerprintedRecord]]:
        """Label a batch's records, under the store's write lock (``others_wrote``: what taking it said), into
        ``state``; the documents to write."""
        if others_wrote:
            self.window.not_alone()
        state.labelled = self.labeller.label(items)
        return self.labeller.new_docs(state.labelled)

    def _account(self, sent: list[tuple[NewDoc, FingerprintedRecord]],
                 outcome: Outcome) -> list[FingerprintedRecord]:
        """Count a batch's write, still under the store's write lock, and join the clusters it joined; the
        records written."""
        written = self.ledger.count_writes(sent, *outcome)
        self._join_clusters()
        self.labeller.relabel_replaced(self.sharing.make_visible)
        return written

    def _accept(self, batch: Batch, results: Fingerprinted) -> list[FingerprintedRecord]:
        """Count what was read; rejected records fail here, the rest pair up with their fingerprints."""
        items: list[FingerprintedRecord] = []
        summary = self.summary
        block = results.block() if results.has_fingerprints else None
        # A batch's block makes each record's fingerprint when labelling first reads it (most never do).
        fps = results.fingerprints() if results.has_fingerprints and block is None else repeat(None)
        held = results.held
        it = zip(fps, results.simhashes, results.sha1s, results.dedup_json or repeat(None), count(), strict=False)
        for rec in batch:
            summary.read += 1
            if isinstance(rec, Rejected):
                self.ledger.fail(rec, "rejected", rec.reason, excerpt=rec.excerpt)
                continue
            fp, simhash, sha1, dedup_json, row = next(it)
            clash = field_clash(rec)
            if clash is not None:
                self.ledger.fail(rec, "rejected", clash, doc_id=rec.id)
                continue
            summary.bytes += len(rec.text.encode("utf-8", "surrogatepass"))
            items.append(FingerprintedRecord(rec, fp, simhash, sha1, doc_id(rec, sha1), dedup_json, held, block, row))
        return items

    def _roll_window_if_full(self, batch: Batch, results: Fingerprinted) -> None:
        """Before labelling ``batch``: roll the memory window when it is full. When that fails (the store or
        the dead-letter file failed), ``batch`` counts as failed, unconfirmed."""
        if not self.window.full():
            return
        try:
            # Everything written so far is made searchable first: the batch being written, with its joins.
            self.drain()
            self.store.refresh()
            self.window.roll(others_may_write=self.sharing.others_may_write)
        except (StoreError, OutputError) as exc:
            state = self.ledger.enter(BatchState(batch))
            self.ledger.abandon(state, exc, self._accept(batch, results))
            raise

    def _join_clusters(self) -> None:
        """Join in the store the clusters this batch's records joined (stored members move to the
        earlier representative)."""
        cur = self.ledger.cur
        if not cur.joins:
            return
        joins, cur.joins = cur.joins, []
        try:
            self.summary.relabelled += self.store.merge_clusters(joins)
        except StoreError:
            self.ledger.dead.commit()  # the batch is counted: its dead letters go with it
            raise

    def _after_write(self, written: list[FingerprintedRecord]) -> list[FingerprintedRecord]:
        """Settle, refresh for a service, advance the checkpoint (the batch's dead letters first: a resumed
        run does not read these records again)."""
        batch = self.ledger.cur.batch
        if self.sharing.settles(self.opts.on_duplicate, written):
            self.window.not_alone()
            written = self._settle(written)
        elif not self.window.remember:  # a service's article is searchable when the call returns
            self.store.refresh()
        self.ledger.dead.commit()
        self.progress.advance(batch)
        self.window.forget_batch()
        if self.after_batch is not None:
            self.after_batch()
        return written

    def _settle(self, written: list[FingerprintedRecord]) -> list[FingerprintedRecord]:
        """Settle the labels of a written batch with what other writers wrote at the same time
        (`esdedup.ingest.settle`); returns the records still stored."""
        try:
            settled = self.settler.settle([(d.id, d.fp) for d in written], skip=self.opts.on_duplicate == "skip")
        except StoreError:
            self.ledger.dead.commit()  # the batch is counted: its dead letters go with it
            raise
        self.summary.relabelled += settled.relabelled
        gone = settled.gone
        self.window.deleted |= gone
        mine = {d.id: d for d in written}
        for own, earlier in settled.deleted.items():
            self.ledger.unwrite(mine[own], _DELETED_AGAIN.format(earlier))
        for other, kept in settled.removed.items():
            self.ledger.removed(other, _DELETED_AGAIN.format(kept))
        return [d for d in written if d.id not in gone]


def open_run(store: LabelledStore, config: FingerprintConfig | None, opts: IngestOptions, *, summary: IngestSummary,
             dead: DeadLetters, checkpoint: Checkpoint | None = None, remember: bool = True,
             window_docs: int = RUN_INDEX_MAX_DOCS) -> IngestRun:
    """Open ``store`` (with ``config``; None: the store's own, or the default config for a new store) and
    start a run on it. ``remember``: a batch run, which keeps a memory window of ``window_docs`` documents;
    a service keeps nothing from one call to the next."""
    opened, sharing = open_for_ingest(store, config)
    window = MemoryWindow(created=opened.created, remember=remember, max_docs=window_docs)
    return IngestRun(store, opened.config, opts, sharing=sharing, window=window,
                     ledger=Ledger(summary, dead, keeps_fates=not remember), checkpoint=checkpoint)
