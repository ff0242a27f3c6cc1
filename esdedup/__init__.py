"""esdedup: find near-duplicate articles (Chinese first) with MinHash over character n-grams and SimHash
bands, locally or in Elasticsearch.

Under the default strategy (``auto``) every non-empty text gets a MinHash signature, whose LSH band keys
find its candidates and whose Jaccard and containment estimates decide; texts of at least
``short_text_chars`` characters also get SimHash band keys. Documents carry a TF vector only when the config asks for one
(`FingerprintConfig.stores_vector`).

The public names are listed in ``__all__`` and documented in docs/api.md. ``diversify`` is imported here
directly: its module, `esdedup.search.diversify`, needs only the fingerprint and rule layers. Names whose
modules pull in more (the store layer and the Elasticsearch client: `open_store`, `search_diversified`)
are loaded on first use.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from esdedup._version import __version__
from esdedup.errors import EsdedupError
from esdedup.fingerprint.bands import BandLayout
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprint, Fingerprinter
from esdedup.fingerprint.simhash import hamming
from esdedup.search.diversify import diversify
from esdedup.util.lazy import lazy_names

if TYPE_CHECKING:
    from esdedup.api import open_store
    from esdedup.search.paging import search_diversified


__all__ = [
    "BandLayout",
    "EsdedupError",
    "Fingerprint",
    "FingerprintConfig",
    "Fingerprinter",
    "__version__",
    "diversify",
    "hamming",
    "open_store",
    "search_diversified",
]

# Loaded on first access: name -> module.
__getattr__, __dir__ = lazy_names(__name__, {"open_store": "esdedup.api", "search_diversified": "esdedup.search.paging"})
