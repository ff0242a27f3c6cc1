"""Labels for documents that other programs wrote with their dedup fields: through the esdedup ingest pipeline
(`esdedup.ingest.pipeline`), from Logstash, Beats or an application's own ``_bulk``.

Such documents carry every ``dedup`` field but no cluster label: the node's processor cannot look anything up.
`label_new` labels those that have none yet (so a run labels what is new since the last one, and a second
run finds nothing to do) with the mechanism the concurrent writers of `esdedup.ingest.run` use, not a rule of its
own: a document's write order is its ``seq`` (the processor stamps, in nanoseconds, when the document reached
the node: one ``_bulk`` keeps its order, as an ingest of the same file would), the representative of a
cluster is its earliest member by ``seq`` then id, near-duplicates are found by the band lookup and decided
by `esdedup.match.rule`, and clusters are joined in the store with conditional updates
(`esdedup.ingest.settle`, the step every ingest runs after writing a batch).

Per batch of unlabelled documents: (1) a document without ``seq`` (written through a pipeline made before the
processor kept write order) gets one, in id order, from ingest's clock; (2) settle: the clusters of its
near-duplicates now visible are joined, the earliest root wins; (3) its labels are written, conditional on the
version read (a document a client changed since is left to the next run); (4) settle again, for what other
writers changed between (2) and (3), when the index counted indexing operations other than the run's own
(alone, a batch costs one lookup per document, as in ingest). A run killed before (3) leaves the documents unlabelled (the next run
labels them); killed between (3) and (4), it leaves labels that are right unless another writer joined the
same clusters in that moment (`esdedup dups --write-clusters` mends any index).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from esdedup.errors import NeedsElasticsearch
from esdedup.es.hits import FINGERPRINT_FIELDS
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprint
from esdedup.fingerprint.minhash import lsh_keys
from esdedup.ingest.clock import WRITE_CLOCK
from esdedup.ingest.settle import settle_stored
from esdedup.match.thresholds import ThresholdOverrides, Thresholds, lookup_thresholds
from esdedup.schema import CLUSTER_ID, CONTENT_SHA1, DEDUP, SIMHASH, band_fields
from esdedup.store.base import ElasticsearchBackedStore, Root, Store, StoredDoc, elasticsearch_backed
from esdedup.store.partition import Partition, sha1_bounds
from esdedup.util.fieldtypes import checked_args

#: Unlabelled documents read and labelled per step.
BATCH = 1000
#: A document that has dedup fields and no cluster label.
UNLABELLED = {"bool": {"filter": [{"exists": {"field": SIMHASH}}],
                       "must_not": [{"exists": {"field": CLUSTER_ID}}]}}


@dataclass
class LabelSummary:
    """Counts of one `label_new` run: ``found == labelled + changed``."""

    #: Unlabelled documents found when the run started.
    found: int = 0
    #: ... given their cluster labels by this run.
    labelled: int = 0
    #: ... that had no write order (``seq``) and got one here.
    ordered: int = 0
    #: ... changed or deleted by another program since they were read: left as they are (the next run labels
    #: them if they still need it).
    changed: int = 0
    #: Of the labelled, those whose representative is another document (near-duplicates).
    duplicates: int = 0
    #: Documents labelled before this run that moved to an earlier representative (clusters joined).
    relabelled: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@checked_args
def label_new(store: Store, *, thresholds: Thresholds | ThresholdOverrides | None = None, batch: int = BATCH,
              progress: Callable[[LabelSummary], None] | None = None,
              partition: Partition | None = None) -> LabelSummary:
    """Label the documents of an Elasticsearch index that carry dedup fields but no cluster label yet.

    Safe while other writers (``esdedup ingest``, `esdedup.ingest.service.Ingester`, other label runs, clients writing
    through the pipeline) write the same index; idempotent (a second run labels nothing). Documents written
    after the run started are left to the next run.

    ``partition`` I/P: only the unlabelled documents of its share (`esdedup.store.partition.sha1_bounds`,
    read by the node as one range of the content SHA-1s). The P partitions, at once or one after another,
    leave the labels one run leaves: each document is labelled by one of them, and they join clusters as
    concurrent label runs do (the representative fixed by the stored write order, not by who labels first).

    >>> label_new(open_store("news", connection=...)).labelled  # doctest: +SKIP

    Raises ConfigError (not an Elasticsearch store, bad thresholds), IndexNotFound, StoreError (the server
    failed; what was labelled stays labelled, a new run continues).
    """
    if not elasticsearch_backed(store):
        raise NeedsElasticsearch("labelling documents written by other programs runs on Elasticsearch; the "
                                 "embedded store "
                          "labels every document as it is ingested")
    started = time.monotonic()
    config = store.open(None, create=False).config
    t = lookup_thresholds(thresholds, config)
    summary = LabelSummary()
    store.refresh()
    for hits in _unlabelled(store, batch, partition):
        docs = sorted((_Unlabelled.of(store.stored_doc(h), h, config) for h in hits),
                      key=lambda d: (d.doc.seq or 2**63, d.doc.id))
        summary.found += len(docs)
        _label_batch(store, config, t, docs, summary)
        if progress:
            summary.seconds = time.monotonic() - started
            progress(summary)
    summary.seconds = time.monotonic() - started
    return summary


@dataclass
class _Unlabelled:
    """An unlabelled document as read: its stored fields (with the version read) and its fingerprint."""

    doc: StoredDoc
    fp: Fingerprint

    @classmethod
    def of(cls, doc: StoredDoc, hit: Mapping[str, Any], config: FingerprintConfig) -> _Unlabelled:
        fields = hit.get("fields", {})
        bands = [v[0] for v in (fields.get(f"{DEDUP}.{name}") for name in band_fields(config)) if v]
        # The LSH keys follow from the stored signature, in band order (the one multi-valued field's doc
        # values come back sorted).
        lsh = lsh_keys(doc.minhash, config.minhash_bands, config.minhash_rows) if doc.minhash is not None else []
        fp = Fingerprint(doc.simhash, bands, doc.vector, {}, doc.tokens, doc.empty, lsh, doc.minhash,
                         doc.chars, config.bits, doc.shingles)
        return cls(doc, fp)


def _unlabelled(store: ElasticsearchBackedStore, batch: int,
                partition: Partition | None) -> Iterator[list[dict[str, Any]]]:
    """The unlabelled documents (of ``partition``'s share) as the index held them when the run started (a point
    in time), in pages."""
    fields = FINGERPRINT_FIELDS + [f"{DEDUP}.{n}" for n in band_fields(store.config)]
    return store.hit_pages("finding unlabelled documents", query=unlabelled_query(partition), batch=batch,
                           docvalue_fields=fields, versions=True, keep_alive="5m")


def unlabelled_query(partition: Partition | None) -> dict[str, Any]:
    """`UNLABELLED`, of ``partition``'s share only: its range of content SHA-1s; the first partition also
    takes the documents stored without one, so that every document is in exactly one share."""
    if partition is None or partition.whole:
        return UNLABELLED
    lo, hi = sha1_bounds(partition)
    share: dict[str, Any] = {"range": {CONTENT_SHA1: {k: v for k, v in (("gte", lo), ("lt", hi)) if v is not None}}}
    if lo is None:
        share = {"bool": {"should": [share, {"bool": {"must_not": [{"exists": {"field": CONTENT_SHA1}}]}}],
                          "minimum_should_match": 1}}
    return {"bool": {"filter": [UNLABELLED, share]}}


def _label_batch(store: ElasticsearchBackedStore, config: FingerprintConfig, t: Thresholds, docs: list[_Unlabelled],
                 summary: LabelSummary) -> None:
    """Steps (1)-(4) of the module docstring for one batch."""
    before = store.indexed_total()
    unordered = [d for d in docs if not d.doc.seq]
    ordered: dict[str, StoredDoc] = {}
    if unordered:
        ordered = store.update_dedup_if_unchanged({d.doc.id: (d.doc, {"seq": WRITE_CLOCK.next()}) for d in unordered})
        summary.ordered += len(ordered)
        summary.changed += len(unordered) - len(ordered)
        docs = [d if d.doc.seq else _Unlabelled(ordered[d.doc.id], d.fp) for d in docs
                if d.doc.seq or d.doc.id in ordered]
    roots, relabelled = settle_stored(store, config, t, [(d.doc.id, d.doc.seq, d.fp) for d in docs])
    labels = {d.doc.id: (d.doc, _labels(d.doc.id, roots[d.doc.id])) for d in docs}
    written = store.update_dedup_if_unchanged(labels)
    summary.labelled += len(written)
    summary.changed += len(labels) - len(written)
    summary.duplicates += sum(1 for i in written if roots[i][1] != i)
    # Step (4) only when another program wrote meanwhile (as ingest settles only when not alone): every write of
    # this batch was one indexing operation, so more operations than these were someone else's.
    after = store.indexed_total()
    again = 0
    if before is None or after is None or after - before > len(ordered) + relabelled + len(written):
        _, again = settle_stored(store, config, t, [(d.doc.id, d.doc.seq, d.fp) for d in docs if d.doc.id in written])
    summary.relabelled += relabelled + again


def _labels(doc_id: str, root: Root) -> dict[str, Any]:
    return {"cluster_id": root[1], "cluster_seq": root[0], "duplicate_of": None if root[1] == doc_id else root[1]}
