"""The review app's routes (Starlette) and templates (Jinja2, every value escaped).

Pages: ``/`` overview, ``/clusters`` list, ``/cluster`` one cluster, ``/pair`` one pair, ``/review`` the
queue, ``/tuning``, ``/search``; ``POST /label`` saves a label. Ids travel in query strings, so any id
(slashes included) names its page. With a token, every request must carry it (`TokenGate`); without one,
only requests to the address the page listens on are answered (`HostGate`).
"""
from __future__ import annotations

import hmac
import ipaddress
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from jinja2 import Environment, FileSystemLoader
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from esdedup.errors import ConfigError, EsdedupError, IndexNotFound, OutputError
from esdedup.review.pages import Review
from esdedup.review.serve import check_token, is_loopback

__all__ = ["TOKEN_COOKIE", "HostGate", "TokenGate", "create_app", "host_is_listening_address"]

HERE = Path(__file__).parent
#: The cookie a browser keeps the token in after its first request carried it (``?token=``).
TOKEN_COOKIE = "esdedup_review_token"
#: Every page's Content-Security-Policy: scripts, styles and images from the app itself only.
CSP = "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"


def _environment() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True, trim_blocks=True,
                      lstrip_blocks=True)
    env.filters["num"] = lambda v, d=3: "–" if v is None else (f"{v:.{d}f}" if isinstance(v, float) else str(v))
    # A lone surrogate in an id (Elasticsearch keeps them) is encoded as its replacement character: the link
    # leads to a page that says the document is not found, instead of no page at all.
    env.globals["url"] = lambda path, **q: path + ("?" + urlencode({k: v for k, v in q.items() if v is not None},
                                                                   errors="replace")
                                                   if any(v is not None for v in q.values()) else "")
    return env


def _page(request: Request) -> int:
    """The ``page`` asked for, 0 when it is not a number (`Review` moves one past the last to the last)."""
    try:
        return max(0, int(request.query_params.get("page", "0")))
    except ValueError:  # not a number, or one of thousands of digits
        return 0


def _local_path(target: str | None, default: str = "/review") -> str:
    """``target`` if it is a path of this app, else ``default``: every redirect the app answers goes through
    here. A browser reads ``//host``, ``/\\host`` and ``/<tab>/host`` (it drops tabs and line breaks, and takes a
    backslash for a slash) as another site; so a target must start with one slash followed by neither a slash
    nor a backslash, and hold no backslash and no control character anywhere."""
    if not target or not target.startswith("/") or target[1:2] in ("/", "\\"):
        return default
    if "\\" in target or any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in target):
        return default
    parts = urlsplit(target)
    if parts.scheme or parts.netloc:
        return default
    return target


def _utf8(html: str) -> bytes:
    """The page as UTF-8. A stored text may hold a lone surrogate (a ``\\ud800`` escape another client wrote
    to Elasticsearch), which UTF-8 cannot carry: it is shown as U+FFFD, as a browser shows a byte it cannot
    read."""
    try:
        return html.encode("utf-8")
    except UnicodeEncodeError:
        return re.sub("[\ud800-\udfff]", "\ufffd", html).encode("utf-8")


def _host_port(host: str) -> tuple[str, int | None] | None:
    """A ``Host`` header's name (lowercase, IPv6 without brackets) and port (None: the default), or None when
    it is not of the form ``name[:port]`` / ``[v6][:port]``."""
    if host.startswith("["):
        end = host.find("]")
        if end < 0:
            return None
        name, rest = host[1:end], host[end + 1:]
        if rest and not rest.startswith(":"):
            return None
        port = rest[1:] if rest else None
    else:
        name, sep, port_text = host.partition(":")
        port = port_text if sep else None
    if not name or (port is not None and not (port.isascii() and port.isdigit() and len(port) <= 5)):
        return None
    return name.lower(), None if port is None else int(port)


def _same_address(name: str, server_host: str) -> bool:
    if name == server_host.lower():
        return True
    try:
        return ipaddress.ip_address(name) == ipaddress.ip_address(server_host)
    except ValueError:
        return False


def host_is_listening_address(host: str | None, server: tuple[str, int] | None) -> bool:
    """Whether a request's ``Host`` names the address the server took the connection on (``server``, the
    ASGI scope's): the same port, and the same address or ``localhost`` when that address is a loopback
    one. A page another site serves that rebinds its name to 127.0.0.1 sends its own name: refused."""
    if not host or server is None:
        return False
    parsed = _host_port(host)
    if parsed is None:
        return False
    name, port = parsed
    server_host, server_port = str(server[0]), int(server[1])
    if (80 if port is None else port) != server_port:
        return False
    return _same_address(name, server_host) or (name == "localhost" and is_loopback(server_host))


