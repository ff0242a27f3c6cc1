"""The overlapped writer: one batch is written in a thread of its own while the next one is labelled.

Only for a store whose client may be used from two threads (Elasticsearch's may; the embedded store's SQLite
connection belongs to one), and only in a batch run that does not skip near-duplicates (a later batch must not
be skipped for a document that settling the earlier one deletes): `esdedup.ingest.driver` decides.
"""
from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from esdedup.errors import StoreError
from esdedup.ingest.accounting import BatchState
from esdedup.ingest.documents import FingerprintedRecord
from esdedup.store.base import LabelledStore, NewDoc, WriteResult

#: What a write gives back: the results the store gave, and the error that stopped it (the rest unconfirmed).
Outcome = tuple[list[WriteResult], StoreError | None]

#: How long the thread that labels lets go of the GIL once it has started a write: the write thread encodes its
#: first request now, while the store has nothing to do, instead of waiting for the GIL behind the next batch's
#: labelling, a switch interval at a time (the labelling has a whole write's time to itself).
WRITE_HEAD_START_S = 0.002


def write_all(store: LabelledStore, docs: list[NewDoc]) -> Outcome:
    """Write ``docs``; the results the store gave, and the error that stopped it (the rest unconfirmed)."""
    out: list[WriteResult] = []
    try:
        out.extend(store.write(docs))
    except StoreError as exc:
        return out, exc
    return out, None


@dataclass(eq=False)
class Sending:
    """A batch whose documents are being written."""

    state: BatchState
    sent: list[tuple[NewDoc, FingerprintedRecord]]
    write: Future[Outcome]


class OverlappedWriter:
    """At most one batch written at a time, in one thread."""

    def __init__(self, store: LabelledStore) -> None:
        self.store = store
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="esdedup-write")
        self._sending: Sending | None = None

    def start(self, state: BatchState, sent: list[tuple[NewDoc, FingerprintedRecord]]) -> None:
        """Start writing ``sent`` (the batch before was taken with `take`)."""
        assert self._sending is None
        self._sending = Sending(state, sent, self._pool.submit(write_all, self.store, [new for new, _ in sent]))
        time.sleep(WRITE_HEAD_START_S)

    def take(self) -> tuple[Sending, Outcome] | None:
        """Wait for the batch being written, if any: it, and what its write gave back."""
        sending, self._sending = self._sending, None
        if sending is None:
            return None
        return sending, sending.write.result()

    def close(self) -> None:
        """Stop the thread (after the write it may be running)."""
        self._pool.shutdown(wait=True)
