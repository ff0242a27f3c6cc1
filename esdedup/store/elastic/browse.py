"""What a person browsing an Elasticsearch index reads (`esdedup.store.base.Store.cluster_summary` and the
methods after it): aggregations and searches, none a scan.

Clusters are ``terms`` aggregations on ``dedup.cluster_id`` ordered by count (``min_doc_count`` 2), a page cut
here; an aggregation returns at most `MAX_CLUSTER_BUCKETS` buckets, so a page past them comes from
`every_cluster`: a ``composite`` aggregation paged over the cluster ids of every member that is not its
cluster's representative (the ones with a ``duplicate_of``), sorted here (the store keeps it while the index is
unchanged). The size histogram counts the `SUMMARY_CLUSTERS` largest clusters; when there are more, the number of clusters is
a HyperLogLog estimate (``cardinality`` of the cluster ids of the documents that have a ``duplicate_of``:
every cluster of two or more has one such member), and the summary says it is not exact.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from esdedup.errors import ConfigError
from esdedup.es.hits import FINGERPRINT_FIELDS, VECTOR_SOURCE
from esdedup.schema import CLUSTER_ID, DEDUP, DUPLICATE_OF, VECTOR
from esdedup.store.base import (
    ClusterSize,
    ClusterSummary,
    FoundDoc,
    SearchPage,
    StoredDoc,
    TopKeys,
)
from esdedup.store.elastic.index import PAGE, ElasticIndex
from esdedup.store.elastic.keys import most_held
from esdedup.store.names import id_variants

#: Buckets one cluster aggregation returns at most (below the node's default ``search.max_buckets``, 65,536).
MAX_CLUSTER_BUCKETS = 60_000
#: Buckets a page of `every_cluster`'s composite aggregation holds.
COMPOSITE_PAGE = 10_000
#: Clusters the size histogram counts exactly.
SUMMARY_CLUSTERS = 10_000
#: Hits a search counts for its total, at most.
TOTAL_CAP = 1000
_ORDER = [{"_count": "desc"}, {"_key": "asc"}]


def _clusters_agg(size: int) -> dict[str, Any]:
    # shard_size above the default (1.5 x size + 10): a cluster's members may sit on every shard.
    return {"terms": {"field": CLUSTER_ID, "min_doc_count": 2, "size": size, "shard_size": size * 2 + 100,
                      "order": _ORDER}}


def cluster_page(index: ElasticIndex, offset: int, size: int) -> list[ClusterSize]:
    offset, size = max(0, offset), max(0, size)
    if size == 0:
        return []
    if offset + size > MAX_CLUSTER_BUCKETS:
        raise ConfigError(f"one aggregation lists the {MAX_CLUSTER_BUCKETS:,} largest clusters; a page past them "
                          "is a page of every_cluster")
    # The page is cut here, not by a ``bucket_sort`` (a module a trimmed node may lack).
    resp = index.search("listing clusters", size=0, track_total_hits=False, aggs={"c": _clusters_agg(offset + size)})
    return [ClusterSize(b["key"], int(b["doc_count"])) for b in resp["aggregations"]["c"]["buckets"][offset:]]


def every_cluster(index: ElasticIndex) -> list[ClusterSize]:
    """Every cluster of two or more, largest first (then by id, the order of `cluster_page`). A cluster's size
    is its members with a ``duplicate_of`` plus its representative."""
    sizes: list[ClusterSize] = []
    after: dict[str, Any] | None = None
    while True:
        composite: dict[str, Any] = {"size": COMPOSITE_PAGE, "sources": [{"c": {"terms": {"field": CLUSTER_ID}}}]}
        if after is not None:
            composite["after"] = after
        resp = index.search("listing every cluster", size=0, track_total_hits=False,
                            query={"exists": {"field": DUPLICATE_OF}}, aggs={"c": {"composite": composite}})
        agg = resp["aggregations"]["c"]
        sizes += [ClusterSize(b["key"]["c"], int(b["doc_count"]) + 1) for b in agg["buckets"]]
        after = agg.get("after_key")
        if len(agg["buckets"]) < COMPOSITE_PAGE or after is None:
            break
    return sorted(sizes, key=lambda c: (-c.size, c.cluster_id))


def cluster_summary(index: ElasticIndex) -> ClusterSummary:
    aggs = {"c": _clusters_agg(SUMMARY_CLUSTERS),
            "members": {"filter": {"exists": {"field": DUPLICATE_OF}},
                        "aggs": {"clusters": {"cardinality": {"field": CLUSTER_ID, "precision_threshold": 40_000}}}}}
    resp = index.search("counting clusters", size=0, track_total_hits=False, aggs=aggs)
    buckets = resp["aggregations"]["c"]["buckets"]
    counts: dict[int, int] = {}
    for b in buckets:
        counts[int(b["doc_count"])] = counts.get(int(b["doc_count"]), 0) + 1
    sizes = sorted(counts.items())
    if len(buckets) < SUMMARY_CLUSTERS:
        return ClusterSummary(len(buckets), sum(n * c for n, c in sizes), sizes)
    members = resp["aggregations"]["members"]
    clusters = max(len(buckets), int(members["clusters"]["value"]))
    return ClusterSummary(clusters, int(members["doc_count"]) + clusters, sizes, exact=False, counted=len(buckets))


def cluster_sizes(index: ElasticIndex, cluster_ids: Sequence[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    ids = list(dict.fromkeys(cluster_ids))
    for start in range(0, len(ids), PAGE):
        part = ids[start:start + PAGE]
        aggs = {"c": {"terms": {"field": CLUSTER_ID, "size": len(part), "include": part}}}
        resp = index.search("counting cluster members", size=0, track_total_hits=False,
                            query={"terms": {CLUSTER_ID: part}}, aggs=aggs)
        out.update((b["key"], int(b["doc_count"])) for b in resp["aggregations"]["c"]["buckets"])
    return out


def top_keys(index: ElasticIndex, lsh: bool, limit: int) -> TopKeys:
    bands = index.key_fields(lsh=False)
    fields = [f for f in index.key_fields(lsh=True) if f not in bands] if lsh else bands
    return TopKeys(most_held(index, fields, limit, "top key values"))


def search_text(index: ElasticIndex, query: str, offset: int, size: int,
                fields: tuple[str, ...] = ("title", "text")) -> SearchPage:
    query = query.strip()
    if not query:
        return SearchPage([], 0)
    # A phrase, so that Chinese characters match in sequence as the embedded store's index matches them,
    # and the exact id.
    body = {"bool": {"should": [
        {"multi_match": {"query": query, "type": "phrase", "fields": [f"{fields[0]}^2", *fields[1:]]}},
        {"ids": {"values": id_variants(query)}}]}}
    resp = index.search("searching texts", query=body, from_=max(0, offset), size=size,
                        track_total_hits=TOTAL_CAP, source_excludes=[VECTOR])
    total = resp["hits"]["total"]
    hits = [FoundDoc(h["_id"], h.get("_source") or {}, h.get("_score"),
                     ((h.get("_source") or {}).get(DEDUP) or {}).get("cluster_id")) for h in resp["hits"]["hits"]]
    return SearchPage(hits, int(total["value"]), total.get("relation") == "gte")


def sample(index: ElasticIndex, n: int, seed: int) -> list[StoredDoc]:
    if n <= 0:
        return []
    query = {"function_score": {"query": {"match_all": {}}, "boost_mode": "replace",
                                "random_score": {"seed": seed, "field": "_seq_no"}}}
    resp = index.search("sampling documents", query=query, size=min(n, PAGE), _source=VECTOR_SOURCE,
                        docvalue_fields=list(FINGERPRINT_FIELDS), track_total_hits=False)
    return [index.doc(h) for h in resp["hits"]["hits"]]
