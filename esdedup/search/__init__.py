"""A search backend's side: `diversify` a page of hits, or let `search_diversified` page a query until it has
``size`` distinct stories (`paging`). The Elasticsearch paging is loaded on first use."""
from __future__ import annotations

from typing import TYPE_CHECKING

from esdedup.util.lazy import lazy_names

if TYPE_CHECKING:
    from esdedup.search.paging import MAX_WINDOW, async_search_diversified, index_config, search_diversified

__all__ = ["MAX_WINDOW", "async_search_diversified", "index_config", "search_diversified"]

__getattr__, __dir__ = lazy_names(__name__, dict.fromkeys(__all__, "esdedup.search.paging"))
