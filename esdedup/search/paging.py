"""Search with near-duplicates removed, filling the page: `search_diversified` and its async twin.

Both drive one plan (`_plan`, a generator that yields search requests and receives responses), so the
over-fetch and page-filling logic exists once and the sync and async versions only differ in how they
send a request.

The rule's thresholds and the fingerprint config come from the index itself (its ``_meta``, read once per
client and index and kept, `index_config`), so a search backend passes no threshold at all and gets the
answer `dups` gives. A search asks only for the small dedup fields the rule reads (SimHash, signature,
counts, cluster id; the TF vector only where the config's rule can need it); what it added to ``_source``
is taken out of the hits it returns, so the caller sees the ``_source`` it asked for.
"""
from __future__ import annotations

import copy
import json
import threading
import weakref
from collections.abc import Generator, Mapping
from typing import Any

from esdedup.errors import ConfigError, IndexNotFound
from esdedup.es.errors import es_errors
from esdedup.es.hits import SKETCH_DOCVALUE_FIELDS, SKETCH_SOURCE_FIELDS
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprinter
from esdedup.match.thresholds import ThresholdOverrides, Thresholds, resolve_thresholds
from esdedup.schema import BAND_FIELDS_PATTERN, LSH_FIELDS_PATTERN, META_KEY, VECTOR, config_from_meta
from esdedup.search.diversify import MODES, diversify

#: Elasticsearch's default index.max_result_window: a window never grows past it.
MAX_WINDOW = 10_000

_configs: weakref.WeakKeyDictionary[Any, dict[str, FingerprintConfig]] = weakref.WeakKeyDictionary()
_configs_lock = threading.Lock()


def _cached_config(client: Any, index: str) -> FingerprintConfig | None:
    with _configs_lock:
        try:
            return _configs.get(client, {}).get(index)
        except TypeError:  # a client that cannot be weakly referenced is never cached
            return None


def _remember_config(client: Any, index: str, config: FingerprintConfig) -> None:
    with _configs_lock:
        try:
            _configs.setdefault(client, {})[index] = config
        except TypeError:
            pass


def _config_from_mapping(resp: Mapping[str, Any], index: str) -> FingerprintConfig:
    """The one esdedup config of the indices a name resolves to (an alias may cover several)."""
    configs: dict[str, FingerprintConfig] = {}
    for name, body in resp.items():
        config = config_from_meta((body.get("mappings") or {}).get("_meta"))
        if config is None:
            raise ConfigError(f"index {name!r} was not made by esdedup (no {META_KEY!r} in its _meta): pass "
                              "its fingerprint config explicitly")
        configs.setdefault(json.dumps(config.identity(), sort_keys=True), config)
    if not configs:
        raise IndexNotFound(f"no index matches {index!r}")
    if len(configs) > 1:
        raise ConfigError(f"the indices behind {index!r} were built with different fingerprint configs; "
                          "diversify one index at a time or pass a config")
    return next(iter(configs.values()))


def index_config(client: Any, index: str) -> FingerprintConfig:
    """The fingerprint config an index was built with (its ``_meta``), read once per client and index."""
    config = _cached_config(client, index)
    if config is None:
        with es_errors(f"reading the mapping of {index!r}"):
            resp = client.indices.get_mapping(index=index)
        config = _config_from_mapping(resp.body if hasattr(resp, "body") else resp, index)
        _remember_config(client, index, config)
    return config


async def async_index_config(client: Any, index: str) -> FingerprintConfig:
    """`index_config` for ``AsyncElasticsearch``."""
    config = _cached_config(client, index)
    if config is None:
        with es_errors(f"reading the mapping of {index!r}"):
            resp = await client.indices.get_mapping(index=index)
        config = _config_from_mapping(resp.body if hasattr(resp, "body") else resp, index)
        _remember_config(client, index, config)
    return config


def _with_dedup_fields(body: Mapping[str, Any] | None, config: FingerprintConfig,
                       t: Thresholds) -> tuple[dict[str, Any], list[str]]:
    """The search body asking for what the rule reads, and the ``_source`` paths added for it (to take out
    of the hits again)."""
    req = copy.deepcopy(dict(body or {}))
    for key in ("size", "from"):
        req.pop(key, None)
    docvalues = list(req.get("docvalue_fields", []))
    docvalues += [f for f in SKETCH_DOCVALUE_FIELDS if f not in docvalues]
    req["docvalue_fields"] = docvalues
    if t.cosine is not None and (not config.gets_signatures or (t.jaccard is None and t.containment is None)):
        fields = list(req.get("fields", []))
        if VECTOR not in fields:
            fields.append(VECTOR)
        req["fields"] = fields
    added: list[str] = []
    source = req.get("_source", True)
    if source is True:
        # Everything the caller stores, but not the bulky dedup fields (vector, band and LSH keys).
        req["_source"] = {"excludes": [VECTOR, BAND_FIELDS_PATTERN, LSH_FIELDS_PATTERN]}
    elif config.gets_signatures:
        req["_source"], added = _source_plus(source, list(SKETCH_SOURCE_FIELDS))
    return req, added


def _source_plus(source: Any, paths: list[str]) -> tuple[Any, list[str]]:
    """A caller's ``_source`` spec (False, a path, a list, or includes/excludes) widened by ``paths``; the
    paths it did not ask for already."""
    if source is False:
        return {"includes": paths}, paths
    if isinstance(source, str):
        source = [source]
    if isinstance(source, list):
        added = [p for p in paths if p not in source]
        return source + added, added
    if isinstance(source, Mapping):
        spec = dict(source)
        includes = list(spec.get("includes", spec.get("include", [])) or [])
        if not includes:
            return spec, []  # everything but the caller's excludes: the signature comes along
        added = [p for p in paths if p not in includes]
        spec.pop("include", None)
        spec["includes"] = includes + added
        return spec, added
    return source, []


