"""The native steps of diversifying search results (in the extension that `esdedup.fingerprint.native`
loads), beside `esdedup.search.diversify`, whose Python reading stays the definition: base64 signatures of a
page decoded at once (`decode_base64`) and a whole page of plain hits read and grouped (`diversify_page`).
"""
from __future__ import annotations

from typing import Literal

from esdedup.fingerprint import native


def decode_base64(joined: bytes, width: int, nbytes: int) -> bytes | None | Literal[False]:
    """The bytes of base64 strings of ``width`` characters laid end to end, each holding ``nbytes`` bytes and
    ending in its padding, decoded by the extension: what `base64.b64decode` gives each of them; None when a
    character before the padding is not a base64 digit; False when the native core is not in use (then `esdedup.search.diversify` decodes in numpy)."""
    kernel = native.function("decode_base64")
    return False if kernel is None else kernel(joined, width, nbytes)


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
