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
from esdedup.es import opensearch
from esdedup.es.connect import check_client
from esdedup.es.errors import es_errors
from esdedup.es.hits import SKETCH_DOCVALUE_FIELDS, SKETCH_SOURCE_FIELDS
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprinter
from esdedup.match.thresholds import ThresholdOverrides, Thresholds, resolve_thresholds
from esdedup.schema import BAND_FIELDS_PATTERN, LSH_FIELDS_PATTERN, META_KEY, VECTOR, config_from_meta
from esdedup.search.diversify import MODES, diversify
from esdedup.util.fieldtypes import checked_args

#: Elasticsearch's default index.max_result_window: a window never grows past it.
MAX_WINDOW = 10_000

#: client -> index name -> (the uuids of the indices it named, their config).
_configs: weakref.WeakKeyDictionary[Any, dict[str, tuple[frozenset[str], FingerprintConfig]]] = (
    weakref.WeakKeyDictionary())
_configs_lock = threading.Lock()
#: What is asked of the indices behind a name on every call: their uuids (an index deleted and created again
#: under its name has a new one, and maybe another config).
_UUID = {"name": "index.uuid", "filter_path": "*.settings.index.uuid"}


def _cached_config(client: Any, index: str, uuids: frozenset[str]) -> FingerprintConfig | None:
    with _configs_lock:
        try:
            cached = _configs.get(client, {}).get(index)
        except TypeError:  # a client that cannot be weakly referenced is never cached
            return None
    return cached[1] if cached is not None and cached[0] == uuids else None


def _remember_config(client: Any, index: str, uuids: frozenset[str], config: FingerprintConfig) -> None:
    with _configs_lock:
        try:
            _configs.setdefault(client, {})[index] = (uuids, config)
        except TypeError:
            pass


def _uuids(resp: Any) -> frozenset[str]:
    """The uuids of the indices in a ``GET <index>/_settings/index.uuid`` answer."""
    body = resp.body if hasattr(resp, "body") else resp
    if not isinstance(body, Mapping):
        return frozenset()
    return frozenset(str(((v or {}).get("settings") or {}).get("index", {}).get("uuid"))
                     for v in body.values() if isinstance(v, Mapping))


def _config_from_mapping(resp: Mapping[str, Any], index: str) -> FingerprintConfig:
    """The one esdedup config of the indices a name resolves to (an alias may cover several)."""
    configs: dict[str, FingerprintConfig] = {}
    for name, body in resp.items():
        config = config_from_meta((body.get("mappings") or {}).get("_meta"), f"index {name!r}")
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


@checked_args
def index_config(client: Any, index: str) -> FingerprintConfig:
    """The fingerprint config an index was built with (its ``_meta``), read once per client and index, and
    again when the indices behind the name are others (their uuids changed: deleted and created again)."""
    check_client(client, "index_config")
    with es_errors(f"reading the settings of {index!r}"):
        uuids = _uuids(client.indices.get_settings(index=index, **_UUID))
    config = _cached_config(client, index, uuids)
    if config is None:
        with es_errors(f"reading the mapping of {index!r}"):
            resp = client.indices.get_mapping(index=index)
        config = _config_from_mapping(resp.body if hasattr(resp, "body") else resp, index)
        _remember_config(client, index, uuids, config)
    return config


@checked_args
async def async_index_config(client: Any, index: str) -> FingerprintConfig:
    """`index_config` for ``AsyncElasticsearch``."""
    check_client(client, "async_index_config")
    with es_errors(f"reading the settings of {index!r}"):
        uuids = _uuids(await client.indices.get_settings(index=index, **_UUID))
    config = _cached_config(client, index, uuids)
    if config is None:
        with es_errors(f"reading the mapping of {index!r}"):
            resp = await client.indices.get_mapping(index=index)
        config = _config_from_mapping(resp.body if hasattr(resp, "body") else resp, index)
        _remember_config(client, index, uuids, config)
    return config


def _with_dedup_fields(body: Mapping[str, Any] | None, config: FingerprintConfig,
                       t: Thresholds) -> tuple[dict[str, Any], list[str]]:
    """The search body asking for what the rule reads, and the ``_source`` paths added for it (to take out
    of the hits again)."""
    req = copy.deepcopy(dict(body or {}))
    for key in ("size", "from"):  # the page is cut from the diversified hits (`_plan`)
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
    offset = _offset(body, size)
    wanted = offset + size  # the diversified hits up to the end of the page
    window = min(MAX_WINDOW, max(wanted, int(wanted * overfetch)))
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
        if len(representatives) >= wanted or exhausted:
            break
        window = min(MAX_WINDOW, window * 2)
    page = kept[offset:wanted]
    out = dict(resp)
    out["hits"] = {**resp.get("hits", {}), "hits": [_strip(h, added) for h in page]}
    out["diversified"] = {"fetched": len(hits), "returned": len(page), "rounds": rounds,
                          "mode": mode, "thresholds": t.to_dict(), **({"from": offset} if offset else {})}
    return out


