"""Reading Elasticsearch's error answers: the reason of an API error (a JSON error's root cause, or a proxy's
HTML page as one line), of one `_msearch` response, of a refused bulk item, and whether a bulk item was
refused by the store rather than for its document. `esdedup.es.errors` maps errors with these; nothing here
raises."""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_HTML_TITLE = re.compile(r"(?is)<title>(.*?)</title>")
_HTML_TAG = re.compile(r"<[^>]+>")


#: The most characters of a server's answer an error message quotes.
EXCERPT_CHARS = 200
# What a terminal would act on or hide: C0 and C1 controls, DEL, zero-width and bidirectional marks.
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """A server's text as a short part of a one-line message: runs of white space as one space, control
    characters escaped (``\\x1b``), at most ``limit`` characters, the cut marked with "...". A server that is
    not Elasticsearch (or a hostile one) answers whatever it likes; the message quotes it, briefly."""
    flat = _CONTROLS.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), " ".join(text.split()))
    return flat if len(flat) <= limit else flat[:limit - 3] + "..."


def api_reason(exc: Any) -> str:
    """The reason of an error answer, as an `excerpt`: its root cause's reason for a JSON error; for a
    non-JSON answer (a proxy's HTML page) its title, else its first characters without the markup."""
    body = getattr(exc, "body", None)
    if isinstance(body, (str, bytes)) and body:
        return page_summary(body)
    if isinstance(body, Mapping) and "error" in body:
        return excerpt(error_reason(body["error"]))
    return excerpt(str(getattr(exc, "message", exc)))


def asks_for_a_client_certificate(reason: str) -> bool:
    """Whether an answer's reason is a TLS-terminating proxy's refusal of a request without the client
    certificate it requires (nginx: 400 "No required SSL certificate was sent")."""
    return "SSL certificate" in reason


def with_memory_hint(reason: str) -> str:
    """``reason``, and what to do when it is a node's circuit breaker refusing the memory a request needed (a
    client cannot make the request smaller than esdedup already cuts it)."""
    if "circuit_breaking_exception" not in reason and "Data too large" not in reason:
        return reason
    return (f"{reason} (a node's circuit breaker refused the memory this request needed: give the nodes a larger "
            "heap, or run it when they are less busy)")


def page_summary(body: str | bytes) -> str:
    """An answer that is not JSON (a web page) as one short line: its HTML title, else its first characters
    without the markup."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    m = _HTML_TITLE.search(text)
    return excerpt(m.group(1) if m else _HTML_TAG.sub(" ", text))


def error_reason(error: Any) -> str:
    """The reason of an Elasticsearch error object (an answer's ``error``, one ``_msearch`` response's):
    its first root cause's reason, else its own reason, else the object as text."""
    if isinstance(error, Mapping):
        root = (error.get("root_cause") or [{}])[0]
        return str((root.get("reason") if isinstance(root, Mapping) else None) or error.get("reason") or error)
    return str(error)


#: Bulk item errors that are the store's refusal, whatever the document: a write block (``index.blocks.write``,
#: ``read_only``, the flood-stage ``read_only_allow_delete``), an index that is gone or closed.
_REFUSALS = frozenset({"cluster_block_exception", "index_not_found_exception", "index_closed_exception"})


def refused_by_the_store(info: Mapping[str, Any]) -> bool:
    """Whether a failed bulk item was refused by the store rather than for its document: a block, a missing
    or closed index, an alias without a write index, credentials that may not write, a 429 or 5xx (once the
    retries are spent). Such a refusal says nothing about the document: it must be written again later."""
    status = int(info.get("status", 0) or 0)
    err = info.get("error")
    kind = str(err.get("type", "")) if isinstance(err, Mapping) else ""
    reason = str(err.get("reason", "")) if isinstance(err, Mapping) else str(err or "")
    return (status == 429 or status >= 500 or status in (401, 403, 404) or kind in _REFUSALS
            or "no write index is defined" in reason)


def bulk_reason(info: Mapping[str, Any]) -> str:
    """Why a bulk item was refused: ``type: reason`` and the reason of its cause, else its status."""
    err = info.get("error")
    if isinstance(err, Mapping):
        reason = f"{err.get('type', 'error')}: {err.get('reason', '')}"
        cause = err.get("caused_by")
        if isinstance(cause, Mapping) and cause.get("reason"):
            reason += f" ({cause.get('reason')})"
        return reason
    if err:
        return str(err)
    return f"status {info.get('status')}"
