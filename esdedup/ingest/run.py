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
embedded store a lock makes each batch's lookup, labelling and write one step (a batch run writes it in
the background while it reads the next batch). On Elasticsearch, where a
document is found by other writers only after a refresh, each writer settles the labels of a batch after
writing it (`esdedup.ingest.settle`; how a run shares its store is chosen once, `esdedup.ingest.sharing`).
With ``skip``, the later document of a pair written at the same time is deleted again (skipped when it was
the writer's own, ``removed`` otherwise). `Ingester` (`esdedup.ingest.service`) takes one article at a time,
for a service.

This module holds the entry point over files: it opens the run's files and the store, feeds the batches the
worker pool (`esdedup.ingest.workers`) fingerprints to the run (`esdedup.ingest.driver`), and stops cleanly
on SIGTERM.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from esdedup.errors import OutputError, StoreError, Terminated, WorkerKilled
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.ingest.checkpoint import default_checkpoint, lock_checkpoint, open_checkpoint
from esdedup.ingest.deadletters import DeadLetters, default_dead_letter
from esdedup.ingest.documents import batches
from esdedup.ingest.driver import IngestRun, open_run
from esdedup.ingest.options import BY_THE_RUN, IngestOptions, IngestSummary
from esdedup.ingest.window import RUN_INDEX_MAX_DOCS
from esdedup.ingest.workers import Stop, Workers
from esdedup.readers import Record, Rejected, check_inputs, read_records
from esdedup.store.base import Capability, LabelledStore, require
from esdedup.util.collector import fewer_collections
from esdedup.util.fieldtypes import checked_args


@checked_args
def ingest(paths: Sequence[str | Path], store: LabelledStore, config: FingerprintConfig | None = None,
           options: IngestOptions | None = None,
           progress: Callable[[IngestSummary], None] | None = None, stop: Stop | None = None) -> IngestSummary:
    """Read, fingerprint, label and write every record under ``paths`` into ``store``.

    ``config`` None means: the store's config if it exists, else the default config.
    Returns the summary; raises ConfigMismatchError before writing anything when the store was built
    with another config. A store failure mid-run (server gone) ends the run: the summary carries the
    error, in-flight records count as failed (dead-lettered as unconfirmed), and a re-run completes it.
    Raises Unsupported for a store without `esdedup.store.base.ClusterLabels`.

    ``progress``: called with the summary once each batch is written and accounted for (and checkpointed).

    ``stop``: a `Stop` the caller holds (and may have given SIGTERM to, `Stop.handle`, before the call: a program
    that takes it from its first line on); asked before the run reads anything, the run reads nothing and
    raises `Terminated`. None: the run makes its own.
    """
    stop = stop or Stop()
    stop.refuse_if_asked()
    require(store, Capability.LABELS, "ingesting")
    opts = options or IngestOptions()
    check_inputs(paths)  # a mistyped path fails here, before the store (or an empty index) is opened
    checkpoint, dead_letter = named_files(opts, store, paths)
    ckpt_lock = lock_checkpoint(checkpoint)
    dead: DeadLetters | None = None
    try:
        # The files this run writes are checked before the store is opened (or created).
        dead = DeadLetters(dead_letter, fresh=not opts.resume, supersede=opts.resume)
        ckpt = open_checkpoint(checkpoint, resume=opts.resume)
        summary = IngestSummary(dead_letter=str(dead_letter) if dead_letter else None)
        # The window is read here, at the call, so that a program may set this module's RUN_INDEX_MAX_DOCS.
        run = open_run(store, config, opts, summary=summary, dead=dead, checkpoint=ckpt,
                       window_docs=RUN_INDEX_MAX_DOCS)
        summary.resumed_files = sum(1 for f in ckpt.files.values() if f.get("done")) if opts.resume else 0
        records = read_records(paths, format=opts.format, id_field=opts.id_field, text_field=opts.text_field,
                               title_field=opts.title_field, max_record_bytes=opts.max_record_bytes,
                               skip=ckpt.skip if opts.resume else None,
                               skip_file=ckpt.done if opts.resume else None)
        return _feed(records, run, progress, stop)
    finally:
        if dead is not None:
            dead.close()
        if ckpt_lock is not None:
            ckpt_lock.release()


def named_files(opts: IngestOptions, store: LabelledStore, paths: Sequence[str | Path]) -> tuple[str | Path | None,
                                                                                                 str | Path | None]:
    """The run's checkpoint and dead-letter file: as ``opts`` names them, or as the run names them where
    ``opts`` leaves it to the run (`BY_THE_RUN`: `default_checkpoint`, `default_dead_letter`)."""
    checkpoint = default_checkpoint(store, paths) if opts.checkpoint is BY_THE_RUN else opts.checkpoint
    dead_letter = default_dead_letter(store.name) if opts.dead_letter is BY_THE_RUN else opts.dead_letter
    return checkpoint, dead_letter


def _feed(records: Iterable[Record | Rejected], run: IngestRun, progress: Callable[[IngestSummary], None] | None,
          stop: Stop) -> IngestSummary:
    """Fingerprint ``records`` in the worker pool and feed the batches to ``run``, in input order, until the
    input ends, the store fails, SIGTERM asks the run to stop or a worker process dies."""
    started = time.monotonic()
    store, opts, summary = run.store, run.opts, run.summary
    workers = Workers(run.config, opts.workers or (os.cpu_count() or 1), encode=run.sharing.takes_json,
                      held=run.labeller.holds_run_keys, fingerprints=run.reads_fingerprints)
    retried_before = store.retried
    if progress is not None:
        def report() -> None:
            summary.seconds = time.monotonic() - started
            progress(summary)
        run.after_batch = report
    try:
        with stop.on_stop_signals(), fewer_collections():
            stop.refuse_if_asked(summary)  # asked while the run opened its files and the store
            killed: WorkerKilled | None = None
            try:
                for batch, results in workers.in_order(batches(records, opts.batch), stop):
                    run.feed(batch, results)
                    if stop.asked:
                        break
            except WorkerKilled as exc:  # the run ends as a stopped one does: what was written is kept
                killed = exc
            run.drain()
            if stop.asked or killed:
                summary.unwritten = workers.unwritten()
                workers.close()
                store.refresh()
                counts = (f"read {summary.read} = indexed {summary.indexed} + skipped {summary.skipped} + failed "
                          f"{summary.failed}; {summary.unwritten} more records read were not written (a resumed run "
                          "reads them again)")
                if killed:
                    raise WorkerKilled(f"{killed}; {counts}; the other worker processes were stopped", pid=killed.pid,
                                       signum=killed.signum, exitcode=killed.exitcode, summary=summary)
                raise Terminated(f"stopped by {stop.asked}: {counts}; the worker processes were stopped",
                                 summary=summary, signal_name=stop.asked or "SIGTERM")
            run.finish()
    except (StoreError, OutputError) as exc:
        summary.error = str(exc)
        if run.ledger.dead.broken:  # the summary names no file that does not hold the run's dead letters
            summary.dead_letter = None
    finally:
        run.close()
        workers.close()
        summary.retried += store.retried - retried_before
        summary.seconds = time.monotonic() - started
    return summary
