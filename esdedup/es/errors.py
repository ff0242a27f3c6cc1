"""The one map from Elasticsearch client exceptions to esdedup's typed errors.

Every request esdedup sends runs inside `es_errors`, so that a refused credential, a missing index, a TLS
failure or a proxy's error page reads the same whichever part of esdedup sent the request, and no secret
(API key, password) reaches the message. How an answer's reason is read is `esdedup.es.answers`.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

from esdedup.errors import CertificateError, ConnectionFailed, IndexNotFound, RequestTimedOut, StoreError
from esdedup.es import versions
from esdedup.es.answers import api_reason, asks_for_a_client_certificate, with_memory_hint
from esdedup.util.redact import redact


@contextlib.contextmanager
def es_errors(where: str, secrets: Sequence[str | None] = ()) -> Iterator[None]:
    """Turn client exceptions into esdedup's typed errors, with secrets removed from the message."""
    import elasticsearch as es

    try:
        yield
    except es.AuthenticationException:
        raise ConnectionFailed(f"{where}: Elasticsearch refused the credentials (401)") from None
    except es.AuthorizationException as exc:
        raise ConnectionFailed(f"{where}: not allowed (403): {redact(api_reason(exc), secrets)}") from None
    except es.NotFoundError as exc:
        raise IndexNotFound(f"{where}: not found: {redact(api_reason(exc), secrets)}") from None
    except es.ApiError as exc:
        major = versions.refused_major(exc)
        if major is not None:  # the server refuses this client's major (e.g. a 9.x client, an 8.x server)
            raise versions.mismatch_error(where, f"{major}.x") from None
        reason = redact(api_reason(exc), secrets)
        if exc.meta.status == 400 and cancelled_with_its_channel(reason):
            raise timed_out(where) from None
        if asks_for_a_client_certificate(reason):
            raise CertificateError(f"{where}: Elasticsearch answered {exc.meta.status}: {reason} (the server "
                                   "requires a client certificate)", needs="client_cert") from None
        raise StoreError(f"{where}: Elasticsearch answered {exc.meta.status}: {with_memory_hint(reason)}") from None
    except es.ConnectionTimeout as exc:
        if read_timed_out(exc):
            raise timed_out(where) from None
        raise ConnectionFailed(f"{where}: cannot reach Elasticsearch: {redact(str(exc.message), secrets)}") from None
    except es.SerializationError as exc:
        raise StoreError(f"{where}: could not encode or decode a request: {redact(str(exc), secrets)}") from None
    except es.TransportError as exc:
        # ConnectionError, ConnectionTimeout, TLS errors: the cause is what matters, not the stack.
        reason = redact(str(exc.message if hasattr(exc, "message") else exc), secrets)
        if "CERTIFICATE_VERIFY_FAILED" in reason:
            raise CertificateError(f"{where}: TLS certificate verification failed ({reason})", needs="ca") from None
        raise ConnectionFailed(f"{where}: cannot reach Elasticsearch: {reason}") from None


def read_timed_out(exc: BaseException) -> bool:
    """Whether a connection timeout came while waiting for the answer (urllib3's read timeout, the cause the
    client chains, or the one the OpenSearch client's carries), not while connecting."""
    causes = [exc.__cause__, *getattr(exc, "errors", ())]
    return any(type(c).__name__ == "ReadTimeoutError" for c in causes)


def timed_out(where: str) -> RequestTimedOut:
    return RequestTimedOut(f"{where}: no answer within the request timeout: a loaded node, or a request that reads "
                           "a large index whole, needs a longer one")


def cancelled_with_its_channel(reason: str) -> bool:
    """Whether a 400's reason says the node cancelled the request because an HTTP connection closed: the client
    stopped waiting for it (its request timeout), or for a request whose work it shared (two searches that
    load one field's ordinals wait on one load, and the first one's cancellation fails both)."""
    return "task cancelled" in reason and "http channel" in reason and "closed" in reason
