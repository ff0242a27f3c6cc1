"""Typed errors. The library raises these; the CLI turns each into one line and an exit code.

Exit codes (see the CLI): 1 = failures in the data, 2 = usage/config, 3 = server/connection, 4 = a process of
the run was killed (`WorkerKilled`); a run stopped by a signal exits as the signal would end it (`Terminated`).
"""
from __future__ import annotations

import signal
from typing import Any


class EsdedupError(Exception):
    """Base class of every error esdedup raises on purpose."""

    exit_code = 1


class ConfigError(EsdedupError, ValueError):
    """A configuration value is invalid or two settings conflict."""

    exit_code = 2


class InputError(EsdedupError):
    """Input data cannot be read: bad encoding, malformed record, unreadable file."""

    exit_code = 1

    def __init__(self, message: str, *, source: str | None = None, location: str | None = None,
                 reason: str | None = None) -> None:
        super().__init__(message)
        self.source = source
        self.location = location
        self.reason = reason or message


class InputNotFound(InputError):
    """An input path given by the caller does not exist (a usage error: nothing was read)."""

    exit_code = 2


class DecodeError(InputError):
    """A file's bytes are not text in any encoding we accept (never guessed into mojibake)."""


class OutputError(EsdedupError):
    """A file esdedup writes (a dead-letter file, a checkpoint) cannot be written."""

    exit_code = 2


class Terminated(EsdedupError):
    """A run was stopped by SIGTERM or SIGINT after the batch it was writing; ``summary`` counts what was done.
    The exit code is that of a program the signal ends (143 for SIGTERM, 130 for SIGINT)."""

    exit_code = 143

    def __init__(self, message: str, *, summary: Any = None, signal_name: str = "SIGTERM") -> None:
        super().__init__(message)
        self.summary = summary
        self.exit_code = 128 + int(getattr(signal, signal_name))


class WorkerKilled(EsdedupError):
    """A fingerprint worker process of an ingest ended abruptly (``signum``: the signal that killed it, most
    often SIGKILL from the out-of-memory killer; ``exitcode``: its exit code when no signal did): the run
    ended after the batch it was writing, as a stopped run does; ``summary`` counts what was done, with
    ``summary.unwritten`` records read but not written (a resumed run reads them again)."""

    exit_code = 4

    def __init__(self, message: str, *, pid: int, signum: int | None = None, exitcode: int | None = None,
                 summary: Any = None) -> None:
        super().__init__(message)
        self.pid, self.signum, self.exitcode, self.summary = pid, signum, exitcode, summary


class ConfigMismatchError(EsdedupError):
    """An index was built with a different FingerprintConfig than the one in use."""

    exit_code = 2

    def __init__(self, message: str, *, stored: dict[str, Any], requested: dict[str, Any]) -> None:
        super().__init__(message)
        self.stored = stored
        self.requested = requested


class StoreError(EsdedupError):
    """The storage backend failed (server down, rejected request, corrupt local store)."""

    exit_code = 3


class WriteRefused(StoreError):
    """The store refused to write (a write block, a full disk, an index gone, retries spent): no fault of
    the documents, which are left for a resumed run to write."""


class ConnectionFailed(StoreError):
    """The server could not be reached or refused the credentials."""


class NotElasticsearch(ConnectionFailed):
    """The server at the URL answers, but not as Elasticsearch does (a web server, a proxy's page)."""


class NoAnswer(ConnectionFailed):
    """The server took the connection but did not answer within ``timeout`` seconds."""

    def __init__(self, message: str, *, timeout: float) -> None:
        super().__init__(message)
        self.timeout = timeout


class RequestTimedOut(StoreError):
    """The server took a request and did not answer it within the request timeout: the node is reachable,
    the request outlasted the wait (a loaded node, or one request reading a large index whole)."""


class CertificateError(ConnectionFailed):
    """TLS failed on a certificate: the server's is not trusted (``needs == "ca"``: give the CA that signed
    it) or the server asks for the client's (``needs == "client_cert"``)."""

    def __init__(self, message: str, *, needs: str) -> None:
        super().__init__(message)
        self.needs = needs


class ClientVersionMismatch(ConnectionFailed):
    """The installed ``elasticsearch`` Python client has another major version than the server."""

    def __init__(self, message: str, *, client_version: str, server_version: str) -> None:
        super().__init__(message)
        self.client_version = client_version
        self.server_version = server_version


class BulkError(StoreError):
    """Some documents of a bulk request were rejected; `errors` holds one dict per failed document."""

    exit_code = 1

    def __init__(self, message: str, errors: list[dict[str, Any]]) -> None:
        super().__init__(message)
        self.errors = errors


class NeedsElasticsearch(ConfigError):
    """The operation runs on Elasticsearch only, and the store is the embedded one."""


class Unsupported(ConfigError):
    """The operation needs a protocol the store does not declare among its capabilities."""


class IndexNotFound(StoreError):
    """The named index (or local collection) does not exist; ``index``: its name, when the index itself is
    missing (not a document in it)."""

    exit_code = 2

    def __init__(self, message: str, *, index: str | None = None) -> None:
        super().__init__(message)
        self.index = index
