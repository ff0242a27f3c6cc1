"""How the Elasticsearch clients esdedup builds read responses: orjson first.

The store-side `dups` join and the band lookups read large search responses (every member's key doc values),
and decoding them is a large part of the client's work in both; orjson reads the same JSON into the same values
(Elasticsearch's numbers are at most 64-bit integers and doubles, which both read alike) at a fraction of the
standard library's cost. What orjson refuses, such as a lone surrogate escaped in a stored text, is read by the
standard library. Requests are encoded by the standard library: orjson refuses some of what it passes through
(lone surrogates again), and the large NDJSON bodies (bulk writes, `_msearch`) are encoded by esdedup itself
(`esdedup.schema.json_bytes`, which falls back to the standard library for what orjson refuses; `ndjson`).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from elasticsearch.serializer import JsonSerializer

from esdedup.schema import json_bytes

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency; still work without it
    orjson = None  # type: ignore[assignment]


class ResponseJson(JsonSerializer):
    """`JsonSerializer` whose `loads` tries orjson first (see the module docstring)."""

    def loads(self, data: bytes) -> Any:  # type: ignore[override]
        if orjson is not None:
            try:
                return orjson.loads(data)
            except orjson.JSONDecodeError:
                pass
        return super().loads(data)


def ndjson(objs: Iterable[Any]) -> bytes:
    """An NDJSON request body (``_msearch``, ``_bulk``): each object as one line of compact JSON.

    >>> ndjson([{"index": "a"}, {"size": 0}])
    b'{"index":"a"}\\n{"size":0}\\n'
    """
    return b"".join(json_bytes(obj) + b"\n" for obj in objs)
