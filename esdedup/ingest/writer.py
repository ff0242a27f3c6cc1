"""The overlapped writer: one batch is written while the run goes on with the next one.

A store that writes in the background (`esdedup.store.base.BackgroundWrites`: the embedded store, whose
write is SQLite's with the GIL released) writes a batch while the run reads the next one; the store's write
lock is held from the batch's labelling until its write is accounted for (`esdedup.ingest.driver`). Otherwise
the batch is written in a thread of its own while the next one is labelled: for a store whose client may be used
from two threads (Elasticsearch's), only in a batch run that does not skip near-duplicates (a later batch
must not be skipped for a document that settling the earlier one deletes).
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from esdedup.ingest.accounting import BatchState
from esdedup.ingest.documents import FingerprintedRecord
from esdedup.store.base import (
    LabelledStore,
    NewDoc,
    Outcome,
    PendingWrite,
    write_outcome,
    writes_in_background,
)

#: How long the thread that labels lets go of the GIL once it has started a write in a thread: the write thread
#: encodes its first request now, while the store has nothing to do, instead of waiting for the GIL behind the
#: next batch's labelling, a switch interval at a time (the labelling has a whole write's time to itself).
WRITE_HEAD_START_S = 0.002


@dataclass(eq=False)
class Sending:
    """A batch whose documents are being written."""

    state: BatchState
    sent: list[tuple[NewDoc, FingerprintedRecord]]
    write: PendingWrite


class OverlappedWriter:
    """At most one batch written at a time: by the store in the background, or in one thread."""

    def __init__(self, store: LabelledStore) -> None:
        self.store = store
        #: The store, where it writes a batch in the background itself (else a thread here does).
        self.background = store if writes_in_background(store) else None
        self._pool = None if self.background else ThreadPoolExecutor(1, thread_name_prefix="esdedup-write")
        self._sending: Sending | None = None

    def start(self, state: BatchState, sent: list[tuple[NewDoc, FingerprintedRecord]]) -> None:
        """Start writing ``sent`` (the batch before was taken with `take`)."""
        assert self._sending is None
        docs = [new for new, _ in sent]
        if self._pool is None:
            assert self.background is not None
            write: PendingWrite = self.background.start_write(docs)
        else:
            write = self._pool.submit(write_outcome, self.store, docs)
            time.sleep(WRITE_HEAD_START_S)
        self._sending = Sending(state, sent, write)

    def take(self) -> tuple[Sending, Outcome] | None:
        """Wait for the batch being written, if any: it, and what its write gave back."""
        sending, self._sending = self._sending, None
        if sending is None:
            return None
        return sending, sending.write.result()

    def close(self) -> None:
        """Wait for the write under way, if any (its outcome is dropped), and stop the thread."""
        sending, self._sending = self._sending, None
        if sending is not None and self.background is not None:
            sending.write.result()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
