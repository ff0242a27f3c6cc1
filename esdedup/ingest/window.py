"""The run's memory window: what a batch run remembers of the documents it wrote (the run index, the ids and
texts, the cluster merges), and when it lets them go.

A run's memory must not grow with its input: when the window holds `RUN_INDEX_MAX_DOCS` documents, the run
makes everything written searchable and goes on with an empty run index (`MemoryWindow.roll`). A run that
created its index and has been its only writer keeps the band keys of the documents it let go (frozen,
`esdedup.ingest.runindex.FrozenKeys`) and asks the store only for the documents these name; any other run
looks every batch up in the store too.
"""
from __future__ import annotations

import logging
from collections.abc import Callable

from esdedup.ingest.runindex import ClusterRoots, EarlierWrites, FrozenKeys, KeyLists, RunIndex
from esdedup.store.base import Root

log = logging.getLogger(__name__)

#: Documents a batch run keeps in memory (its run index, about 2.5 KB each, and what it wrote), plus one batch:
#: past them the window rolls, so that a run's memory stays bounded (about 1 GB at most) whatever its input.
RUN_INDEX_MAX_DOCS = 200_000
#: Documents of earlier windows whose band keys a run keeps frozen (about 250 bytes each: 0.5 GB at most);
#: past them the run looks its batches up in the store instead.
FROZEN_MAX_DOCS = 2_000_000


class MemoryWindow:
    """The documents of the current window (run index, ids with their texts, this run's representatives,
    the ids deleted again, the cluster merges) and what the earlier windows left behind (their ids in
    `EarlierWrites`, their band keys frozen while the run writes its index alone).

    ``remember`` False (a service): nothing is kept from one batch to the next (`forget_batch`), and
    the window never rolls."""

    def __init__(self, *, created: bool, remember: bool = True, max_docs: int = RUN_INDEX_MAX_DOCS) -> None:
        self.remember = remember
        self.max_docs = max_docs
        self.run_index = RunIndex(complete=created and remember)
        #: The band keys of the run's earlier windows, while the run index and they are the whole store.
        self.frozen: FrozenKeys | None = None
        self.roots = ClusterRoots()
        #: id -> content SHA-1 of what this run wrote (or skipped) under it in this window; what it wrote
        #: before, in `earlier`.
        self.written: dict[str, str] = {}
        self.earlier = EarlierWrites()
        #: Ids deleted again by settling (``skip``): no longer candidates.
        self.deleted: set[str] = set()
        #: Records of this run written as their cluster's representative (for the count of duplicates).
        self.own_roots: set[str] = set()

    def full(self) -> bool:
        """The window holds as many documents as it may: roll it before the next batch."""
        return self.remember and len(self.written) >= self.max_docs

    def roll(self, *, others_may_write: Callable[[], bool]) -> None:
        """Let the window's documents go (the store holds them, searchable, with the cluster merges of this
        run in its labels: `roots` starts afresh too) and start an empty run index; the ids written so far go
        to `earlier`. ``others_may_write``: another writer may have written the store, so its band keys
        cannot stand for it (`freeze`)."""
        self.earlier.add(self.written, self.own_roots)
        self.written.clear()
        self.own_roots.clear()
        self.deleted.clear()
        self.roots = ClusterRoots()
        # Last, with the window's other structures let go: freezing is where a run's memory peaks.
        self.frozen = self._freeze(others_may_write)
        self.run_index = RunIndex(complete=self.frozen is not None, crowded=self.run_index.crowded)

    def _freeze(self, others_may_write: Callable[[], bool]) -> FrozenKeys | None:
        """At the end of a window: the band keys of every window so far, when the run index has been the
        whole store (this run created the index and was its only writer), so that lookups need the store
        only to fetch the documents the keys name. None otherwise, or past `FROZEN_MAX_DOCS` documents."""
        ended = self.run_index
        if not ended.complete or others_may_write():
            return None
        frozen = self.frozen or FrozenKeys()
        if frozen.docs + len(ended.docs) > FROZEN_MAX_DOCS:
            log.info("more than %d documents written: batches are looked up in the store from now on",
                     FROZEN_MAX_DOCS)
            return None
        frozen.add_index(ended)  # empties the ended run index: the merge does not hold its documents
        log.debug("band keys of %d documents frozen: %.1f MB", frozen.docs, frozen.nbytes / 2**20)
        return frozen

    def not_alone(self) -> None:
        """Another writer wrote to the store: it now holds documents this window does not know, so every
        batch is looked up in the store from now on."""
        self.run_index.complete = False
        self.frozen = None

    def frozen_ids(self, key_lists: KeyLists, per_record: int) -> list[list[str]] | None:
        """The ids of earlier windows' documents sharing a band key with each record's keys; None when no
        keys are frozen."""
        if self.frozen is None or not self.frozen.docs:
            return None
        return self.frozen.lookup(key_lists, per_record=per_record)

    def join(self, roots: set[Root]) -> tuple[Root, int]:
        """Join clusters in this run's view: their representative, and how many of this run's records that
        represented a cluster now join an earlier one (they become near-duplicates)."""
        top, moved = self.roots.union(roots)
        demoted = 0
        for r in moved:
            if r[1] in self.own_roots:
                self.own_roots.discard(r[1])
                demoted += 1
            # An id of this window is none of the earlier windows' (a record under such an id is a repeat):
            # their file is asked only for the others (the record being labelled is always one of this window).
            elif r[1] not in self.written and self.earlier.take_root(r[1]):
                demoted += 1
        return top, demoted

    def join_new(self, me: Root, top: Root) -> Root:
        """`join` of a new document's own cluster ``me`` (its id written in this window, of a write order after
        every one it was compared with) and one representative ``top`` earlier than it: ``me`` joins ``top``,
        and none of this run's representatives is demoted (``me`` was not one yet). Most near-duplicates are
        labelled so, without the sets `join` makes."""
        assert top < me and me[1] in self.written and me[1] not in self.own_roots
        self.roots.attach(me, top)
        return top

    def forget_batch(self) -> None:
        """A service: nothing of this batch is needed for the next (it finds them in the store, with the
        cluster merges written in their labels), whether the batch was written or failed."""
        if self.remember:
            return
        self.run_index = RunIndex()
        self.roots = ClusterRoots()
        self.written.clear()
        self.own_roots.clear()
        self.deleted.clear()

    def close(self) -> None:
        self.earlier.close()
