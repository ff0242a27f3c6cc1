"""OpenSearch as the store's server: an ``opensearch-py`` client dressed as the part of the Elasticsearch client
that esdedup calls, so that one store implementation (`esdedup.store.elastic`) serves both engines.

Only the engine layer differs. `OpenSearchClient` sends each request through opensearch-py's transport (its
connection pool, retries, basic auth and TLS) and answers as the Elasticsearch client does: a dict with
``.body``, and the Elasticsearch client's exceptions for error answers and transport failures, so that
`esdedup.es.errors` maps them to esdedup's typed errors exactly as it does for Elasticsearch. What the two
servers do differently is decided here, each in one place:

- the product: OpenSearch answers ``GET /`` with ``version.distribution`` ``opensearch`` (Elasticsearch's
  integ-test distribution answers 405 there, a full one names no distribution); `detect_engine`;
- point-in-time reads: OpenSearch's PIT API has its own paths and names (``pit_id``), and OpenSearch has no
  ``_shard_doc`` sort: a PIT scan sorts by ``_id`` instead, unique across shards (`OpenSearchClient.search`);
- the TF vector: OpenSearch has no ``dense_vector`` (its ``knn_vector`` needs the k-NN plugin, which the
  distributions esdedup tests are without): the vector is kept in ``_source`` only, under a non-indexed
  ``float`` field, and kNN lookups are refused (`opensearch_mapping`, `OpenSearchClient.search`);
- API keys: OpenSearch has none (its security plugin takes basic auth or client certificates).
"""
from __future__ import annotations

import copy
import threading
import warnings
from collections.abc import Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import quote

from esdedup.errors import ConfigError, ConnectionFailed

#: The engines esdedup talks to.
ENGINES = ("elasticsearch", "opensearch")
#: OpenSearch majors esdedup is tested with.
SUPPORTED_MAJORS = (2, 3)
#: Seconds the engine probe (`detect_engine`) waits for ``GET /``: an answer from a live node is immediate, and
#: a server that does not answer is left to the Elasticsearch path to report, as it did before the probe.
DETECT_TIMEOUT = 5.0

#: Connections opensearch-py keeps to a node: a sliced point-in-time read asks at once, and an ingest writes
#: while it looks up (urllib3 keeps one by default, and warns of every other it opens and drops).
POOL_MAXSIZE = 10

#: Search arguments of the Elasticsearch client that are URL parameters (everything else goes in the body).
_SEARCH_PARAMS = frozenset({
    "filter_path", "ignore_unavailable", "allow_no_indices", "allow_partial_search_results", "preference",
    "routing", "rest_total_hits_as_int", "search_type", "typed_keys", "batched_reduce_size",
    "pre_filter_shard_size", "max_concurrent_shard_requests", "expand_wildcards", "request_cache",
    "ccs_minimize_roundtrips", "scroll", "source_excludes", "source_includes", "request_timeout",
})


def installed() -> bool:
    try:
        import opensearchpy  # noqa: F401
    except ImportError:
        return False
    return True


def require_client() -> None:
    """Raise ConfigError when opensearch-py is not installed."""
    if not installed():
        raise ConfigError('the server is OpenSearch and its Python client opensearch-py is not installed: '
                          'python -m pip install "opensearch-py>=3,<4" (the extra esdedup[opensearch])')


class Answer(dict):  # type: ignore[type-arg]
    """A JSON object answer, read as the Elasticsearch client's ``ObjectApiResponse`` is (``resp["hits"]``,
    ``resp.body``)."""

    @property
    def body(self) -> dict[str, Any]:
        return self


def _path(*parts: str) -> str:
    return "/" + "/".join(quote(str(p), safe=",*") for p in parts)


def _bool_params(params: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (str(v).lower() if isinstance(v, bool) else ",".join(v) if isinstance(v, (list, tuple)) else v)
            for k, v in params.items() if v is not None}


