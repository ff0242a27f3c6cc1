"""The Python client's major version must be the server's: one check when an index is opened, and one
clear error naming both versions and the pip command that installs the matching client.

Without the check the two mismatches behave differently, and neither says why: a 9.x server answers an
8.x client through REST API compatibility (requests go through, nothing says the pair is untested), and
an 8.x server refuses every request of a 9.x client with ``400 media_type_header_exception``. esdedup is
tested with matching majors only (8.x with 8.x, 9.x with 9.x), so both are refused.
"""
from __future__ import annotations

import json
import logging
import re
from typing import Any

from esdedup.errors import ClientVersionMismatch, NoAnswer, NotElasticsearch
from esdedup.es.answers import api_reason, asks_for_a_client_certificate, excerpt, page_summary

log = logging.getLogger(__name__)

#: Server major -> the pip requirement of the client that matches it (pyproject allows both).
CLIENT_FOR_SERVER = {8: "elasticsearch[async]>=8.15,<9", 9: "elasticsearch[async]>=9,<10"}
#: What an 8.x server says to a 9.x client: "Accept version must be either version 8 or 7, but found 9".
_REFUSED = re.compile(r"must be either version (\d+) or \d+, but found (\d+)")


def client_version() -> str:
    """The installed ``elasticsearch`` package's version, e.g. ``"8.19.3"``."""
    import elasticsearch

    return str(elasticsearch.__versionstr__)


def _major(version: str) -> int:
    head = version.split(".", 1)[0]
    return int(head) if head.isdigit() else -1


def mismatch_error(where: str, server_version: str) -> ClientVersionMismatch:
    """The error for a server whose major differs from the installed client's."""
    client = client_version()
    wanted = CLIENT_FOR_SERVER.get(_major(server_version))
    if wanted is None:
        fix = f"esdedup works with Elasticsearch {' and '.join(f'{m}.x' for m in CLIENT_FOR_SERVER)} servers only"
    else:
        fix = f'install the matching client: python -m pip install "{wanted}"'
    return ClientVersionMismatch(
        f"{where}: the Elasticsearch server is {server_version} but the Python client is elasticsearch "
        f"{client}; their major versions must match, so {fix}",
        client_version=client, server_version=server_version)


def refused_major(exc: Any) -> int | None:
    """The server's major when an API error is a server refusing the client's major (else None)."""
    body = getattr(exc, "body", None)
    if not isinstance(body, dict):
        return None
    error = body.get("error")
    if not isinstance(error, dict) or error.get("type") != "media_type_header_exception":
        return None
    cause = error.get("caused_by") or {}
    m = _REFUSED.search(str(cause.get("reason", "")) if isinstance(cause, dict) else "")
    return int(m.group(1)) if m else None


#: Seconds the first request to a server (its node's version) may take: a live node answers it from memory,
#: so a server that is silent this long will not answer the requests after it either.
FIRST_ANSWER_TIMEOUT = 10.0


def server_version(client: Any, where: str = "Elasticsearch") -> str | None:
    """The version of the node that answers, asked without a ``compatible-with`` header so that every
    server major answers every client major; None when the credentials may not see it (403).

    This is the first request to a server, so it is also where a server that is not Elasticsearch shows:
    an answer that is not Elasticsearch's (a web page, JSON without the node) is a `NotElasticsearch`, and
    a server that accepts the connection but does not answer within `FIRST_ANSWER_TIMEOUT` seconds (or the
    client's shorter request timeout; on each node given) is a `NoAnswer`."""
    import elasticsearch as es

    timeout = first_answer_timeout(client)
    probe = client.options(request_timeout=timeout, max_retries=max(node_count(client) - 1, 0))
    try:
        resp = probe.perform_request("GET", "/_nodes/_local", params={"filter_path": "nodes.*.version"},
                                     headers={"accept": "*/*"})
    except es.ConnectionTimeout:
        raise no_answer(where, timeout) from None
    except es.ApiError as exc:
        if isinstance(exc, es.AuthorizationException):
            log.debug("not allowed to read the node version (403); the client/server check is skipped")
            return None
        if isinstance(exc, es.AuthenticationException) or asks_for_a_client_certificate(api_reason(exc)):
            raise  # a node, or a proxy in front of one, that wants other credentials: the error map says which
        if not isinstance(exc.body, dict) or isinstance(exc, es.UnsupportedProductError):
            raise not_elasticsearch(where, f"it answered {exc.meta.status}: {api_reason(exc)}") from None
        raise
    nodes = resp.body.get("nodes") if isinstance(resp.body, dict) else None
    if not isinstance(nodes, dict) or not nodes or not all(isinstance(n, dict) for n in nodes.values()):
        shown = (page_summary(str(resp.body)) if not isinstance(resp.body, (dict, list))
                 else excerpt(json.dumps(resp.body, default=str), 80))
        raise not_elasticsearch(where, f"its answer to GET /_nodes/_local names no node: {shown}")
    versions = sorted({str(n.get("version")) for n in nodes.values()})
    return versions[0] if versions else None


def no_answer(where: str, timeout: float) -> NoAnswer:
    return NoAnswer(f"{where}: the server accepted the connection but did not answer within {timeout:g} s; "
                    "check that the URL names an Elasticsearch node", timeout=timeout)


def not_elasticsearch(where: str, what: str) -> NotElasticsearch:
    return NotElasticsearch(f"{where}: the server is not Elasticsearch ({what}); check the URL and port")


def first_answer_timeout(client: Any) -> float:
    """`FIRST_ANSWER_TIMEOUT`, or the client's own request timeout when that is shorter."""
    own = getattr(client, "_request_timeout", None)
    return min(FIRST_ANSWER_TIMEOUT, float(own)) if isinstance(own, (int, float)) and own > 0 else FIRST_ANSWER_TIMEOUT


def node_count(client: Any) -> int:
    try:
        return len(client.transport.node_pool.all())
    except AttributeError:  # a client of another shape: one node as far as we know
        return 1


def check_server(client: Any, where: str) -> None:
    """Raise `ClientVersionMismatch` unless the server's major is the installed client's (and
    `NotElasticsearch` or `NoAnswer` for a server that is not one, see `server_version`)."""
    if getattr(client, "engine", None) == "opensearch":  # its own versions and product: esdedup.es.opensearch
        client.check_server(where)
        return
    version = server_version(client, where)
    if version is not None and _major(version) != _major(client_version()):
        raise mismatch_error(where, version)
