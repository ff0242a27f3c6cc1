"""The clients esdedup builds read responses with orjson, into exactly what the standard library would give."""
from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from esdedup.es.connect import make_client, resolve_settings
from esdedup.es.serializer import ResponseJson

# What Elasticsearch sends: 64-bit integers, finite doubles, text (valid Unicode), lists and objects.
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**64 - 1) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES)
def test_responses_read_as_the_standard_library_reads_them(value: object) -> None:
    raw = json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")
    assert ResponseJson().loads(raw) == json.loads(raw)


def test_what_orjson_refuses_is_read_by_the_standard_library() -> None:
    raw = b'{"hits":{"hits":[{"_id":"a","_source":{"text":"\\ud800 lone"}}]}}'
    assert ResponseJson().loads(raw)["hits"]["hits"][0]["_source"]["text"] == "\ud800 lone"


def test_the_clients_esdedup_builds_use_it() -> None:
    settings_ = resolve_settings("http://127.0.0.1:9")
    assert settings_ is not None
    for async_ in (False, True):
        client = make_client(settings_, async_=async_)
        serializers = client.transport.serializers
        for mimetype in ("application/json", "application/vnd.elasticsearch+json"):
            assert isinstance(serializers.get_serializer(mimetype), ResponseJson), (async_, mimetype)
