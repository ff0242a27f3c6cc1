"""The Elasticsearch store: `ElasticStore` over one index (or an alias with one write index)."""
from __future__ import annotations

from esdedup.store.elastic.store import ElasticStore

__all__ = ["ElasticStore"]