def _es_error(exc: Exception) -> Exception:
    """The Elasticsearch client's exception for an opensearch-py one (same status, same body)."""
    import elastic_transport
    import elasticsearch as es
    import opensearchpy.exceptions as ose

    if isinstance(exc, ose.ConnectionTimeout):
        return es.ConnectionTimeout(f"connection timed out: {exc.info}",
                                    errors=(exc.info,) if isinstance(exc.info, Exception) else ())
    if isinstance(exc, ose.ConnectionError):  # SSLError too: its cause names CERTIFICATE_VERIFY_FAILED
        return es.ConnectionError(f"{type(exc.info).__name__}: {exc.info}")
    if isinstance(exc, ose.SerializationError):
        return es.SerializationError(str(exc))
    assert isinstance(exc, ose.TransportError)
    status = exc.status_code if isinstance(exc.status_code, int) else 500
    body = exc.info
    message = str(body)
    if isinstance(body, Mapping) and "error" in body:
        error = body["error"]
        message = str(error["type"] if isinstance(error, Mapping) and "type" in error else error)
    meta = elastic_transport.ApiResponseMeta(status=status, http_version="1.1",
                                             headers=elastic_transport.HttpHeaders(), duration=0.0,
                                             node=elastic_transport.NodeConfig("http", "opensearch", 80))
    cls = es.exceptions.HTTP_EXCEPTIONS.get(status, es.ApiError)
    return cls(message=message, meta=meta, body=body)  # type: ignore[no-any-return]


class _Namespace:
    def __init__(self, client: OpenSearchClient) -> None:
        self._c = client


class _Indices(_Namespace):
    def create(self, *, index: str, settings: Any = None, mappings: Any = None) -> Answer:
        body = {k: v for k, v in (("settings", settings), ("mappings", opensearch_mapping(mappings))) if v}
        return self._c.request("PUT", _path(index), body=body)

    def get_mapping(self, *, index: str) -> Answer:
        return self._c.request("GET", _path(index, "_mapping"))

    def put_mapping(self, *, index: str, **body: Any) -> Answer:
        if "meta" in body:  # the Elasticsearch client's name of _meta
            body["_meta"] = body.pop("meta")
        return self._c.request("PUT", _path(index, "_mapping"), body=opensearch_mapping(body))

    def delete(self, *, index: str, ignore_unavailable: bool | None = None) -> Answer:
        return self._c.request("DELETE", _path(index), params={"ignore_unavailable": ignore_unavailable})

    def refresh(self, *, index: str) -> Answer:
        return self._c.request("POST", _path(index, "_refresh"))

    def stats(self, *, index: str, metric: str | None = None) -> Answer:
        return self._c.request("GET", _path(index, "_stats", *([metric] if metric else [])))

    def get_settings(self, *, index: str, name: str | None = None, filter_path: Any = None) -> Answer:
        return self._c.request("GET", _path(index, "_settings", *([name] if name else [])),
                               params={"filter_path": filter_path})

    def put_settings(self, *, index: str, settings: Any) -> Answer:
        return self._c.request("PUT", _path(index, "_settings"), body=settings)


class _Ingest(_Namespace):
    def put_pipeline(self, *, id: str, **body: Any) -> Answer:  # noqa: A002 - the Elasticsearch client's name
        return self._c.request("PUT", _path("_ingest", "pipeline", id), body=body)


