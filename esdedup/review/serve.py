"""Where the review app listens: the loopback address by default; any other address only with a token.

`check_listen` is the rule; `Server` runs the app with uvicorn (its access log off: a first request may
carry the token in its query string, and the token is printed once, by whoever started the app).
"""
from __future__ import annotations

import ipaddress
import secrets
import socket
import string
import threading
from dataclasses import dataclass, field
from typing import Any

from esdedup.errors import ConfigError

__all__ = ["Server", "check_listen", "check_token", "is_loopback", "new_token"]


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def new_token() -> str:
    return secrets.token_urlsafe(24)


#: The characters a token may hold: URL-safe ones (RFC 3986's unreserved), which travel unchanged in the
#: printed URL's query string, in a cookie and in an ``Authorization`` header.
TOKEN_CHARS = frozenset(string.ascii_letters + string.digits + "-._~")


def check_token(token: str) -> None:
    """Raises ConfigError for a token under 16 characters or one with a character outside `TOKEN_CHARS`
    (a space, ``+``, ``&``, a non-ASCII letter: each would reach the page changed, or not at all)."""
    if len(token) < 16:
        raise ConfigError("the review page's token must be at least 16 characters")
    if not set(token) <= TOKEN_CHARS:  # which character is not said: no part of a secret is printed
        raise ConfigError("the review page's token may hold only ASCII letters, digits and - . _ ~ (it travels "
                          "in a URL and a cookie)")


def check_listen(host: str, token: str | None) -> None:
    """Refuse to listen beyond this machine without a token every request must carry, and a token that is
    not one (`check_token`).

    Raises:
        ConfigError: ``host`` is not a loopback address and no token was given, or the token is refused.
    """
    if token is not None and (token or is_loopback(host)):
        check_token(token)
    if is_loopback(host):
        return
    if not token:
        raise ConfigError(f"the review page listens on {host!r}, beyond this machine, only with an access token "
                          "that every request must carry: give one, or listen on 127.0.0.1")


@dataclass
class Server:
    """The app served by uvicorn on ``host``:``port`` (0: a free port, chosen when bound)."""

    app: Any
    host: str = "127.0.0.1"
    port: int = 0
    token: str | None = field(default=None, repr=False)  # kept out of any log line that shows the server

    def __post_init__(self) -> None:
        self.host = self.host.strip().strip("[]")  # "[::1]" as a URL writes it: the address is ::1
        check_listen(self.host, self.token)
        import uvicorn

        config = uvicorn.Config(self.app, host=self.host, port=self.port, access_log=False, log_level="warning",
                                lifespan="off")
        self._server = uvicorn.Server(config)
        self._socket: socket.socket | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def bind(self) -> None:
        """Take the address and listen on it (connections wait in the backlog until `run` serves them): after
        this, `url` is the page's address, with the port chosen when ``port`` was 0.

        Raises:
            ConfigError: the address cannot be taken (in use, not this machine's, not permitted).
        """
        if self._socket is not None:
            return
        sock = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self.port))
            sock.listen(128)
        except OSError as exc:
            sock.close()
            raise ConfigError(f"the review page cannot listen on {self.url}: {exc.strerror or exc}") from None
        self.port = int(sock.getsockname()[1])
        self._socket = sock

    def run(self) -> None:
        """Serve until interrupted (binding first if `bind` was not called)."""
        self.bind()
        assert self._socket is not None
        try:
            self._server.run(sockets=[self._socket])
        finally:
            self._socket.close()

    def start(self) -> None:
        """Serve from a background thread; returns once the server accepts connections."""
        self.bind()
        self._thread = threading.Thread(target=self.run, name="esdedup-review-server", daemon=True)
        self._thread.start()
        while not self._server.started:
            if not self._thread.is_alive():
                raise ConfigError(f"the review page could not listen on {self.url}")
            threading.Event().wait(0.02)

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
