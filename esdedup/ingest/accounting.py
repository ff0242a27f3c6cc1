"""The run's books: every record read ends in exactly one of indexed, skipped or failed (`Ledger`, which
counts it in the summary and dead-letters it), and the checkpoint moves past a batch only once all of it is
accounted for (`CheckpointProgress`)."""
from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import groupby
from operator import attrgetter

from esdedup.errors import OutputError, StoreError
from esdedup.ingest.checkpoint import Checkpoint
from esdedup.ingest.deadletters import DeadLetters
from esdedup.ingest.documents import FingerprintedRecord, Labels
from esdedup.ingest.options import SUMMARY_IDS, IngestSummary
from esdedup.ingest.workers import Batch
from esdedup.readers import Record, Rejected
from esdedup.store.base import AllCreated, NewDoc, Root, WriteResult


@dataclass(eq=False)
class BatchState:
    """What one batch carries from its labelling to the end of its write: with writes overlapped
    (`esdedup.ingest.writer`), the next batch is labelled while this one is written, and each keeps its own."""

    batch: Batch
    #: What became of each record (by object id) and the cluster each one joined, where the ledger keeps them
    #: (`Ledger.keeps_fates`).
    fates: dict[int, tuple[str, str | None]] = field(default_factory=dict)
    clusters: dict[int, tuple[str, Root]] = field(default_factory=dict)
    #: Clusters the batch joined that the store must join too (`Store.merge_clusters`).
    joins: list[set[Root]] = field(default_factory=list)
    #: Ids given a new text in this batch -> (the old text's cluster, the new text's).
    replaced: dict[str, tuple[Root, Root]] = field(default_factory=dict)
    #: Ids of the batch that were new to the store.
    created: set[str] = field(default_factory=set)
    #: The batch's dead letters, committed with its checkpoint.
    lines: list[str | tuple[str, str]] = field(default_factory=list)
    labelled: list[tuple[FingerprintedRecord, Labels]] = field(default_factory=list)