class HostGate:
    """Without a token, the app answers only requests whose ``Host`` is the address it listens on
    (`host_is_listening_address`), on every route: otherwise any web page the user opens could reach it
    through DNS rebinding, read the index and write labels."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host = Headers(scope=scope).get("host")
        server = scope.get("server")
        if host_is_listening_address(host, server):
            await self.app(scope, receive, send)
            return
        where = "its own address"
        if server is not None:
            name = str(server[0])
            where = f"http://{'[' + name + ']' if ':' in name else name}:{server[1]}/"
        response = PlainTextResponse(f"403: this review page answers only at {where} (or localhost on the same "
                                     "port)", status_code=403)
        if scope["type"] == "http":
            await response(scope, receive, send)
        else:
            await send({"type": "websocket.close", "code": 1008})


class TokenGate:
    """Refuses (401) every request that does not carry ``token``: as ``Authorization: Bearer``, as the
    cookie `TOKEN_COOKIE`, or as ``?token=`` (then the cookie is set and the browser sent on to the same page
    without it, so that the token leaves the address bar)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        check_token(token)
        self.app = app
        self.token = token.encode()

    def _ok(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        auth = request.headers.get("authorization", "")
        bearer = auth[7:] if auth.lower().startswith("bearer ") else None
        # A token in the query string is moved to the cookie first, even for a browser that has the cookie
        # already: the token leaves the address bar (and the history) every time.
        login = scope["type"] == "http" and request.method == "GET" and self._ok(request.query_params.get("token"))
        if not login and (self._ok(bearer) or self._ok(request.cookies.get(TOKEN_COOKIE))):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        if login:
            rest = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "token"])
            # The path as the browser sent it (still percent-encoded: ``/%2F%2Fhost`` decodes to ``//host``).
            path = scope.get("raw_path", b"").decode("latin-1") or request.url.path
            response: Response = RedirectResponse(_local_path(path + ("?" + rest if rest else ""), "/"),
                                                  status_code=303)
            response.set_cookie(TOKEN_COOKIE, self.token.decode(), httponly=True, samesite="strict")
        else:
            response = PlainTextResponse("401: this review page needs its access token (printed when it started)",
                                         status_code=401, headers={"WWW-Authenticate": "Bearer"})
        await response(scope, receive, send)


def create_app(review: Review, *, token: str | None = None) -> ASGIApp:
    """The ASGI app over a prepared `Review`; with ``token``, every request must carry it."""
    env = _environment()

    def render(name: str, request: Request, status: int = 200, **context: Any) -> HTMLResponse:
        html = env.get_template(name).render(request=request, index=review.store.name,
                                             labelled=len(review.labels), **context)
        return HTMLResponse(_utf8(html), status_code=status, headers={"Content-Security-Policy": CSP,
                                                                "X-Content-Type-Options": "nosniff",
                                                                "Referrer-Policy": "same-origin"})

    def page(name: str, build: Callable[[Request], Awaitable[dict[str, Any]]]) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            try:
                return render(name, request, **await build(request))
            except IndexNotFound as exc:
                return render("error.html", request, status=404, message=str(exc))
            except (ConfigError, EsdedupError) as exc:
                return render("error.html", request, status=400, message=str(exc))
        return endpoint

    async def overview(request: Request) -> dict[str, Any]:
        return await review.call(review.overview)

    async def clusters(request: Request) -> dict[str, Any]:
        return await review.call(review.clusters, request.query_params.get("q", ""), _page(request))

    async def cluster(request: Request) -> dict[str, Any]:
        cid = request.query_params.get("id")
        if not cid:
            raise ConfigError("name the cluster: /cluster?id=<the representative's id>")
        return {"c": await review.call(review.cluster, cid, _page(request)), "here": str(request.url.path) + "?" + request.url.query}

    async def pair(request: Request) -> dict[str, Any]:
        a, b = request.query_params.get("a"), request.query_params.get("b")
        if not a or not b or a == b:
            raise ConfigError("name two different documents: /pair?a=<id>&b=<id>")
        here = str(request.url.path) + "?" + request.url.query
        return {"p": await review.call(review.pair, a, b), "reason": None,
                "next_url": _local_path(request.query_params.get("next"), here)}

    async def queue(request: Request) -> dict[str, Any]:
        return await review.call(review.queue)

    async def tuning(request: Request) -> dict[str, Any]:
        return await review.call(review.tuning)

    async def search(request: Request) -> dict[str, Any]:
        return await review.call(review.search, request.query_params.get("q", ""))

    async def label(request: Request) -> Response:
        origin = request.headers.get("origin")
        if origin is not None and urlsplit(origin).netloc != request.headers.get("host"):
            return PlainTextResponse("403: a label comes only from the review page itself", status_code=403)
        form = await request.form()
        a, b, value, nxt = form.get("a"), form.get("b"), form.get("label"), form.get("next")
        back = _local_path(nxt if isinstance(nxt, str) else None)
        if not isinstance(a, str) or not isinstance(b, str) or value not in ("0", "1"):
            return PlainTextResponse("400: a label needs the fields a, b and label (0 or 1)", status_code=400)
        try:
            docs = await review.call(review.store.get, [a, b])
            missing = [x for x in (a, b) if x not in docs]
            if missing:
                return PlainTextResponse(f"404: no document {missing[0]!r} in index {review.store.name!r}",
                                         status_code=404)
            await review.call(review.labels.set, a, b, int(str(value)))
        except ConfigError as exc:
            return PlainTextResponse(f"400: {exc}", status_code=400)
        except OutputError as exc:
            # Said on a page of its own: the pair stays unlabelled, here, in the counter and in Tuning.
            return render("error.html", request, status=500, title="Label not saved",
                          message=f"The label was not saved: {exc}. The pair is still unlabelled.", back=back)
        return RedirectResponse(back, status_code=303)

    app: ASGIApp = Starlette(routes=[
        Route("/", page("overview.html", overview)),
        Route("/clusters", page("clusters.html", clusters)),
        Route("/cluster", page("cluster.html", cluster)),
        Route("/pair", page("pair.html", pair)),
        Route("/review", page("queue.html", queue)),
        Route("/tuning", page("tuning.html", tuning)),
        Route("/search", page("search.html", search)),
        Route("/label", label, methods=["POST"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ])
    return TokenGate(app, token) if token is not None else HostGate(app)
