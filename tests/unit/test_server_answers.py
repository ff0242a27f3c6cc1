"""A server that is not Elasticsearch (or answers like one with long or hostile bodies) gets one short error
line: the server's words are quoted as an excerpt of at most `EXCERPT_CHARS` characters, with the control
characters a terminal would act on escaped. A real HTTP server (python's http.server) on loopback answers."""
from __future__ import annotations

import http.server
import json
import re
import threading

import pytest

from esdedup.api import open_store
from esdedup.errors import EsdedupError
from esdedup.es.answers import EXCERPT_CHARS, excerpt

LONG = "x" * 300 + "END"
ESC = "\x1b[2J\x1b]0;owned\x07"

#: name -> (status, content type, body, claims to be Elasticsearch)
ANSWERS = {
    "html page, long title": (200, "text/html", f"<html><title>{LONG}</title></html>", False),
    "plain text with escapes": (200, "text/plain", f"hello {ESC} {LONG}", False),
    "json without nodes": (200, "application/json", json.dumps({"hello": LONG}), False),
    "404 json error string": (404, "application/json", json.dumps({"error": f"{ESC}{LONG}", "status": 404}), False),
    "500 json error object": (500, "application/json",
                              json.dumps({"error": {"reason": f"boom {ESC} {LONG}"}, "status": 500}), False),
    "500 json message": (500, "application/json", json.dumps({"message": LONG}), False),
    "400 json list": (400, "application/json", json.dumps([LONG]), False),
    "403 long reason": (403, "application/json", json.dumps({"error": {"reason": f"{ESC}{LONG}"}}), False),
    "503 html page": (503, "text/html", f"<html><body><h1>{ESC}</h1>{'<p>busy</p>' * 200}</body></html>", False),
}


@pytest.fixture(scope="module")
def server():
    """A real HTTP server on a free loopback port; ``server.answer`` is what it answers to every request."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self):
            length = int(self.headers.get("content-length") or 0)
            if length:
                self.rfile.read(length)
            status, ctype, body, claims = httpd.answer
            data = body.encode("utf-8")
            self.send_response(status)
            self.send_header("content-type", ctype)
            if claims:
                self.send_header("X-Elastic-Product", "Elasticsearch")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = _answer

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.answer = ANSWERS["html page, long title"]
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    httpd.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize("name", list(ANSWERS))
def test_the_server_is_quoted_briefly_with_controls_escaped(server, name):
    server.answer = ANSWERS[name]
    with pytest.raises(EsdedupError) as caught:
        open_store("news", es_url=server.url).open(None, create=False)
    message = str(caught.value)
    assert caught.value.exit_code in (2, 3)
    assert "\n" not in message and not re.search(r"[\x00-\x1f\x7f-\x9f]", message), repr(message)
    assert "END" not in message, message  # the end of the 300 characters is cut
    where = message.index("index 'news')") + len("index 'news')")
    # Besides the command's words (what was done, the status, "check the URL and port"), 200 characters at most.
    assert len(message) - where <= EXCERPT_CHARS + 80, (len(message), message)
    assert len(message) <= 360, (len(message), message)
    if ESC in ANSWERS[name][2] and "busy" not in ANSWERS[name][2]:
        assert "\\x1b" in message, message  # shown escaped, not dropped


def test_excerpt_keeps_short_text_and_cuts_long_text():
    assert excerpt("index_not_found_exception") == "index_not_found_exception"
    assert excerpt("a\n\n  b\tc") == "a b c"
    assert excerpt("\x1b[31mred\u202e") == "\\x1b[31mred\\u202e"
    cut = excerpt("y" * 500)
    assert len(cut) == EXCERPT_CHARS and cut.endswith("...")


@pytest.mark.parametrize("reason", ["[request] Data too large, data for [<reused_arrays>] would be [1.6gb], which is "
                                    "larger than the limit of [1.1gb]", "circuit_breaking_exception"])
def test_a_circuit_breaker_refusal_says_what_to_do_and_other_reasons_stay_as_they_are(reason):
    from esdedup.es.answers import with_memory_hint

    assert with_memory_hint(reason).startswith(reason)
    assert "give the nodes a larger heap" in with_memory_hint(reason)
    assert with_memory_hint("index_not_found_exception") == "index_not_found_exception"
