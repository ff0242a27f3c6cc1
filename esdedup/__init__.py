"""esdedup: find near-duplicate articles (Chinese first) with SimHash bands and TF vectors, locally or in
Elasticsearch.

The public names are listed in ``__all__`` and documented in docs/api.md. ``diversify`` is imported here
directly (not lazily) on purpose: a lazy ``diversify`` would be shadowed by the submodule of the same name
as soon as anything imported ``esdedup.search.diversify``. Names whose modules pull in more (the store layer)
are loaded on first use.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from esdedup._version import __version__
from esdedup.fingerprint.bands import BandLayout
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.search.diversify import diversify
from esdedup.errors import EsdedupError
from esdedup.fingerprint.fingerprinter import Fingerprint, Fingerprinter
from esdedup.fingerprint.simhash import hamming

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

# Loaded on first access: name -> module (relative to this package).
_LAZY = {"open_store": ".api", "search_diversified": ".search"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
