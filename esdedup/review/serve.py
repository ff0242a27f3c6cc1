"""Where the review app listens: the loopback address by default; any other address only with a token.

`check_listen` is the rule; `Server` runs the app with uvicorn (its access log off: a first request may
carry the token in its query string, and the token is printed once, by whoever started the app).
"""
from __future__ import annotations

import ipaddress
import secrets
import socket
import threading
from dataclasses import dataclass, field
from typing import Any

from esdedup.errors import ConfigError

__all__ = ["Server", "check_listen", "is_loopback", "new_token"]


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


def check_listen(host: str, token: str | None) -> None:
    """Refuse to listen beyond this machine without a token every request must carry.

    Raises:
        ConfigError: ``host`` is not a loopback address and no token (or a token under 16 characters) was given.
    """
    if is_loopback(host):
        if token is not None and len(token) < 16:
            raise ConfigError("the review page's token must be at least 16 characters")
        return
    if not token:
        raise ConfigError(f"the review page listens on {host!r}, beyond this machine, only with an access token "
                          "that every request must carry: give one, or listen on 127.0.0.1")
    if len(token) < 16:
        raise ConfigError("the review page's token must be at least 16 characters")


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    """The app served by uvicorn on ``host``:``port`` (0: a free port, chosen here)."""

    app: Any
    host: str = "127.0.0.1"
    port: int = 0
    token: str | None = field(default=None, repr=False)  # kept out of any log line that shows the server

    def __post_init__(self) -> None:
        check_listen(self.host, self.token)
        import uvicorn

        if self.port == 0:
            self.port = free_port(self.host)
        config = uvicorn.Config(self.app, host=self.host, port=self.port, access_log=False, log_level="warning",
                                lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def run(self) -> None:
        """Serve until interrupted."""
        self._server.run()

    def start(self) -> None:
        """Serve from a background thread; returns once the server accepts connections."""
        self._thread = threading.Thread(target=self._server.run, name="esdedup-review-server", daemon=True)
        self._thread.start()
        while not self._server.started:
            if not self._thread.is_alive():
                raise ConfigError(f"the review page could not listen on {self.url}")
            threading.Event().wait(0.02)

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