class OpenSearchClient:
    """An opensearch-py client (``opensearchpy.OpenSearch``) answering the calls esdedup makes of an
    Elasticsearch client (see the module docstring). The caller owns the wrapped client."""

    engine = "opensearch"

    def __init__(self, client: Any, *, request_timeout: float | None = None) -> None:
        _quiet_the_id_sort()
        self.opensearch = client
        self._timeout = request_timeout
        self.indices = _Indices(self)
        self.ingest = _Ingest(self)

    # -- the transport -----------------------------------------------------------------------------
    def options(self, *, request_timeout: float | None = None, **_: Any) -> OpenSearchClient:
        """A view with another request timeout (other options of the Elasticsearch client's are not used
        on OpenSearch)."""
        return OpenSearchClient(self.opensearch, request_timeout=request_timeout or self._timeout)

    def request(self, method: str, path: str, *, params: Mapping[str, Any] | None = None, body: Any = None,
                headers: Mapping[str, str] | None = None) -> Answer:
        import opensearchpy.exceptions as ose

        try:
            resp = self.opensearch.transport.perform_request(
                method, path, params=_bool_params(params or {}) or None, body=body, headers=headers,
                timeout=self._timeout)
        except (ose.TransportError, ose.SerializationError) as exc:
            raise _es_error(exc) from None
        return Answer(resp) if isinstance(resp, Mapping) else resp  # type: ignore[no-any-return]

    def perform_request(self, method: str, path: str, *, params: Mapping[str, Any] | None = None,
                        headers: Mapping[str, str] | None = None, body: Any = None) -> Answer:
        return self.request(method, path, params=params, body=body, headers=headers)

    def close(self) -> None:
        self.opensearch.close()

    # -- the server --------------------------------------------------------------------------------
    def check_server(self, where: str) -> str:
        """The OpenSearch version of the node that answers; ConfigError for a server that is not OpenSearch or
        of a major esdedup is not tested with."""
        root = self.options(request_timeout=min(DETECT_TIMEOUT * 2, self._timeout or DETECT_TIMEOUT * 2)).request("GET", "/")
        version = root.get("version") if isinstance(root, Mapping) else None
        if not isinstance(version, Mapping) or version.get("distribution") != "opensearch":
            raise ConfigError(f"{where}: the server is not OpenSearch (its answer to GET / names no OpenSearch "
                              "distribution); check the URL, or choose the engine elasticsearch")
        number = str(version.get("number", ""))
        major = number.split(".", 1)[0]
        if not major.isdigit() or int(major) not in SUPPORTED_MAJORS:
            raise ConfigError(f"{where}: the server is OpenSearch {number}; esdedup works with OpenSearch "
                              f"{' and '.join(f'{m}.x' for m in SUPPORTED_MAJORS)}")
        return number

    # -- documents ---------------------------------------------------------------------------------
    def search(self, *, index: str | None = None, **kw: Any) -> Answer:
        path, params, body, timeout = _search_request(index, kw)
        client = self if timeout is None else self.options(request_timeout=timeout)
        return client.request("POST", path, params=params, body=body)

    def msearch(self, *, searches: Any, index: str | None = None, **params: Any) -> Answer:
        body = searches if isinstance(searches, (bytes, str)) else _ndjson(searches)
        return self.request("POST", _path(index, "_msearch") if index else "/_msearch", params=params, body=body,
                            headers={"content-type": "application/x-ndjson"})

    def bulk(self, *, operations: Any, index: str | None = None, **params: Any) -> Answer:
        body = operations if isinstance(operations, (bytes, str)) else _ndjson(operations)
        return self.request("POST", _path(index, "_bulk") if index else "/_bulk", params=params, body=body,
                            headers={"content-type": "application/x-ndjson"})

    def get(self, *, index: str, id: str, source_excludes: Any = None, **params: Any) -> Answer:  # noqa: A002
        return self.request("GET", _path(index, "_doc", id), params={"_source_excludes": source_excludes, **params})

    def mget(self, *, index: str, ids: Any = None, docs: Any = None, source_excludes: Any = None,
             source_includes: Any = None, **params: Any) -> Answer:
        body = {"ids": list(ids)} if ids is not None else {"docs": docs}
        return self.request("POST", _path(index, "_mget"), body=body,
                            params={"_source_excludes": source_excludes, "_source_includes": source_includes,
                                    **params})

    def count(self, *, index: str, query: Any = None) -> Answer:
        return self.request("POST", _path(index, "_count"), body={"query": query} if query is not None else None)

    def open_point_in_time(self, *, index: str, keep_alive: str) -> Answer:
        resp = self.request("POST", _path(index, "_search", "point_in_time"), params={"keep_alive": keep_alive})
        return Answer(id=resp["pit_id"])

    def close_point_in_time(self, *, id: str) -> Answer:  # noqa: A002 - the Elasticsearch client's name
        return self.request("DELETE", "/_search/point_in_time", body={"pit_id": [id]})

    def streaming_bulk(self, actions: Iterable[dict[str, Any]], **kw: Any) -> Iterator[tuple[bool, Any]]:
        """opensearch-py's ``streaming_bulk`` (the Elasticsearch client's, argument for argument), its
        exceptions the Elasticsearch client's."""
        import opensearchpy.exceptions as ose
        from opensearchpy import helpers

        try:
            yield from helpers.streaming_bulk(self.opensearch, actions, **kw)
        except (ose.TransportError, ose.SerializationError) as exc:
            raise _es_error(exc) from None


