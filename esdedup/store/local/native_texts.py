"""The native step of the embedded store (in the extension that `esdedup.util.native` loads), beside
`esdedup.store.local.texts`, whose Python spacing stays the definition: the text index's spacing of CJK
characters (`spaced_texts`).
"""
from __future__ import annotations

from collections.abc import Sequence

from esdedup.util import native


def spaced_texts(texts: list[str], ranges: Sequence[tuple[int, int]]) -> list[str | None] | None:
    """`esdedup.store.local.texts.spaced` of each text (``ranges``: the code points it sets apart) in the
    extension, the GIL released: None for a text it leaves to Python (a lone surrogate); None when the
    extension is not in use."""
    if not native.enabled():
        return None
    return native.loaded().spaced_texts(texts, list(ranges))
