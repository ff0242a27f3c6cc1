"""The store queries the review page needs beyond the `Store` protocol: clusters largest first, a page at
a time; the clusters of some documents; the most shared band and LSH key values; a text search.

Built only on the protocol (and, for the text search on Elasticsearch, one ``search`` request): `Catalog`
reads the stored labels once (`Store.scan`) and keeps only the documents of clusters of two or more, so a
page is a slice of a sorted list and one `Store.members` call. What a store would ideally answer itself is
said on each function: then no scan would be needed at all.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from esdedup.store.base import Store, StoredDoc

__all__ = ["Catalog", "ClusterRow", "search_documents", "top_key_values"]


@dataclass(frozen=True)
class ClusterRow:
    """One cluster: its representative's id (the cluster id) and how many documents carry it."""

    cluster_id: str
    size: int


class Catalog:
    """Clusters (stored ``cluster_id`` labels) of an opened store, largest first.

    Ideally a store capability: ``cluster_sizes(offset, size)`` (a ``terms`` aggregation on the cluster id,
    ordered by count, with ``bucket_sort`` paging; ``GROUP BY cluster_id ORDER BY COUNT(*)`` in SQLite)."""

    def __init__(self, store: Store, *, batch: int = 5000) -> None:
        sizes: Counter[str] = Counter()
        of: dict[str, str] = {}
        for docs in store.scan(batch=batch):
            for d in docs:
                if d.cluster_id is not None:
                    sizes[d.cluster_id] += 1
                    of[d.id] = d.cluster_id
        self.rows = sorted((ClusterRow(c, n) for c, n in sizes.items() if n >= 2),
                           key=lambda r: (-r.size, r.cluster_id))
        big = {r.cluster_id for r in self.rows}
        #: Document id -> its cluster, for the documents of clusters of two or more.
        self.cluster_of = {doc: c for doc, c in of.items() if c in big}
        self._size = {r.cluster_id: r.size for r in self.rows}

    @property
    def clustered(self) -> int:
        return len(self.cluster_of)

    def page(self, offset: int, size: int) -> list[ClusterRow]:
        return self.rows[max(0, offset):max(0, offset) + size]

    def size_of(self, cluster_id: str) -> int:
        return self._size.get(cluster_id, 0)

    def clusters_of(self, doc_ids: list[str]) -> list[ClusterRow]:
        """The clusters (of two or more) holding any of ``doc_ids``, largest first."""
        found = {self.cluster_of[d] for d in doc_ids if d in self.cluster_of}
        return sorted((ClusterRow(c, self._size[c]) for c in found), key=lambda r: (-r.size, r.cluster_id))

    def ids_matching(self, text: str, limit: int) -> list[str]:
        """Ids of clustered documents containing ``text`` (case-insensitive), at most ``limit``."""
        needle = text.casefold()
        return [d for d in self.cluster_of if needle in d.casefold()][:limit]

    def size_counts(self) -> list[tuple[int, int]]:
        """(cluster size, how many clusters have it), smallest size first."""
        return sorted(Counter(r.size for r in self.rows).items())


def top_key_values(store: Store, *, limit: int = 15) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """The most shared SimHash band key values and MinHash LSH key values, with how many documents hold
    each (held by two or more): what a Kibana user charts from the band fields.

    Ideally a store capability: the top values of each key field (a ``terms`` aggregation per field); the
    protocol's `Store.crowded_keys` gives both kinds together, so the LSH ones are those not among the
    SimHash band ones."""
    bands = store.crowded_keys(min_count=2, limit=limit, lsh=False)
    both = store.crowded_keys(min_count=2, limit=limit + len(bands), lsh=True)
    band_set = {k for k, _ in bands}
    return bands, [(k, n) for k, n in both if k not in band_set][:limit]


@dataclass(frozen=True)
class FoundDoc:
    id: str
    source: dict[str, Any]
    score: float | None


def search_documents(store: Store, query: str, *, size: int = 20, fields: tuple[str, ...] = ("title", "text"),
                     scan_batch: int = 500) -> list[FoundDoc]:
    """Documents whose id, title or text match ``query``, best first, at most ``size``.

    On Elasticsearch one ``search`` request (a phrase ``multi_match`` on the text fields, so that Chinese
    characters match in sequence as a substring does, and an exact id); on a
    store without a text index, the stored documents read in turn until ``size`` hold the query as a
    substring. Ideally a store capability: ``search(query, offset, size)`` on an inverted index."""
    from esdedup.es.errors import es_errors
    from esdedup.store.elastic.store import ElasticStore

    query = query.strip()
    if not query:
        return []
    if isinstance(store, ElasticStore):
        body: dict[str, Any] = {"bool": {"should": [
            {"multi_match": {"query": query, "type": "phrase", "fields": [f"{fields[0]}^2", *fields[1:]]}},
            {"ids": {"values": [query]}}]}}
        with es_errors(f"searching index {store.name!r} ({store.display_url})", store.secrets):
            resp = store.client.search(index=store.name, query=body, size=size)
        return [FoundDoc(h["_id"], h.get("_source") or {}, h.get("_score")) for h in resp["hits"]["hits"]]
    needle = query.casefold()
    out: list[FoundDoc] = []
    for doc in _documents(store, scan_batch):
        src = store.get_source(doc.id) or {}
        if needle in doc.id.casefold() or any(needle in str(src.get(f, "")).casefold() for f in fields):
            out.append(FoundDoc(doc.id, src, None))
            if len(out) >= size:
                break
    return out


def _documents(store: Store, batch: int) -> Iterator[StoredDoc]:
    for docs in store.scan(batch=batch):
        yield from docs
