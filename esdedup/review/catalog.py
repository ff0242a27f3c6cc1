"""The clusters the review page lists, from the store's own paged queries (`Browsing.cluster_page`,
`Browsing.cluster_summary`, `Browsing.cluster_sizes`, `Browsing.search_text`): no page reads the whole index."""
from __future__ import annotations

from esdedup.store.base import BrowsableStore, ClusterSize

__all__ = ["MATCHES_READ", "clusters_matching"]

#: Documents a cluster search reads at most (`clusters_matching`).
MATCHES_READ = 200


def clusters_matching(store: BrowsableStore, query: str, *, limit: int = MATCHES_READ) -> tuple[list[ClusterSize], int, bool]:
    """The clusters of two or more holding a document whose id is ``query`` or whose title or text holds
    it, largest first: those of the first ``limit`` matching documents. Also the matches counted and whether
    more matched than were read (then the clusters of the others are not listed)."""
    page = store.search_text(query, size=limit)
    # The query may also name a cluster (its representative's id) directly.
    cluster_ids = sorted({h.cluster_id for h in page.hits if h.cluster_id is not None} | {query.strip()})
    sizes = store.cluster_sizes(cluster_ids)
    rows = sorted((ClusterSize(c, n) for c, n in sizes.items() if n >= 2), key=lambda r: (-r.size, r.cluster_id))
    return rows, page.total, page.capped or page.total > len(page.hits)