class Ledger:
    """Counts and dead letters: every record that does not end up written goes through `fail` or `skip`,
    so ``read == indexed + skipped + failed`` holds by construction. ``cur`` is the batch they go to.
    ``keeps_fates``: each record's fate and cluster are kept in its batch (`BatchState.fates`, ``clusters``)
    for a caller that answers record by record (a service); a batch run counts them only."""

    def __init__(self, summary: IngestSummary, dead: DeadLetters, *, keeps_fates: bool = False) -> None:
        self.summary = summary
        self.dead = dead
        self.keeps_fates = keeps_fates
        self.cur = BatchState([])

    def _keep_fate(self, at: Record | Rejected, fate: str, reason: str | None) -> None:
        if self.keeps_fates:
            self.cur.fates[id(at)] = (fate, reason)

    def enter(self, state: BatchState) -> BatchState:
        """Make ``state`` the batch that counts, labels and dead letters go to."""
        self.cur = state
        self.dead.use(state.lines)
        return state

    def fail(self, at: Record | Rejected, kind: str, reason: str, *, doc_id: str | None = None,
             excerpt: str | None = None) -> None:
        """Count one record as failed and dead-letter it."""
        self.summary.failed += 1
        self._keep_fate(at, "failed", reason)
        self.dead.accounted(at.source, at.location)
        self.dead.write(source=at.source, location=at.location, kind=kind, id=doc_id, reason=reason,
                        excerpt=excerpt)

    def unchanged(self, item: FingerprintedRecord) -> None:
        """Count one record as indexed without a write: the store holds it already, as it is."""
        self.summary.indexed += 1
        self.summary.unchanged += 1
        self._keep_fate(item.record, "indexed", None)

    def skip(self, item: FingerprintedRecord, reason: str, *, listed: bool = True) -> None:
        """Count one record as skipped and dead-letter it; ``listed``: name it in ``skipped_ids``."""
        self.summary.skipped += 1
        self._keep_fate(item.record, "skipped", reason)
        self.dead.accounted(item.record.source, item.record.location)
        if listed and len(self.summary.skipped_ids) < SUMMARY_IDS:
            self.summary.skipped_ids.append(item.id)
        self.dead.write(source=item.record.source, location=item.record.location, kind="skipped", id=item.id,
                        reason=reason)

    def fail_unconfirmed(self, items: Iterable[FingerprintedRecord], exc: StoreError, what: str) -> None:
        """The store went away: the records it never confirmed count as failed (a re-run or a resumed run
        sends them again), and their dead letters go with this batch's counts."""
        for d in items:
            self.fail(d.record, "unconfirmed", f"{what}: {exc}", doc_id=d.id)
        self.dead.commit()

    def abandon(self, state: BatchState, exc: StoreError | OutputError,
                items: Iterable[FingerprintedRecord] | None = None) -> None:
        """A labelled batch (or the ``items`` of one) that will not be written (the store or the dead-letter
        file failed on the batch before): its records count as failed, unconfirmed, like the rest of a batch
        the store stopped on."""
        self.enter(state)
        what = "not written, the store failed" if isinstance(exc, StoreError) else "not written, the run stopped"
        for d in items if items is not None else (d for d, _ in state.labelled):
            self.fail(d.record, "unconfirmed", f"{what}: {exc}", doc_id=d.id)
        with contextlib.suppress(OutputError):  # the file that failed may fail again
            self.dead.commit()

    def count_writes(self, sent: Sequence[tuple[NewDoc, FingerprintedRecord]], results: Sequence[WriteResult],
                error: StoreError | None) -> list[FingerprintedRecord]:
        """Count each written document's outcome (a document the store rejects fails; those it never
        confirmed, ``error``, fail as unconfirmed). Returns the records written."""
        if (error is None and isinstance(results, AllCreated)
                and results.ids == [new.id for new, _ in sent]):
            return self._count_created([d for _, d in sent])
        where = {new.id: d for new, d in sent}
        written: list[FingerprintedRecord] = []
        for res in results:
            d = where.pop(res.id)
            if not res.ok:
                self.fail(d.record, "rejected", f"rejected by the store: {res.error}", doc_id=res.id,
                          excerpt=d.record.text[:200])
                continue
            self.summary.indexed += 1
            self._keep_fate(d.record, "indexed", None)
            self.dead.accounted(d.record.source, d.record.location)
            if res.created:
                self.summary.created += 1
                self.cur.created.add(d.id)
            else:
                self.summary.updated += 1
            written.append(d)
        if error is not None:
            self.fail_unconfirmed(where.values(), error, "not confirmed by the store")
            raise error
        return written

    def _count_created(self, written: list[FingerprintedRecord]) -> list[FingerprintedRecord]:
        """`count_writes` of a batch the store created whole: what it counts of each document, a batch at once."""
        self.summary.indexed += len(written)
        self.summary.created += len(written)
        self.cur.created.update(d.id for d in written)
        if self.keeps_fates or self.dead.has_unconfirmed:
            for d in written:
                self._keep_fate(d.record, "indexed", None)
                self.dead.accounted(d.record.source, d.record.location)
        return written

    def unwrite(self, d: FingerprintedRecord, reason: str) -> None:
        """A record counted as written was deleted again: count it as skipped instead."""
        self.summary.indexed -= 1
        if d.id in self.cur.created:
            self.summary.created -= 1
        else:
            self.summary.updated -= 1
        self.summary.duplicates += 1
        self.skip(d, reason)

    def removed(self, doc_id: str, reason: str) -> None:
        """Another writer's document, deleted again by this run."""
        self.summary.removed += 1
        self.dead.write(source="", location="", kind="removed", id=doc_id, reason=reason)


_source = attrgetter("source")


class CheckpointProgress:
    """Where the run's checkpoint stands: each file's offset past the records accounted for, and the files
    finished (a file is finished when the next one starts, or when the run ends)."""

    def __init__(self, ckpt: Checkpoint | None) -> None:
        self.ckpt = ckpt
        self.last_source: str | None = None

    def advance(self, batch: Batch) -> None:
        """Everything in ``batch`` is accounted for: move the checkpoint past it."""
        if self.ckpt is None:
            return
        # A run of records of one file moves its offset to the largest one's (`Checkpoint.advance` keeps
        # the largest): one call a run of the batch, not one a record.
        for source, items in groupby(batch, key=_source):
            if self.last_source is not None and source != self.last_source:
                self.ckpt.finish(self.last_source)
            self.last_source = source
            offset = max((item.offset for item in items if item.offset is not None), default=None)
            if offset is not None:
                self.ckpt.advance(source, offset + 1)
        self.ckpt.save()

    def finish(self) -> None:
        """After the last batch: the last file is done."""
        if self.ckpt is None:
            return
        if self.last_source is not None:
            self.ckpt.finish(self.last_source)
        self.ckpt.save()