def _strip(hit: dict[str, Any], paths: list[str]) -> dict[str, Any]:
    """A hit without the ``_source`` paths the search added (``dedup.x`` inside ``dedup``)."""
    src = hit.get("_source")
    if not paths or not isinstance(src, dict):
        return hit
    src = dict(src)
    for path in paths:
        head, _, tail = path.partition(".")
        inner = src.get(head)
        if isinstance(inner, dict) and tail in inner:
            inner = {k: v for k, v in inner.items() if k != tail}
            if inner:
                src[head] = inner
            else:
                src.pop(head)
    out = dict(hit)
    out["_source"] = src
    if "_duplicates" in out:
        out["_duplicates"] = [_strip(d, paths) for d in out["_duplicates"]]
    return out


def _plan(body: Mapping[str, Any] | None, *, size: int, mode: str, config: FingerprintConfig, t: Thresholds,
          overfetch: float, max_rounds: int, fingerprinter: Fingerprinter | None,
          text_field: str) -> Generator[dict[str, Any], Mapping[str, Any], dict[str, Any]]:
    req, added = _with_dedup_fields(body, config, t)
    window = min(MAX_WINDOW, max(size, int(size * overfetch)))
    resp: Mapping[str, Any] = {}
    kept: list[dict[str, Any]] = []
    hits: list[Mapping[str, Any]] = []
    rounds = 0
    while rounds < max_rounds:
        rounds += 1
        resp = yield {**req, "size": window}
        hits = resp["hits"]["hits"]
        kept = diversify(hits, mode=mode, config=config, thresholds=t, fingerprinter=fingerprinter,
                         text_field=text_field)
        representatives = kept if mode != "demote" else [h for h in kept if "_duplicate_of" not in h]
        exhausted = len(hits) < window or window >= MAX_WINDOW
        if len(representatives) >= size or exhausted:
            break
        window = min(MAX_WINDOW, window * 2)
    out = dict(resp)
    out["hits"] = {**resp.get("hits", {}), "hits": [_strip(h, added) for h in kept[:size]]}
    out["diversified"] = {"fetched": len(hits), "returned": min(size, len(kept)), "rounds": rounds,
                          "mode": mode, "thresholds": t.to_dict()}
    return out


def _check(size: int, overfetch: float, mode: str) -> None:
    if size < 1:
        raise ConfigError(f"size must be >= 1, got {size}")
    if not overfetch >= 1:  # also NaN
        raise ConfigError(f"overfetch must be >= 1, got {overfetch}")
    if mode not in MODES:
        raise ConfigError(f"mode must be one of {', '.join(map(repr, MODES))}, got {mode!r}")


def search_diversified(client: Any, index: str, body: Mapping[str, Any] | None = None, *, size: int = 10,
                       mode: str = "drop", config: FingerprintConfig | None = None,
                       thresholds: Thresholds | ThresholdOverrides | None = None, overfetch: float = 3.0,
                       max_rounds: int = 4, fingerprinter: Fingerprinter | None = None,
                       text_field: str = "text") -> dict[str, Any]:
    """Run a search and return ``size`` hits with near-duplicates dropped (or demoted or grouped), by the
    index's own rule: ``config`` and ``thresholds`` default to what the index was built with.

    ``body`` is a search body (``{"query": ...}``); ``size``/``from`` in it are replaced. The first request
    over-fetches ``size * overfetch`` hits; when too many were duplicates to fill the page, the window
    doubles (at most ``max_rounds`` requests, never past 10,000 hits). The response is the last search
    response with ``hits.hits`` replaced and a ``diversified`` summary added.

    Example:
        >>> resp = search_diversified(es, "news", {"query": {"match": {"text": "台胞证"}}}, size=10)  # doctest: +SKIP
    """
    _check(size, overfetch, mode)
    config = config or index_config(client, index)
    t = resolve_thresholds(thresholds, config)
    t.check_stored_vector(config)
    plan = _plan(body, size=size, mode=mode, config=config, t=t, overfetch=overfetch, max_rounds=max_rounds,
                 fingerprinter=fingerprinter, text_field=text_field)
    request = next(plan)
    while True:
        with es_errors(f"search on {index!r}"):
            resp = client.search(index=index, **request)
        try:
            request = plan.send(resp.body if hasattr(resp, "body") else resp)
        except StopIteration as done:
            return done.value


async def async_search_diversified(client: Any, index: str, body: Mapping[str, Any] | None = None, *,
                                   size: int = 10, mode: str = "drop", config: FingerprintConfig | None = None,
                                   thresholds: Thresholds | ThresholdOverrides | None = None,
                                   overfetch: float = 3.0, max_rounds: int = 4,
                                   fingerprinter: Fingerprinter | None = None,
                                   text_field: str = "text") -> dict[str, Any]:
    """`search_diversified` for ``AsyncElasticsearch``."""
    _check(size, overfetch, mode)
    config = config or await async_index_config(client, index)
    t = resolve_thresholds(thresholds, config)
    t.check_stored_vector(config)
    plan = _plan(body, size=size, mode=mode, config=config, t=t, overfetch=overfetch, max_rounds=max_rounds,
                 fingerprinter=fingerprinter, text_field=text_field)
    request = next(plan)
    while True:
        with es_errors(f"search on {index!r}"):
            resp = await client.search(index=index, **request)
        try:
            request = plan.send(resp.body if hasattr(resp, "body") else resp)
        except StopIteration as done:
            return done.value
