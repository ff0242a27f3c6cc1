"""What an HTTP answer says, in one short line: the reason of an Elasticsearch error, or the title (else the
first characters) of a page that is not one, such as a proxy's or a web server's HTML."""
from __future__ import annotations

import re
from typing import Any

_HTML_TITLE = re.compile(r"(?is)<title>(.*?)</title>")
#: The most characters of an answer an error message quotes.
REASON_CHARS = 200


def api_reason(exc: Any) -> str:
    """The reason of an error answer; for a non-JSON answer (a proxy's HTML page) its title or first
    characters."""
    body = getattr(exc, "body", None)
    if isinstance(body, (str, bytes)) and body:
        return page_summary(body)
    return str(exc.message)


def page_summary(body: str | bytes) -> str:
    """A page that is not JSON as one short line: its HTML title, else its text without tags, cut short."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    m = _HTML_TITLE.search(text)
    return " ".join((m.group(1) if m else re.sub(r"<[^>]+>", " ", text)).split())[:REASON_CHARS]
