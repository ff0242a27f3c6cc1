"""The Elasticsearch store: band keys as keyword fields, LSH keys as one long field, the TF vector (when the
config stores one) as a dense_vector, config in `_meta`.

`ElasticStore` is the `Store` (and `ElasticsearchBacked`) face of one index handle (`index.ElasticIndex`); its
parts live beside it: bulk writes with retries and the one bulk-update loop (`writes`), conditional label
updates and cluster merges (`labels`), the lookup planner (`lookup`), key aggregations (`keys`) and
point-in-time scans (`scans`).
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from esdedup.es.hits import FINGERPRINT_FIELDS
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.store.base import (
    Capability,
    ClusterSize,
    ClusterSummary,
    KeyBatch,
    NewDoc,
    OpenResult,
    Probe,
    Root,
    SearchPage,
    StoredDoc,
    TopKeys,
    WriteResult,
)
from esdedup.store.columns import SignatureColumns
from esdedup.store.elastic import browse, keys, lookup, scans
from esdedup.store.elastic import labels as labelling
from esdedup.store.elastic.index import PAGE, ElasticIndex
from esdedup.store.elastic.writes import Bulk
from esdedup.store.partition import Partition
from esdedup.util.fieldtypes import checked_args


class ElasticStore:
    """An Elasticsearch index as a `Store`.

    Args:
        client: an ``elasticsearch.Elasticsearch`` client (the caller owns it).
        name: the index name.
        shards / replicas / text_analyzer: used when the index is created (`esdedup.schema.index_settings`,
            `esdedup.schema.text_fields`).
        chunk_size / max_chunk_bytes: bulk chunking.
        max_retries / initial_backoff / max_backoff: bulk re-sends of documents rejected with 429 or 5xx
            (counted in ``retried``).
        display_url: the server as error messages name it (no credentials).
        secrets: strings to keep out of error messages (API key, password).
    """

    #: Every protocol of `Store`, and what only an index offers (`ElasticsearchBacked`).
    capabilities = frozenset({Capability.LABELS, Capability.KEY_SCANS, Capability.PARTITIONED_KEYS, Capability.BROWSING,
                              Capability.ELASTICSEARCH, Capability.COPY_COLUMNS, Capability.SIGNATURE_COLUMNS})
    #: Other writers' documents become visible only after a refresh: writers settle labels afterwards.
    settles = True
    #: Documents go out as JSON: ingest's workers encode the ``dedup`` fields (`NewDoc.dedup_json`).
    takes_dedup_json = True
    #: Documents one batched lookup search may return: a batch of probes whose keys match more is split, down
    #: to single probes, which the node then ranks one by one.
    lookup_page = PAGE

    def __init__(self, client: Any, name: str, *, shards: int = 1, replicas: int | None = None,
                 text_analyzer: str | None = None, chunk_size: int = 500, max_chunk_bytes: int = 10 * 2**20, max_retries: int = 8,
                 initial_backoff: float = 0.5, max_backoff: float = 30.0, display_url: str = "Elasticsearch",
                 secrets: Sequence[str | None] = (), request_timeout: float | None = None) -> None:
        self.index = ElasticIndex(client, name, shards=shards, replicas=replicas, text_analyzer=text_analyzer,
                                  display_url=display_url, secrets=secrets, request_timeout=request_timeout)
        self.bulk = Bulk(self.index, chunk_size=chunk_size, max_chunk_bytes=max_chunk_bytes,
                         max_retries=max_retries, initial_backoff=initial_backoff, max_backoff=max_backoff)
        #: What browsing read (`cluster_summary`, `browse.every_cluster`), each with the index's (indexing
        #: operations, documents) it was read at.
        self._browsed: dict[str, tuple[tuple[int, int] | None, Any]] = {}

    @property
    def client(self) -> Any:
        return self.index.client

    @property
    def name(self) -> str:
        return self.index.name

    @property
    def display_url(self) -> str:
        return self.index.display_url

    @property
    def secrets(self) -> list[str | None]:
        return self.index.secrets

    @property
    def retried(self) -> int:
        """Documents re-sent after a retryable rejection (429 or 5xx), for the ingest summary."""
        return self.bulk.retried

    # -- lifecycle -------------------------------------------------------------------------------
    @checked_args
    def open(self, config: FingerprintConfig | None = None, *, create: bool = True) -> OpenResult:
        return self.index.open(config, create=create)

    @property
    def config(self) -> FingerprintConfig:
        return self.index.config

    def close(self) -> None:
        """The client belongs to the caller; nothing to release here."""

    def drop(self) -> None:
        self.index.drop()

    def refresh(self) -> None:
        self.index.refresh()

    def count(self) -> int:
        return self.index.count()

    # -- writing ---------------------------------------------------------------------------------
    def write(self, docs: Iterable[NewDoc]) -> Iterator[WriteResult]:
        """Index documents; yields one result per document (order within a chunk may differ on retry)."""
        return self.bulk.write(docs)

    def set_labels(self, labels: Mapping[str, tuple[str, str | None]]) -> int:
        return labelling.set_labels(self.bulk, labels)

    def write_lock(self) -> contextlib.AbstractContextManager[bool]:
        """Nothing to lock: writers settle their labels after writing instead (``settles``)."""
        return contextlib.nullcontext(False)

    def alone(self) -> bool:
        """Whether every indexing operation on the index since `open` was this store's own: the index's
        ``indexing.index_total`` over its primaries (a counter of successful operations, updated as each one
        completes) grew by no more than this store's confirmed writes and updates. Unknown (the statistics
        cannot be read, for one) counts as not alone."""
        return self.index.alone()

    def indexed_total(self) -> int | None:
        """The index's count of indexing operations on its primaries (each write and partial update is one),
        None when the statistics cannot be read."""
        return self.index.indexed_total()

    def move_dotted_keys_aside(self) -> int:
        return labelling.move_dotted_keys_aside(self.bulk)

    def merge_clusters(self, groups: Iterable[Collection[Root]]) -> int:
        return labelling.merge_clusters(self.bulk, groups)

    def members(self, cluster_ids: Sequence[str]) -> list[StoredDoc]:
        return labelling.members(self.bulk, cluster_ids)

    def relabel(self, labels: Mapping[str, Root]) -> int:
        return labelling.relabel(self.bulk, labels)

    def delete_if_unchanged(self, docs: Sequence[StoredDoc]) -> list[str]:
        return labelling.delete_if_unchanged(self.bulk, docs)

    def update_dedup_if_unchanged(self, changes: Mapping[str, tuple[StoredDoc, dict[str, Any]]]) -> dict[str, StoredDoc]:
        """See `ElasticsearchBacked.update_dedup_if_unchanged`."""
        return labelling.update_dedup_if_unchanged(self.bulk, changes)

    # -- reading ---------------------------------------------------------------------------------
    def lookup(self, probes: Sequence[Probe], *, limit: int = 1000) -> list[list[StoredDoc]]:
        return lookup.lookup(self.index, probes, limit=limit, page=self.lookup_page)

    def verified_on_node(self, probe: Probe, params: Mapping[str, Any], *, size: int) -> list[dict[str, Any]]:
        """See `ElasticsearchBacked.verified_on_node`."""
        return lookup.verified_on_node(self.index, probe, params, size=size)

    def copies(self, sha1s: Sequence[str], *, limit: int = 1000) -> list[list[StoredDoc]]:
        return lookup.copies(self.index, sha1s, limit=limit)

    def scan_empty(self, *, batch: int = 5000) -> Iterator[list[StoredDoc]]:
        return scans.scan_empty(self.index, batch=batch)

    def knn(self, vector: np.ndarray, k: int = 10) -> list[StoredDoc]:
        return lookup.knn(self.index, vector, k)

    def get(self, ids: Sequence[str]) -> dict[str, StoredDoc]:
        return self.index.docs(ids)

    def get_source(self, doc_id: str) -> dict[str, Any] | None:
        return lookup.get_source(self.index, doc_id)

    def scan(self, *, batch: int = 5000) -> Iterator[list[StoredDoc]]:
        return scans.scan(self.index, batch=batch)

    def signature_columns(self, perm: int) -> SignatureColumns:
        """See `esdedup.store.columns.SignatureColumnsStore` (`scans.signature_columns`)."""
        return scans.signature_columns(self.index, perm)

    def copy_columns(self) -> list[tuple[str, str, bool]]:
        """See `esdedup.store.columns.CopyColumnsStore` (`keys.copy_columns`: the copies only)."""
        return keys.copy_columns(self.index)

    def hit_pages(self, what: str, *, query: Mapping[str, Any] | None = None, batch: int = 5000,
                  docvalue_fields: Sequence[str] = FINGERPRINT_FIELDS, versions: bool = False,
                  keep_alive: str = "2m") -> Iterator[list[dict[str, Any]]]:
        """See `ElasticsearchBacked.hit_pages`."""
        return scans.hit_pages(self.index, what, query=query, batch=batch, docvalue_fields=docvalue_fields,
                               versions=versions, keep_alive=keep_alive)

    def stored_doc(self, hit: Mapping[str, Any]) -> StoredDoc:
        """See `ElasticsearchBacked.stored_doc`."""
        return self.index.doc(hit)

    def key_batches(self, *, max_bucket: int = 1000, lsh: bool = True) -> Iterator[KeyBatch]:
        return keys.key_batches(self.index, max_bucket=max_bucket, lsh=lsh)

    def partition_key_batches(self, partition: Partition, *, max_bucket: int = 1000,
                              lsh: bool = True) -> Iterator[KeyBatch]:
        """See `esdedup.store.partition.PartitionedKeys`."""
        return keys.partition_key_batches(self.index, partition, max_bucket=max_bucket, lsh=lsh)

    def crowded_keys(self, *, min_count: int, limit: int = 20, lsh: bool = True) -> list[tuple[str, int]]:
        return keys.crowded_keys(self.index, min_count=min_count, limit=limit, lsh=lsh)

    # -- browsing (see esdedup.store.elastic.browse) --------------------------------------------------
    def _while_unchanged(self, what: str, read: Callable[[], Any]) -> Any:
        """``read()``, kept until the index's count of indexing operations or of documents changes (two cheap
        requests instead of an aggregation over every cluster id)."""
        total = self.index.indexed_total()
        version = None if total is None else (total, self.index.count())
        cached = self._browsed.get(what)
        if version is not None and cached is not None and cached[0] == version:
            return cached[1]
        value = read()
        self._browsed[what] = (version, value)
        return value

    def cluster_summary(self) -> ClusterSummary:
        """See `Store.cluster_summary`."""
        summary: ClusterSummary = self._while_unchanged("summary", lambda: browse.cluster_summary(self.index))
        return summary

    def cluster_page(self, *, offset: int, size: int) -> list[ClusterSize]:
        """See `Store.cluster_page`: the largest clusters from one aggregation, a deeper page from the listing of
        every cluster (read once while the index is unchanged)."""
        if max(0, offset) + max(0, size) <= browse.MAX_CLUSTER_BUCKETS:
            return browse.cluster_page(self.index, offset, size)
        every: list[ClusterSize] = self._while_unchanged("clusters", lambda: browse.every_cluster(self.index))
        return every[max(0, offset):max(0, offset) + max(0, size)]

    def cluster_sizes(self, cluster_ids: Sequence[str]) -> dict[str, int]:
        return browse.cluster_sizes(self.index, cluster_ids)

    def top_keys(self, *, lsh: bool, limit: int = 15) -> TopKeys:
        return browse.top_keys(self.index, lsh, limit)

    def search_text(self, query: str, *, offset: int = 0, size: int = 20) -> SearchPage:
        return browse.search_text(self.index, query, offset, size)

    def prepare_text_search(self) -> None:
        """Nothing to do: the node indexes text as it is written (see `Store.prepare_text_search`)."""

    def sample(self, n: int, *, seed: int = 0) -> list[StoredDoc]:
        return browse.sample(self.index, n, seed)
