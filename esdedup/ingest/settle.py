"""Settling: joining the clusters of documents written at the same time by writers that could not see each
other's documents yet (Elasticsearch finds another client's document only after a refresh).

Two writers that write near-duplicates at the same time may each miss the other's document in the lookup
before writing. Each writer therefore refreshes, looks its written batch up again, and joins the clusters it
now finds (``skip``: deletes the later document of a pair). For any two documents, the writer whose lookup
ran last sees both: its own document was visible before that lookup, and the other became visible before
it, or else the other writer's lookup ran after both were visible. So every pair is settled by someone.
Representatives are fixed by the write order stored in the documents, not by who settles first, and the
store moves documents only with conditional updates (`ClusterLabels.merge_clusters`, `ClusterLabels.delete_if_unchanged`),
so the writers agree whatever the timing.

`Settler` is the one settling step: ingest runs it after each batch it writes (`esdedup.ingest.driver`), and
`settle_stored` runs it on documents another program wrote (`esdedup.ingest.label`).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprint
from esdedup.ingest.labels import NearDuplicates
from esdedup.ingest.options import LOOKUP_LIMIT
from esdedup.ingest.runindex import ClusterRoots
from esdedup.match.lookup import probe_for, with_exact_copies
from esdedup.match.thresholds import Thresholds
from esdedup.store.base import LabelledStore, Root, StoredDoc


class ClusterView(Protocol):
    """The settling writer's view of the clusters: its representatives and the merges it made."""

    def find(self, root: Root) -> Root: ...

    def join(self, roots: set[Root]) -> Root: ...


@dataclass
class Settled:
    """What settling a batch changed in the store."""

    #: Stored documents whose labels moved to an earlier representative.
    relabelled: int = 0
    #: ``skip``: the batch's documents deleted again -> the earlier near-duplicate each one repeats.
    deleted: dict[str, str] = field(default_factory=dict)
    #: ``skip``: other writers' documents deleted again -> the document of the batch each one repeats.
    removed: dict[str, str] = field(default_factory=dict)

    @property
    def gone(self) -> set[str]:
        return set(self.deleted) | set(self.removed)


class Settler:
    """Settles written documents with what the store holds now: refresh, look them up again, join the
    clusters found (or, ``skip``, delete the later document of each pair)."""

    def __init__(self, store: LabelledStore, config: FingerprintConfig, rule: NearDuplicates, clusters: ClusterView) -> None:
        self.store, self.config, self.rule, self.clusters = store, config, rule, clusters

    def settle(self, docs: Sequence[tuple[str, Fingerprint]], *, skip: bool = False) -> Settled:
        """Settle ``docs`` (id and fingerprint of each written document)."""
        self.store.refresh()
        found = self.store.lookup([probe_for(fp, self.config) for _, fp in docs], limit=LOOKUP_LIMIT)
        # A text without words has no keys: its exact copies are found by the content SHA-1 it was stored with.
        empty = self.store.get([doc_id for doc_id, fp in docs if fp.empty]) if any(fp.empty for _, fp in docs) else {}
        sha1s = [empty[doc_id].content_sha1 if doc_id in empty else None for doc_id, _ in docs]
        found = with_exact_copies(self.store, [fp for _, fp in docs], sha1s, found, limit=LOOKUP_LIMIT)
        if skip:
            return self._delete_later(docs, found, sha1s)
        joins: list[set[Root]] = []
        for (doc_id, fp), sha1, cands in zip(docs, sha1s, found, strict=True):
            me = next((c for c in cands if c.id == doc_id), None)
            if me is None:  # deleted since
                continue
            roots = {self.clusters.find(me.root)} | {self.clusters.find(c.root)
                                                     for c in self.rule.among(fp, doc_id, cands, sha1)}
            if len(roots) > 1:
                joins.append(roots)
                self.clusters.join(roots)
        return Settled(relabelled=self.store.merge_clusters(joins) if joins else 0)

    def _delete_later(self, docs: Sequence[tuple[str, Fingerprint]], found: list[list[StoredDoc]],
                      sha1s: Sequence[str | None]) -> Settled:
        """``skip``: of two near-duplicates written at the same time, the later (by write order) is deleted
        again, whichever writer wrote it."""
        own: dict[str, tuple[StoredDoc, StoredDoc]] = {}
        other: dict[str, tuple[StoredDoc, StoredDoc]] = {}
        mine = {doc_id for doc_id, _ in docs}
        for (doc_id, fp), sha1, cands in zip(docs, sha1s, found, strict=True):
            me = next((c for c in cands if c.id == doc_id), None)
            if me is None:
                continue
            for m in self.rule.among(fp, doc_id, cands, sha1):
                if (m.seq, m.id) < (me.seq, me.id):
                    own.setdefault(doc_id, (me, m))
                elif m.id not in mine:
                    other.setdefault(m.id, (m, me))
        other = {k: v for k, v in other.items() if v[1].id not in own}  # a deleted document keeps nothing
        gone = set(self.store.delete_if_unchanged([me for me, _ in own.values()] + [m for m, _ in other.values()]))
        return Settled(deleted={i: m.id for i, (_, m) in own.items() if i in gone},
                       removed={i: me.id for i, (_, me) in other.items() if i in gone})


def settle_stored(store: LabelledStore, config: FingerprintConfig, thresholds: Thresholds,
                  docs: Sequence[tuple[str, int, Fingerprint]]) -> tuple[dict[str, Root], int]:
    """Settle documents that another program wrote, as ingest settles each batch it writes: refresh, look
    each document up, join the clusters of its near-duplicates in the store (conditional updates).
    ``docs``: (id, seq, fingerprint) of stored documents. Returns each id's representative as this step
    found it, and the documents relabelled."""
    roots = ClusterRoots()
    settled = Settler(store, config, NearDuplicates(config, thresholds), roots).settle(
        [(doc_id, fp) for doc_id, _, fp in docs])
    return {doc_id: roots.find((seq, doc_id)) for doc_id, seq, _ in docs}, settled.relabelled
