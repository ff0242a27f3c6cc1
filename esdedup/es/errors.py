"""The one map from Elasticsearch client exceptions to esdedup's typed errors, and the one reader of an error
answer's reason.

Every request esdedup sends runs inside `es_errors`, so that a refused credential, a missing index, a TLS
failure or a proxy's error page reads the same whichever part of esdedup sent the request, and no secret
(API key, password) reaches the message.
"""
from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from esdedup.errors import CertificateError, ConnectionFailed, IndexNotFound, StoreError
from esdedup.es import versions
from esdedup.util.redact import redact

_HTML_TITLE = re.compile(r"(?is)<title>(.*?)</title>")
_HTML_TAG = re.compile(r"<[^>]+>")


@contextlib.contextmanager
def es_errors(where: str, secrets: Sequence[str | None] = ()) -> Iterator[None]:
    """Turn client exceptions into esdedup's typed errors, with secrets removed from the message."""
    import elasticsearch as es

    try:
        yield
    except es.AuthenticationException:
        raise ConnectionFailed(f"{where}: Elasticsearch refused the credentials (401)") from None
    except es.AuthorizationException as exc:
        raise ConnectionFailed(f"{where}: not allowed (403): {redact(str(exc.message), secrets)}") from None
    except es.NotFoundError as exc:
        raise IndexNotFound(f"{where}: not found: {redact(str(exc.message), secrets)}") from None
    except es.ApiError as exc:
        major = versions.refused_major(exc)
        if major is not None:  # the server refuses this client's major (e.g. a 9.x client, an 8.x server)
            raise versions.mismatch_error(where, f"{major}.x") from None
        reason = redact(api_reason(exc), secrets)
        if "SSL certificate" in reason:  # a TLS-terminating proxy asks for the client's certificate
            raise CertificateError(f"{where}: Elasticsearch answered {exc.meta.status}: {reason} (the server "
                                   "requires a client certificate)", needs="client_cert") from None
        raise StoreError(f"{where}: Elasticsearch answered {exc.meta.status}: {reason}") from None
    except es.SerializationError as exc:
        raise StoreError(f"{where}: could not encode or decode a request: {redact(str(exc), secrets)}") from None
    except es.TransportError as exc:
        # ConnectionError, ConnectionTimeout, TLS errors: the cause is what matters, not the stack.
        reason = redact(str(exc.message if hasattr(exc, "message") else exc), secrets)
        if "CERTIFICATE_VERIFY_FAILED" in reason:
            raise CertificateError(f"{where}: TLS certificate verification failed ({reason})", needs="ca") from None
        raise ConnectionFailed(f"{where}: cannot reach Elasticsearch: {reason}") from None


def api_reason(exc: Any) -> str:
    """The reason of an error answer: its root cause's reason for a JSON error; for a non-JSON answer (a
    proxy's HTML page) its title, else its first characters without the markup."""
    body = getattr(exc, "body", None)
    if isinstance(body, (str, bytes)) and body:
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        m = _HTML_TITLE.search(text)
        return " ".join((m.group(1) if m else _HTML_TAG.sub(" ", text)).split())[:200]
    if isinstance(body, Mapping) and "error" in body:
        return error_reason(body["error"])
    return str(getattr(exc, "message", exc))


def error_reason(error: Any) -> str:
    """The reason of an Elasticsearch error object (an answer's ``error``, one ``_msearch`` response's):
    its first root cause's reason, else its own reason, else the object as text."""
    if isinstance(error, Mapping):
        root = (error.get("root_cause") or [{}])[0]
        return str((root.get("reason") if isinstance(root, Mapping) else None) or error.get("reason") or error)
    return str(error)


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
