"""Every fingerprint config that can be made is stored in an Elasticsearch index's `_meta` and read back as
itself on a real node: the index opens again, by the config and without one, and takes documents. Configs
given loosely (a numpy integer, a whole number for a threshold) are stored in their JSON types; configs of
the wrong types are refused before an index exists."""
from __future__ import annotations

import dataclasses
import uuid

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from esdedup.errors import ConfigError
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.ingest import Ingester
from esdedup.store.elastic.store import ElasticStore
from tests.unit.test_config_types import _near

pytestmark = pytest.mark.es

TEXT = "台湾居民明日起持台胞证可通关，无需另行申请签注，出入境手续更加便利。"


@pytest.fixture
def index_names(es_client):
    names: list[str] = []

    def make() -> str:
        names.append(f"esdedup-cfg-{uuid.uuid4().hex[:10]}")
        return names[-1]

    yield make
    for name in names:
        es_client.options(ignore_status=404).indices.delete(index=name)


def _stores_and_opens(es_client, name: str, config: FingerprintConfig) -> None:
    ingester = Ingester(ElasticStore(es_client, name, replicas=0), config)
    assert ingester.add(TEXT, id="a").status == "indexed"
    again = ElasticStore(es_client, name, replicas=0)
    stored = again.open(None, create=False).config
    assert stored == config and stored.identity() == config.identity() and stored.to_json() == config.to_json()
    assert again.open(config).config == config  # the config that made it opens it too
    later = Ingester(ElasticStore(es_client, name, replicas=0))  # and a writer that brings none
    assert later.add(TEXT + "！", id="b").status == "indexed"


@pytest.mark.parametrize("changes", [
    {"minhash_perm": np.int64(64), "minhash_bands": np.int32(16), "minhash_rows": 4},
    {"cosine_threshold": 1, "jaccard_threshold": np.float32(0.5), "containment_threshold": 0},
    {"t2s": True, "strategy": "simhash", "vector_index": "int8_hnsw", "extra": {"note": "台胞", "n": [1, None]}},
    {"tokenizer": "char", "shingle": 2, "stopwords": "none", "weighting": "tf_length", "bits": 128},
])
def test_configs_given_loosely_are_stored_in_their_json_types_and_open_again(es_client, index_names, changes):
    _stores_and_opens(es_client, index_names(), FingerprintConfig(**changes))


@pytest.mark.parametrize("changes", [{"t2s": 1}, {"minhash_perm": 128.0}, {"t2s": "yes"}, {"dims": "256"}])
def test_configs_of_the_wrong_types_never_make_an_index(es_client, index_names, changes):
    name = index_names()
    with pytest.raises(ConfigError, match="config field"):
        Ingester(ElasticStore(es_client, name, replicas=0), FingerprintConfig(**changes))
    assert not es_client.indices.exists(index=name)


_FIELDS = [f for f in dataclasses.fields(FingerprintConfig)
           if not f.name.endswith(("_path", "_sha256")) and f.name not in ("tokenizer_version", "schema")]
_CHANGES = st.lists(st.sampled_from(_FIELDS), min_size=1, max_size=3, unique=True).flatmap(
    lambda fields: st.fixed_dictionaries({f.name: _near(f) for f in fields}))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(changes=_CHANGES)
def test_any_config_that_can_be_made_is_stored_in_meta_and_opens_again(es_client, index_names, changes):
    try:
        config = FingerprintConfig(**changes)
    except ConfigError:
        return
    _stores_and_opens(es_client, index_names(), config)
