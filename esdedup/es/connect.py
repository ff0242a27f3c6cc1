"""Building an Elasticsearch client from options, environment variables or a config file, safely.

Sources, first wins: explicit arguments, then environment variables ``ESDEDUP_ES_URL``,
``ESDEDUP_ES_API_KEY``, ``ESDEDUP_ES_USER`` / ``ESDEDUP_ES_PASSWORD``, ``ESDEDUP_ES_CA_CERTS``,
``ESDEDUP_ES_TIMEOUT``, then a JSON config file (``ESDEDUP_CONFIG`` or ``~/.config/esdedup/config.json``) with the same keys in lower
case without the prefix (``{"es_url": ..., "api_key": ...}``). TLS certificates are verified unless
``verify_certs=False`` is given explicitly. Secrets never reach logs or error messages (`esdedup.util.redact`).
"""
from __future__ import annotations

import json
import logging
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import SplitResult, unquote, urlsplit, urlunsplit

from esdedup.errors import ConfigError, ConnectionFailed
from esdedup.util.fieldtypes import check_fields, checked_args
from esdedup.util.redact import redact, redact_url
from esdedup.util.regular import open_binary, read_limited

log = logging.getLogger(__name__)

#: Seconds a request may wait for its answer unless ``request_timeout`` (``ESDEDUP_ES_TIMEOUT``, ``timeout`` in
#: the config file) says otherwise: a bulk request of a loaded node needs some. The one timeout of a request:
#: the transport bounds each attempt as a whole (urllib3's total: connecting and reading), and `client_kwargs`
#: tries a timed-out request again ``max_retries`` times.
DEFAULT_REQUEST_TIMEOUT = 30.0
#: The longest request timeout accepted.
MAX_REQUEST_TIMEOUT = 3600.0
#: Seconds an aggregation over a whole index may take (`aggregation_timeout`): the counts of a key field's
#: shared values read every document's keys, minutes at ten million documents on a loaded cluster, which a
#: bulk request's timeout would cut (and each retry would start again).
AGGREGATION_TIMEOUT = 600.0
#: The largest settings file read (a few keys: anything larger is not one).
SETTINGS_FILE_LIMIT = 1 << 20


@dataclass(frozen=True)
class ConnectionSettings:
    url: str
    api_key: str | None = field(default=None, repr=False)
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    ca_certs: str | None = None
    verify_certs: bool = True
    client_cert: str | None = None
    client_key: str | None = None
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    #: ``elasticsearch`` or ``opensearch``; None: the server says which (`esdedup.es.opensearch.detect_engine`).
    engine: str | None = None

    def __post_init__(self) -> None:
        check_fields(self, owner="ConnectionSettings field")  # api_key and password: their types only

    @property
    def secrets(self) -> list[str | None]:
        return [self.api_key, self.password]

    @property
    def hosts(self) -> list[str]:
        """The node URLs (``url`` may list several, comma-separated: the client spreads requests over
        them and fails over when one does not answer)."""
        return self.url.split(",")

    @property
    def display_url(self) -> str:
        return ",".join(redact_url(u) for u in self.hosts)

    def redact(self, text: str) -> str:
        return redact(text, self.secrets)


