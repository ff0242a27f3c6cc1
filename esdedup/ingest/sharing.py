"""How a run shares its store with other writers, decided once when the run opens the store.

The embedded store serialises its writers: one lock makes each batch's lookup, labelling and write one step
(held while the batch is written in the background and the next one read), and what any writer wrote is found
at once (`LockStepWrites`). Elasticsearch has no lock across clients, and
finds another client's document only after a refresh, so each writer settles the labels of a batch after
writing it (`SettledWrites`, with `esdedup.ingest.settle`). Why not one lock for all writers there: a lock
document would serialise every writer on one shard, and a writer that dies holding it would stop all the
others; settling costs a refresh and a second lookup per batch, and only when the index counted writes other
than the writer's own (`ClusterLabels.alone`).
"""
from __future__ import annotations

from collections.abc import Sequence

from esdedup.errors import IndexNotFound
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.store.base import LabelledStore, OpenResult


class StoreSharing:
    """How a run works with other writers of its store; `sharing_for` picks the one the store needs."""

    #: The store's client may be used from a second thread while the next batch is labelled
    #: (`esdedup.ingest.writer`).
    overlaps_writes = False

    def __init__(self, store: LabelledStore) -> None:
        self.store = store
        #: Documents travel to the store as JSON encoded in the worker processes (`NewDoc.dedup_json`).
        self.takes_json = store.takes_dedup_json

    def after_open(self, created: bool) -> None:
        """What the store needs once it is opened, before the first lookup."""

    def make_visible(self) -> None:
        """What the store needs before it shows what was just written."""

    def others_may_write(self) -> bool:
        """Another writer may have written the store since the run started."""
        return False

    def settles(self, on_duplicate: str, written: Sequence[object]) -> bool:
        """The batch just ``written`` is to be settled (`esdedup.ingest.settle`)."""
        return False


class LockStepWrites(StoreSharing):
    """A store whose lock makes each batch one step and whose writes are found at once: nothing to refresh,
    nothing to settle."""


class SettledWrites(StoreSharing):
    """A store whose other writers' documents show up late: refresh before reading what was written, and
    settle each batch written while others write too."""

    overlaps_writes = True

    def after_open(self, created: bool) -> None:
        """A store that other writers may be filling is refreshed once: what they wrote before this writer
        started is then found by its lookups (what they write later, settling finds)."""
        if not created:
            self.store.refresh()

    def make_visible(self) -> None:
        self.store.refresh()

    def others_may_write(self) -> bool:
        return not self.store.alone()

    def settles(self, on_duplicate: str, written: Sequence[object]) -> bool:
        """A written batch is settled unless every document is its own cluster (``index``) or the index
        counted no writes but this writer's."""
        return on_duplicate != "index" and bool(written) and not self.store.alone()


def sharing_for(store: LabelledStore) -> StoreSharing:
    return SettledWrites(store) if store.settles else LockStepWrites(store)


def open_for_ingest(store: LabelledStore, config: FingerprintConfig | None) -> tuple[OpenResult, StoreSharing]:
    """Open ``store`` with ``config``; without one, with the store's own config, or the default config
    when the store does not exist yet. Returns it with the way the run shares it."""
    try:
        opened = store.open(config, create=config is not None)
    except IndexNotFound:
        if config is not None:
            raise
        opened = store.open(FingerprintConfig(), create=True)
    sharing = sharing_for(store)
    sharing.after_open(opened.created)
    return opened, sharing
