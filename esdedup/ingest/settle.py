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
`settle_stored` runs it on documents another program wrote (`esdedup.ingest.label`). `join_stored` joins the
clusters that all-pairs search found connected (``dups --write-clusters``) with the same store operations.
"""
from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprint
from esdedup.ingest.labels import NearDuplicates
from esdedup.ingest.options import LOOKUP_LIMIT
from esdedup.ingest.runindex import ClusterRoots
from esdedup.match.lookup import probe_for, with_exact_copies
from esdedup.match.thresholds import Thresholds
from esdedup.store.base import LabelledStore, Root, Store, StoredDoc, elasticsearch_backed


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


#: Groups of documents `join_stored` hands `Store.merge_clusters` at a time (each call reads the roots of its
#: groups in one request and moves their members in a few).
JOIN_GROUPS = 1000
#: Documents `join_stored` reads in one `Store.get`.
JOIN_READ = 5000


def join_stored(store: Store, groups: Iterable[Collection[str]]) -> int:
    """Make each group of stored documents (ids: documents found connected by near-duplicate pairs, as
    ``dups`` finds them) one cluster, the way concurrent writers join clusters: its representative is the
    earliest root of the clusters its members are in (`Root`: write order, then id), and documents move only
    through `Store.merge_clusters` (on Elasticsearch conditional updates, in rounds until the roots stay put;
    on the embedded store under its write lock, so that no ingest batch looks up between the read of the
    labels and their change). A member without a cluster label (written by another program) is first labelled
    as a cluster of its own, conditional on the version read. Only labels that change are written; returns
    how many documents were written. Safe beside any number of writers: it only joins, as they do, and every
    writer that labels a document into a cluster this moves settles against it (`Settler`) or waits for it
    (the embedded store's lock)."""
    todo = [sorted(set(g)) for g in groups if len(set(g)) > 1]
    ids = sorted({i for g in todo for i in g})
    written = 0
    with store.write_lock():
        docs: dict[str, StoredDoc] = {}
        for start in range(0, len(ids), JOIN_READ):
            docs.update(store.get(ids[start:start + JOIN_READ]))
        written += _label_unlabelled(store, [d for d in docs.values() if d.cluster_id is None])
        joins: list[set[Root]] = []
        for g in todo:
            roots = {docs[i].root for i in g if i in docs}
            # A root that is itself labelled with another cluster (merged since its members were labelled)
            # leads there: joined too, so that no member is left pointing at a former representative.
            roots |= {docs[r[1]].root for r in roots if r[1] in docs}
            if len(roots) > 1:
                joins.append(roots)
        for start in range(0, len(joins), JOIN_GROUPS):
            written += store.merge_clusters(joins[start:start + JOIN_GROUPS])
    return written


def _label_unlabelled(store: Store, docs: Sequence[StoredDoc]) -> int:
    """Give documents without a cluster label their own cluster (themselves as representative), so that
    `Store.merge_clusters` finds them by their label; on Elasticsearch conditional on the version read (a
    document labelled since by another writer keeps its label, which the merge then follows)."""
    if not docs:
        return 0
    if elasticsearch_backed(store):
        return len(store.update_dedup_if_unchanged(
            {d.id: (d, {"cluster_id": d.id, "cluster_seq": d.seq, "duplicate_of": None}) for d in docs}))
    return store.relabel({d.id: (d.seq, d.id) for d in docs})