def _file_settings() -> dict[str, Any]:
    path = Path(os.environ.get("ESDEDUP_CONFIG") or Path.home() / ".config" / "esdedup" / "config.json")
    if not path.exists():
        return {}
    try:
        with open_binary(path) as f:  # a FIFO or a device is refused, not read until it ends
            raw = read_limited(f, SETTINGS_FILE_LIMIT)
        if isinstance(raw, int):
            raise ConfigError(f"config file {path} has {raw} bytes: not a settings file (at most "
                              f"{SETTINGS_FILE_LIMIT} bytes)")
        data = json.loads(raw.decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a JSON object")
    return data


def check_client(client: Any, what: str) -> None:
    """Raise ConfigError unless ``client`` looks like an Elasticsearch client (it has the ``search`` and
    ``indices`` an ``elasticsearch.Elasticsearch`` or ``AsyncElasticsearch`` has): a URL or None passed in its
    place fails here, by name, not as an AttributeError at the first request."""
    if not (hasattr(client, "search") and hasattr(client, "indices")):
        shown = repr(client) if len(repr(client)) <= 40 else repr(client)[:37] + "..."
        raise ConfigError(f"{what}: client must be an elasticsearch.Elasticsearch client, got "
                          f"{type(client).__name__} {shown}" + ("; to name a server by its URL, give es_url"
                                                               if isinstance(client, str) else ""))


@checked_args
def resolve_settings(url: str | None = None, *, api_key: str | None = None, username: str | None = None,
                     password: str | None = None, ca_certs: str | None = None, verify_certs: bool = True,
                     client_cert: str | None = None, client_key: str | None = None,
                     request_timeout: float | None = None, engine: str | None = None) -> ConnectionSettings | None:
    """Merge arguments, environment and config file; None when no Elasticsearch URL is given anywhere
    (the caller then uses the embedded local store). ``request_timeout`` (seconds each request may wait for
    its answer) comes from the argument, ``ESDEDUP_ES_TIMEOUT`` or the config file's ``timeout``, else
    `DEFAULT_REQUEST_TIMEOUT`. ``engine`` (``ESDEDUP_ENGINE``, the config file's ``engine``): ``elasticsearch``,
    ``opensearch`` or ``auto`` (None, the default: the server says which), for a proxy that hides the
    product."""
    env, conf = os.environ, _file_settings()

    def pick(arg: Any, env_name: str, conf_name: str) -> Any:
        if arg is not None:
            return arg
        return env.get(env_name) or conf.get(conf_name)

    url = pick(url, "ESDEDUP_ES_URL", "es_url")
    if not url:
        return None
    username = pick(username, "ESDEDUP_ES_USER", "username")
    password = pick(password, "ESDEDUP_ES_PASSWORD", "password")
    hosts: list[str] = []
    schemes, in_urls = set(), set()
    for one in (u.strip() for u in url.split(",")):
        parts = _url_parts(one)
        schemes.add(parts.scheme)
        if parts.username is not None:
            # Credentials inside the URL: move them out so the URL itself can be shown.
            in_urls.add((unquote(parts.username), unquote(parts.password or "")))
            netloc = parts.netloc.rpartition("@")[2]  # host and port as written ([::1] keeps its brackets)
            one = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
        if one.rstrip("/") not in hosts:  # a node named twice is one node
            hosts.append(one.rstrip("/"))
    if len(schemes) > 1:
        raise ConfigError("Elasticsearch URLs mix http and https; give the nodes of one cluster the same scheme")
    if len(in_urls) > 1:
        raise ConfigError("Elasticsearch URLs carry different credentials; give one user for the cluster")
    if in_urls:
        url_user, url_password = in_urls.pop()
        username, password = username or url_user, password or url_password
    return ConnectionSettings(
        url=",".join(hosts),
        api_key=pick(api_key, "ESDEDUP_ES_API_KEY", "api_key"),
        username=username, password=password,
        ca_certs=pick(ca_certs, "ESDEDUP_ES_CA_CERTS", "ca_certs"),
        verify_certs=verify_certs,
        client_cert=pick(client_cert, "ESDEDUP_ES_CLIENT_CERT", "client_cert"),
        client_key=pick(client_key, "ESDEDUP_ES_CLIENT_KEY", "client_key"),
        request_timeout=_timeout(pick(request_timeout, "ESDEDUP_ES_TIMEOUT", "timeout")),
        engine=_engine(pick(engine, "ESDEDUP_ENGINE", "engine")),
    )


def _engine(value: Any) -> str | None:
    """The engine asked for (None: the server says which), or ConfigError."""
    if value is None or value == "" or value == "auto":
        return None
    if value not in ("elasticsearch", "opensearch"):
        raise ConfigError(f"the engine must be elasticsearch, opensearch or auto, got {str(value)[:40]!r}")
    return str(value)


def _timeout(value: Any) -> float:
    """A request timeout in seconds: a number in (0, `MAX_REQUEST_TIMEOUT`], or ConfigError."""
    if value is None or value == "":
        return DEFAULT_REQUEST_TIMEOUT
    try:
        seconds = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        seconds = math.nan
    if not 0 < seconds <= MAX_REQUEST_TIMEOUT:
        raise ConfigError(f"the Elasticsearch request timeout must be a number of seconds above 0 and at most "
                          f"{MAX_REQUEST_TIMEOUT:g}, got {str(value)[:40]!r}")
    return seconds


def _url_parts(url: str) -> SplitResult:
    """One node's URL taken apart, or ConfigError (without the URL's credentials) when it is not an
    http(s)://host[:port] URL with a port from 1 to 65535."""

    def bad(why: str) -> ConfigError:
        return ConfigError(f"Elasticsearch URL must look like http(s)://host:port (several: comma-separated), "
                           f"got {redact_url(url)!r}: {why}")

    try:
        parts = urlsplit(url)
        port = parts.port  # parsed only when asked for: a port that is not a number raises here
    except ValueError as exc:  # "Invalid IPv6 URL", "Port out of range 0-65535", "Port could not be cast..."
        raise bad(str(exc)[:1].lower() + str(exc)[1:]) from None
    if parts.scheme not in ("http", "https"):
        raise bad(f"the scheme is {parts.scheme!r}" if parts.netloc else "no http:// or https:// before the host")
    if not parts.hostname:
        raise bad("no host")
    if port == 0:
        raise bad("port 0")
    return parts


def aggregation_timeout(request_timeout: float | None) -> float:
    """The timeout of an aggregation over a whole index: the connection's request timeout (None: unknown, a
    caller's own client), or `AGGREGATION_TIMEOUT` where that is longer.

    >>> aggregation_timeout(30.0), aggregation_timeout(None), aggregation_timeout(3600.0)
    (600.0, 600.0, 3600.0)
    """
    return max(request_timeout or 0.0, AGGREGATION_TIMEOUT)


def client_kwargs(s: ConnectionSettings) -> dict[str, Any]:
    kw: dict[str, Any] = {
        "request_timeout": s.request_timeout,
        # Whole-request retries on gateway errors and timeouts; per-document 429s are retried by bulk.
        "retry_on_status": (502, 503, 504),
        "retry_on_timeout": True,
        "max_retries": 3,
    }
    if s.api_key:
        kw["api_key"] = s.api_key
    elif s.username is not None:
        kw["basic_auth"] = (s.username, s.password or "")
    if s.url.startswith("https"):
        kw["verify_certs"] = s.verify_certs
        if s.ca_certs:
            kw["ca_certs"] = s.ca_certs
        if s.client_cert:
            kw["client_cert"] = s.client_cert
        if s.client_key:
            kw["client_key"] = s.client_key
        if not s.verify_certs:
            kw["ssl_show_warn"] = False
            log.warning("TLS certificate verification is OFF for %s", s.display_url)
    return kw


def make_client(s: ConnectionSettings, *, async_: bool = False):
    """An `Elasticsearch` (or `AsyncElasticsearch`) client for the settings."""
    import elasticsearch

    from esdedup.es.serializer import ResponseJson

    cls = elasticsearch.AsyncElasticsearch if async_ else elasticsearch.Elasticsearch
    try:
        return cls(s.hosts, serializer=ResponseJson(), **client_kwargs(s))
    except (ValueError, TypeError) as exc:
        raise ConnectionFailed(f"cannot configure a client for {s.display_url}: {s.redact(str(exc))}") from exc
