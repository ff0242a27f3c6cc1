"""Search with near-duplicates removed, filling the page: `search_diversified` and its async twin.

Both drive one plan (`_plan`, a generator that yields search requests and receives responses), so the
over-fetch and page-filling logic exists once and the sync and async versions only differ in how they
send a request.
"""
from __future__ import annotations

import copy
from collections.abc import Generator, Mapping
from typing import Any

from .diversify import diversify
from .errors import ConfigError
from .fingerprint import Fingerprinter
from .store.elastic import es_errors

#: Elasticsearch's default index.max_result_window: a window never grows past it.
MAX_WINDOW = 10_000


def _plan(body: Mapping[str, Any] | None, *, size: int, mode: str, hamming_k: int | None, cosine: float | None,
          overfetch: float, max_rounds: int, fingerprinter: Fingerprinter | None,
          text_field: str) -> Generator[dict[str, Any], Mapping[str, Any], dict[str, Any]]:
    if size < 1:
        raise ConfigError(f"size must be >= 1, got {size}")
    if overfetch < 1:
        raise ConfigError(f"overfetch must be >= 1, got {overfetch}")
    req = copy.deepcopy(dict(body or {}))
    for key in ("size", "from"):
        req.pop(key, None)
    docvalues = list(req.get("docvalue_fields", []))
    for f in ("dedup.simhash", "dedup.empty"):
        if f not in docvalues:
            docvalues.append(f)
    req["docvalue_fields"] = docvalues
    if cosine is not None:
        fields = list(req.get("fields", []))
        if "dedup.vector" not in fields:
            fields.append("dedup.vector")
        req["fields"] = fields
    window = min(MAX_WINDOW, max(size, int(size * overfetch)))
    resp: Mapping[str, Any] = {}
    kept: list[dict[str, Any]] = []
    hits: list[Mapping[str, Any]] = []
    rounds = 0
    while rounds < max_rounds:
        rounds += 1
        resp = yield {**req, "size": window}
        hits = resp["hits"]["hits"]
        kept = diversify(hits, mode=mode, hamming_k=hamming_k, cosine=cosine, fingerprinter=fingerprinter,
                         text_field=text_field)
        representatives = kept if mode != "demote" else [h for h in kept if "_duplicate_of" not in h]
        exhausted = len(hits) < window or window >= MAX_WINDOW
        if len(representatives) >= size or exhausted:
            break
        window = min(MAX_WINDOW, window * 2)
    out = dict(resp)
    out["hits"] = {**resp.get("hits", {}), "hits": kept[:size]}
    out["diversified"] = {"fetched": len(hits), "returned": min(size, len(kept)), "rounds": rounds,
                          "mode": mode}
    return out


def search_diversified(client: Any, index: str, body: Mapping[str, Any] | None = None, *, size: int = 10,
                       mode: str = "drop", hamming_k: int | None = 3, cosine: float | None = None,
                       overfetch: float = 3.0, max_rounds: int = 4, fingerprinter: Fingerprinter | None = None,
                       text_field: str = "text") -> dict[str, Any]:
    """Run a search and return ``size`` hits with near-duplicates dropped (or demoted or grouped).

    ``body`` is a search body (``{"query": ...}``); ``size``/``from`` in it are replaced. The first request
    over-fetches ``size * overfetch`` hits; when too many were duplicates to fill the page, the window
    doubles (at most ``max_rounds`` requests, never past 10,000 hits). The response is the last search
    response with ``hits.hits`` replaced and a ``diversified`` summary added.

    Example:
        >>> resp = search_diversified(es, "news", {"query": {"match": {"text": "台胞证"}}}, size=10)  # doctest: +SKIP
    """
    plan = _plan(body, size=size, mode=mode, hamming_k=hamming_k, cosine=cosine, overfetch=overfetch,
                 max_rounds=max_rounds, fingerprinter=fingerprinter, text_field=text_field)
    request = next(plan)
    while True:
        with es_errors(f"search on {index!r}"):
            resp = client.search(index=index, **request)
        try:
            request = plan.send(resp.body if hasattr(resp, "body") else resp)
        except StopIteration as done:
            return done.value


async def async_search_diversified(client: Any, index: str, body: Mapping[str, Any] | None = None, *,
                                   size: int = 10, mode: str = "drop", hamming_k: int | None = 3,
                                   cosine: float | None = None, overfetch: float = 3.0, max_rounds: int = 4,
                                   fingerprinter: Fingerprinter | None = None,
                                   text_field: str = "text") -> dict[str, Any]:
    """`search_diversified` for ``AsyncElasticsearch``."""
    plan = _plan(body, size=size, mode=mode, hamming_k=hamming_k, cosine=cosine, overfetch=overfetch,
                 max_rounds=max_rounds, fingerprinter=fingerprinter, text_field=text_field)
    request = next(plan)
    while True:
        with es_errors(f"search on {index!r}"):
            resp = await client.search(index=index, **request)
        try:
            request = plan.send(resp.body if hasattr(resp, "body") else resp)
        except StopIteration as done:
            return done.value

