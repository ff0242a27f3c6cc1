"""The stores every contract test runs on: the embedded store, Elasticsearch and OpenSearch (real nodes,
tests/conftest.py), and the client of the server a test's parameter names."""
from __future__ import annotations

from typing import Any

import pytest

#: The parameters of a contract fixture: each server engine's tests carry the ``es`` marker (they need a node).
BACKENDS = ["local", pytest.param("es", marks=pytest.mark.es),
            pytest.param("opensearch", marks=[pytest.mark.es, pytest.mark.opensearch])]


def server_client(request: pytest.FixtureRequest) -> Any:
    """The client an `ElasticStore` takes for the fixture parameter ``es`` or ``opensearch`` (an opensearch-py
    client, wrapped as `esdedup.api.open_store` wraps one)."""
    if request.param == "opensearch":
        from esdedup.es import opensearch

        return opensearch.wrap(request.getfixturevalue("os_client"))
    return request.getfixturevalue("es_client")
