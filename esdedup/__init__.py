"""esdedup: find near-duplicate articles (Chinese first) with SimHash bands and TF vectors, locally or in
Elasticsearch.

The public names are listed in ``__all__`` and documented in docs/api.md. ``diversify`` is imported here
directly (not lazily) on purpose: a lazy ``diversify`` would be shadowed by the submodule of the same name
as soon as anything imported ``esdedup.search.diversify``. Names whose modules pull in more (the store layer)
are loaded on first use.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from esdedup import moved
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
moved.install()
