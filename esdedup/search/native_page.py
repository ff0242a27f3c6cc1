"""The native steps of diversifying search results (in the extension that `esdedup.util.native`
loads), beside `esdedup.search.diversify`, whose Python reading stays the definition: a whole page of plain
hits read and grouped (`diversify_page`; a page's signatures are decoded by `esdedup.es.hits.decode_signatures`).
"""
from __future__ import annotations

from esdedup.util import native


def diversify_page(hits: list, *, perm: int, width: int, nbytes: int, bits: int, gets_signatures: bool,
                   jaccard: float | None, containment: float | None, hamming_k: int | None, cosine: bool,
                   min_shingles: float, max_ratio: float) -> list[int] | None:
    """A page of search hits read and grouped by the extension, as `esdedup.search.diversify` groups them:
    the representative of each hit (its index, or -1 for a representative), or None when a hit is not of the
    plain form it reads (`esdedup.search.diversify._group_natively` says which) or the native core is not in
    use. The rule's thresholds and containment bounds are the caller's (`esdedup.match.rule`)."""
    kernel = native.function("diversify_page")
    if kernel is None:
        return None
    return kernel(hits, perm, width, nbytes, bits, gets_signatures, jaccard, containment, hamming_k, cosine,
                  min_shingles, max_ratio)