def _offset(body: Mapping[str, Any] | None, size: int) -> int:
    """``from`` of the body: how many diversified hits come before the page (0 without one)."""
    offset = (body or {}).get("from", 0)
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ConfigError(f"'from' in the search body must be a whole number >= 0, got {offset!r}")
    if offset + size > MAX_WINDOW:
        raise ConfigError(f"'from' + size must be at most {MAX_WINDOW} (the hits one search may return), got "
                          f"{offset} + {size}")
    return offset


#: The most search requests one call may make (the window doubles each time, up to `MAX_WINDOW`).
MAX_ROUNDS = 16


def _check(client: Any, size: Any, overfetch: Any, mode: str, max_rounds: Any) -> None:
    """The call's arguments, each a ConfigError naming it when it is not of its kind and range."""
    check_client(client, "search_diversified")
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_WINDOW:
        raise ConfigError(f"size must be a whole number from 1 to {MAX_WINDOW}, got {size!r}")
    if isinstance(overfetch, bool) or not isinstance(overfetch, (int, float)) or not 1 <= overfetch <= MAX_WINDOW:
        raise ConfigError(f"overfetch must be a number from 1 to {MAX_WINDOW}, got {overfetch!r}")  # NaN, inf too
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or not 1 <= max_rounds <= MAX_ROUNDS:
        raise ConfigError(f"max_rounds must be a whole number from 1 to {MAX_ROUNDS}, got {max_rounds!r}")
    if mode not in MODES:
        raise ConfigError(f"mode must be one of {', '.join(map(repr, MODES))}, got {mode!r}")


@checked_args
def search_diversified(client: Any, index: str, body: Mapping[str, Any] | None = None, *, size: int = 10,
                       mode: str = "drop", config: FingerprintConfig | None = None,
                       thresholds: Thresholds | ThresholdOverrides | None = None, overfetch: float = 3.0,
                       max_rounds: int = 4, fingerprinter: Fingerprinter | None = None,
                       text_field: str = "text") -> dict[str, Any]:
    """Run a search and return ``size`` hits with near-duplicates dropped (or demoted or grouped), by the
    index's own rule: ``config`` and ``thresholds`` default to what the index was built with.

    ``body`` is a search body (``{"query": ...}``); ``size`` in it is replaced, and ``from`` in it is the page's
    offset among the diversified hits (page 2 of 10: ``"from": 10``). The first request over-fetches
    ``(from + size) * overfetch`` hits; when too many were duplicates to fill the page, the window doubles
    (at most ``max_rounds`` requests, never past 10,000 hits). The response is the last search response with
    ``hits.hits`` replaced and a ``diversified`` summary added. The index's config is read again whenever
    the indices behind ``index`` are other ones than at the last call (deleted and created again).

    Raises:
        ConfigError: ``size`` not a whole number from 1 to 10,000, ``overfetch`` not a number from 1 to
            10,000, ``max_rounds`` not a whole number from 1 to `MAX_ROUNDS`, an unknown ``mode``, ``from``
            not a whole number >= 0 or past 10,000 hits with ``size``; indices of different configs.
        InputError: a hit whose stored sketch cannot be read (see `esdedup.search.diversify.diversify`).

    Example:
        >>> resp = search_diversified(es, "news", {"query": {"match": {"text": "台胞证"}}}, size=10)  # doctest: +SKIP
    """
    _check(client, size, overfetch, mode, max_rounds)
    client = opensearch.wrap(client)  # an opensearch-py client answers as an Elasticsearch one
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


@checked_args
async def async_search_diversified(client: Any, index: str, body: Mapping[str, Any] | None = None, *,
                                   size: int = 10, mode: str = "drop", config: FingerprintConfig | None = None,
                                   thresholds: Thresholds | ThresholdOverrides | None = None,
                                   overfetch: float = 3.0, max_rounds: int = 4,
                                   fingerprinter: Fingerprinter | None = None,
                                   text_field: str = "text") -> dict[str, Any]:
    """`search_diversified` for ``AsyncElasticsearch`` (or opensearch-py's ``AsyncOpenSearch``)."""
    _check(client, size, overfetch, mode, max_rounds)
    client = opensearch.wrap(client)
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
