"""Client and server majors: a server of the other major is refused with one error that names both versions
and the pip command installing the matching client; the index templates work on the server at hand.

The first test starts a node of the other major than the installed client (9.2.0 for the 8.x client,
8.19.21 for the 9.x client), so each CI pass checks its own direction of the mismatch.
"""
from __future__ import annotations

import elasticsearch
import numpy as np
import pytest

from esdedup import FingerprintConfig
from esdedup.errors import ClientVersionMismatch, IndexNotFound
from esdedup.es.errors import es_errors
from esdedup.es.versions import CLIENT_FOR_SERVER, refused_major
from esdedup.fingerprint.fingerprinter import Fingerprinter
from esdedup.schema import shipped_template, template_for
from esdedup.store.base import NewDoc
from esdedup.store.elastic.store import ElasticStore
from tests.es_node import EARLY_STARTS, ES_VERSION_FOR_MAJOR, REPO_ROOT, LocalCluster
from tests.reliability import run_cli

CLIENT = elasticsearch.__versionstr__
CLIENT_MAJOR = int(CLIENT.split(".")[0])
OTHER_MAJOR = 9 if CLIENT_MAJOR == 8 else 8


def _start_other_major_node() -> LocalCluster:
    cluster = LocalCluster(nodes=1, version=ES_VERSION_FOR_MAJOR[OTHER_MAJOR],
                           name=f"esdedup-other-major-{OTHER_MAJOR}")
    cluster.start()
    return cluster


# started early, in the background, when the run selects a test using it (tests/es_node.py, EarlyStarts)
EARLY_STARTS.register("other_major_node", _start_other_major_node)


@pytest.fixture(scope="module")
def other_major_node():
    with EARLY_STARTS.held("other_major_node") as cluster:
        yield cluster


@pytest.mark.es
def test_a_server_of_the_other_major_is_refused_with_one_clear_error(other_major_node) -> None:
    server = ES_VERSION_FOR_MAJOR[OTHER_MAJOR]
    url = other_major_node.url
    expected = (f"Error: opening index ({url}, index 'mismatch'): the Elasticsearch server is {server} but the "
                f"Python client is elasticsearch {CLIENT}; their major versions must match, so install the "
                f'matching client: python -m pip install "{CLIENT_FOR_SERVER[OTHER_MAJOR]}"')
    for command in (["info", "--index", "mismatch"],
                    ["ingest", REPO_ROOT / "examples" / "news.jsonl", "--index", "mismatch"]):
        r = run_cli(*command, "--es", url, timeout=120)
        assert r.returncode == 3, (command, r.returncode, r.stderr[-2000:])
        assert r.stderr.strip() == expected, r.stderr[-2000:]

    client = other_major_node.client()
    try:
        with pytest.raises(ClientVersionMismatch) as info:
            ElasticStore(client, "mismatch").open(None, create=False)
        assert (info.value.client_version, info.value.server_version) == (CLIENT, server)
        assert info.value.exit_code == 3
        # refused before anything was written (asked in a form both majors answer)
        missing = client.options(ignore_status=404).perform_request("GET", "/mismatch", headers={"accept": "*/*"})
        assert missing.meta.status == 404
        # Without the check at open: an 8.x server refuses every request of a 9.x client (one more
        # clear error, from the refusal), and a 9.x server answers an 8.x client in its compatibility mode.
        store = ElasticStore(client, "mismatch")
        if OTHER_MAJOR < CLIENT_MAJOR:
            with pytest.raises(ClientVersionMismatch, match=rf"server is {OTHER_MAJOR}\.x but the Python client"):
                store.count()
        else:
            with pytest.raises(IndexNotFound):  # an answer, not a refusal
                store.count()
    finally:
        client.close()


def test_a_refused_client_major_is_named_from_the_real_answer(es_client) -> None:
    """What a server says to a client major it does not speak (here: one above its own) becomes the
    mismatch error, whichever major the test node has."""
    (version,) = {n["version"] for n in es_client.nodes.info(node_id="_local")["nodes"].values()}
    major = int(version.split(".")[0])
    headers = {"accept": f"application/vnd.elasticsearch+json; compatible-with={major + 1}"}
    with pytest.raises(elasticsearch.BadRequestError) as raw:
        es_client.perform_request("GET", "/_cluster/health", headers=headers)
    assert refused_major(raw.value) == major
    with pytest.raises(ClientVersionMismatch) as info, es_errors("asking for health"):
        es_client.perform_request("GET", "/_cluster/health", headers=headers)
    assert info.value.server_version == f"{major}.x"
    assert str(info.value).startswith(f"asking for health: the Elasticsearch server is {major}.x but")


@pytest.mark.parametrize("config", [
    FingerprintConfig(),
    FingerprintConfig(vector_index="int8_hnsw", strategy="simhash"),
    FingerprintConfig(vector_index="hnsw", bits=128, hamming_k=5),
    FingerprintConfig(vector_index="flat", dims=128),
    FingerprintConfig(vector_index="none"),
], ids=lambda c: f"{c.vector_index}-{c.strategy}-{c.bits}")
def test_the_template_works_on_this_server(es_client, fresh_index, config) -> None:
    """The shipped template and those `esdedup mapping --template` makes are accepted; an index made from
    one opens as an esdedup index, and a document written through the store reads back whole."""
    body = shipped_template() if config == FingerprintConfig() else template_for(config, [f"{fresh_index}*"])
    body = {**body, "index_patterns": [f"{fresh_index}*"]}
    body["template"]["settings"]["number_of_replicas"] = 0
    es_client.indices.put_index_template(name=fresh_index, **body)
    try:
        es_client.indices.create(index=fresh_index)
        store = ElasticStore(es_client, fresh_index)
        assert store.open(None, create=False).config.identity() == config.identity()
        fp = Fingerprinter(config).fingerprint("台湾居民明日起持台胞证可通关，无需另行申请签注，出入境手续更加便利。")
        assert [r.ok for r in store.write([NewDoc("a", fp, {"text": "..."}, "0" * 40)])] == [True]
        store.refresh()
        (doc,) = store.get(["a"]).values()
        assert doc.simhash == fp.simhash
        # The default config stores no vector (schema 4): only where the config says documents carry one.
        assert np.allclose(doc.vector, fp.vector if config.stores_vector else 0, atol=1e-6)
        assert (doc.minhash is None) == (fp.minhash is None)
        if fp.minhash is not None:  # the 16-bit signature round-trips through the binary field
            assert doc.minhash.tolist() == fp.minhash.tolist() and doc.shingles == fp.shingles
    finally:
        es_client.indices.delete_index_template(name=fresh_index)
