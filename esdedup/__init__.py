"""esdedup: find near-duplicate articles (Chinese first) with SimHash bands and TF vectors, locally or in
Elasticsearch."""
from __future__ import annotations

from .config import FingerprintConfig
from .errors import EsdedupError
from .simhash import hamming

__version__ = "0.1.0"

__all__ = ["FingerprintConfig", "EsdedupError", "hamming", "__version__"]
