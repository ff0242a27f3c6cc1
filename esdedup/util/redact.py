"""Keeping secrets out of everything esdedup prints: URLs with user:password, API keys, auth headers."""
from __future__ import annotations

import re
from collections.abc import Iterable

_URL_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<userinfo>[^/@\s]+)@")
_AUTH_HEADER = re.compile(r"(?i)(authorization['\"]?\s*[:=]\s*['\"]?)(apikey|basic|bearer)\s+[A-Za-z0-9+/=._-]+")

MASK = "***"


def redact_url(url: str) -> str:
    """``https://user:secret@host:9200`` -> ``https://***@host:9200``; one URL, so everything up to its last
    ``@`` is masked, with or without a scheme and whatever the password holds (``/``, ``@``).

    >>> redact_url("https://elastic:hunter2@es.example:9200/x")
    'https://***@es.example:9200/x'
    >>> redact_url("alice:se/cr@t@127.0.0.1:1")
    '***@127.0.0.1:1'
    """
    scheme, sep, rest = url.partition("://")
    prefix = scheme + sep if sep else ""
    if not sep:
        rest = url
    if "@" not in rest:
        return url
    return f"{prefix}{MASK}@{rest.rpartition('@')[2]}"


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """Remove URL credentials, Authorization header values and every given secret string from text."""
    text = _URL_USERINFO.sub(lambda m: f"{m.group('scheme')}{MASK}@", text)
    text = _AUTH_HEADER.sub(lambda m: f"{m.group(1)}{m.group(2)} {MASK}", text)
    for s in secrets:
        if s and len(s) >= 4:
            text = text.replace(s, MASK)
    return text