def _quiet_the_id_sort() -> None:
    """OpenSearch answers a sort on ``_id`` (the point-in-time scans' order, see `OpenSearchClient.search`) with
    a deprecation header, which opensearch-py turns into a Python warning on every scan: chosen knowingly, it is
    not shown. (Added again for each client: the same filter replaces itself, and a harness that resets the
    filters between runs gets it back.)"""
    warnings.filterwarnings("ignore", message="Loading the fielddata on the _id field is deprecated")


def _search_request(index: str | None, kw: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any], Any]:
    """The path, URL parameters, body and request timeout of a search asked with the Elasticsearch client's
    arguments."""
    params = {k: kw.pop(k) for k in list(kw) if k in _SEARCH_PARAMS}
    for k in ("source_excludes", "source_includes"):
        if k in params:
            params["_" + k] = params.pop(k)
    timeout = params.pop("request_timeout", None)
    # An argument given as None is left out, as the Elasticsearch client leaves it out (OpenSearch refuses a
    # null `search_after`, the first page of a point-in-time walk).
    body = {("from" if k == "from_" else k): v for k, v in kw.items() if v is not None}
    if "knn" in body:
        raise ConfigError("kNN lookups are not available on OpenSearch: esdedup keeps the TF vector in _source "
                          "there (OpenSearch's k-NN plugin is not supported)")
    if "pit" in body and body.get("sort") == [{"_shard_doc": "asc"}]:
        # OpenSearch has no _shard_doc: _id is as unique, across shards too, within a point in time.
        body["sort"] = [{"_id": "asc"}]
    return _path(index, "_search") if index else "/_search", params, body, timeout


class _AsyncIndices:
    def __init__(self, client: AsyncOpenSearchClient) -> None:
        self._c = client

    async def get_mapping(self, *, index: str) -> Answer:
        return await self._c.request("GET", _path(index, "_mapping"))

    async def get_settings(self, *, index: str, name: str | None = None, filter_path: Any = None) -> Answer:
        return await self._c.request("GET", _path(index, "_settings", *([name] if name else [])),
                                     params={"filter_path": filter_path})


class AsyncOpenSearchClient:
    """`OpenSearchClient` for ``opensearchpy.AsyncOpenSearch``: the calls `async_search_diversified` makes."""

    engine = "opensearch"

    def __init__(self, client: Any) -> None:
        _quiet_the_id_sort()
        self.opensearch = client
        self.indices = _AsyncIndices(self)

    async def request(self, method: str, path: str, *, params: Mapping[str, Any] | None = None,
                      body: Any = None, timeout: Any = None) -> Answer:
        import opensearchpy.exceptions as ose

        try:
            resp = await self.opensearch.transport.perform_request(
                method, path, params=_bool_params(params or {}) or None, body=body, timeout=timeout)
        except (ose.TransportError, ose.SerializationError) as exc:
            raise _es_error(exc) from None
        return Answer(resp) if isinstance(resp, Mapping) else resp  # type: ignore[no-any-return]

    async def search(self, *, index: str | None = None, **kw: Any) -> Answer:
        path, params, body, timeout = _search_request(index, kw)
        return await self.request("POST", path, params=params, body=body, timeout=timeout)


def _ndjson(objs: Iterable[Any]) -> bytes:
    from esdedup.es.serializer import ndjson

    return ndjson(objs)


def opensearch_mapping(mappings: Any) -> Any:
    """A mapping as OpenSearch takes it: ``dense_vector`` fields become non-indexed ``float`` fields (the vector
    is read from ``_source``; see the module docstring)."""
    if not isinstance(mappings, Mapping):
        return mappings
    out = copy.deepcopy(dict(mappings))

    def walk(props: Any) -> None:
        if not isinstance(props, dict):
            return
        for name, spec in props.items():
            if isinstance(spec, dict):
                if spec.get("type") == "dense_vector":
                    props[name] = {"type": "float", "index": False, "doc_values": False}
                else:
                    walk(spec.get("properties"))

    walk(out.get("properties"))
    return out


def client_kwargs(settings: Any) -> dict[str, Any]:
    """opensearch-py's arguments for connection settings (`esdedup.es.connect.ConnectionSettings`)."""
    if settings.api_key:
        raise ConfigError("OpenSearch takes no API key: give a user and password (or a client certificate)")
    kw: dict[str, Any] = {"timeout": settings.request_timeout, "retry_on_status": (502, 503, 504),
                          "retry_on_timeout": True, "max_retries": 3, "http_compress": False,
                          "pool_maxsize": POOL_MAXSIZE}
    if settings.username is not None:
        kw["http_auth"] = (settings.username, settings.password or "")
    if settings.url.startswith("https"):
        kw.update(use_ssl=True, verify_certs=settings.verify_certs, ssl_show_warn=settings.verify_certs)
        if settings.ca_certs:
            kw["ca_certs"] = settings.ca_certs
        if settings.client_cert:
            kw["client_cert"] = settings.client_cert
        if settings.client_key:
            kw["client_key"] = settings.client_key
        if not settings.verify_certs:
            kw["ssl_assert_hostname"] = False
    return kw


def make_client(settings: Any) -> OpenSearchClient:
    """An `OpenSearchClient` for connection settings (`esdedup.es.connect.ConnectionSettings`)."""
    require_client()
    import opensearchpy

    kwargs = client_kwargs(settings)
    try:
        client = opensearchpy.OpenSearch(settings.hosts, **kwargs)
    except (ValueError, TypeError, opensearchpy.ImproperlyConfigured) as exc:
        raise ConnectionFailed(f"cannot configure a client for {settings.display_url}: "
                               f"{settings.redact(str(exc))}") from exc
    return OpenSearchClient(client, request_timeout=settings.request_timeout)


def wrap(client: Any) -> Any:
    """The client esdedup calls for a client a caller gives: an opensearch-py client wrapped in an
    `OpenSearchClient`, any other as it is."""
    if not (type(client).__module__.startswith("opensearchpy") and hasattr(client, "transport")):
        return client
    # One wrapper per client: what is cached per client (an index's config) then stays cached.
    wrapper = getattr(client, "_esdedup_client", None)
    if wrapper is None:
        wrapper = (AsyncOpenSearchClient(client) if type(client).__name__.startswith("Async")
                   else OpenSearchClient(client))
        client._esdedup_client = wrapper
    return wrapper


def detect_engine(es_client: Any, where: str) -> str:
    """``opensearch`` when the server answers ``GET /`` as OpenSearch does (``version.distribution``), else
    ``elasticsearch``, asked through the Elasticsearch client (its credentials and TLS settings; the same
    bound on the first answer as `esdedup.es.versions.server_version`): a server that refuses the request or
    answers otherwise is left to the Elasticsearch path, which reports it as it always has; one that does not
    answer is `NoAnswer` here, as it would be there."""
    import elasticsearch as es

    from esdedup.es import versions

    timeout = versions.first_answer_timeout(es_client)
    probe = es_client.options(request_timeout=timeout, max_retries=max(versions.node_count(es_client) - 1, 0))
    try:
        probe.perform_request("GET", "/", headers={"accept": "*/*"})
    except es.ConnectionTimeout:
        raise versions.no_answer(where, timeout) from None
    except es.UnsupportedProductError as exc:  # a 2xx answer without Elasticsearch's product header
        version = exc.body.get("version") if isinstance(exc.body, Mapping) else None
        if isinstance(version, Mapping) and version.get("distribution") == "opensearch":
            return "opensearch"
    except (es.ApiError, es.TransportError):
        pass
    return "elasticsearch"


class ChosenByTheServer:
    """The client of the engine the server turns out to be: the Elasticsearch client, or an `OpenSearchClient`
    when `detect_engine` finds OpenSearch. Chosen on first use (the store's first request, when it is opened),
    so that making a store sends nothing and a server's silence shows where it always did."""

    def __init__(self, settings: Any, where: str) -> None:
        self._settings, self._where = settings, where
        self._chosen: Any = None
        self._lock = threading.Lock()

    def chosen(self) -> Any:
        with self._lock:
            if self._chosen is None:
                from esdedup.es.connect import make_client as make_es_client

                es_client = make_es_client(self._settings)
                if detect_engine(es_client, self._where) == "opensearch":
                    es_client.close()
                    self._chosen = make_client(self._settings)
                else:
                    self._chosen = es_client
            return self._chosen

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_settings", "_where", "_chosen", "_lock"):
            raise AttributeError(name)  # copying or unpickling asks before __init__ ran: never a request
        return getattr(self.chosen(), name)
