"""OpenSearch as the store's server, on real nodes: the same input gives the same answers as on Elasticsearch.

The same corpus goes into an Elasticsearch node and an OpenSearch node through the same commands (the engine
found from the server's answer: the same ``--es URL`` form for both); every document, field, label, pair and
cluster must then be equal, and the Python API (`search_diversified`, `SimilarFinder`, `Ingester`) and the
review page must answer alike.
"""
from __future__ import annotations

import asyncio
import json
import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from esdedup_cli.main import app
from starlette.testclient import TestClient

from esdedup import FingerprintConfig
from esdedup.api import SimilarFinder, open_store
from esdedup.errors import ConfigError
from esdedup.es import opensearch
from esdedup.es.connect import resolve_settings
from esdedup.ingest import Ingester
from esdedup.review import Review, create_app
from esdedup.search.paging import async_search_diversified, search_diversified
from tests.cli_runner import cli_runner
from tests.corpus import make_corpus
from tests.integration import test_security as security

pytestmark = [pytest.mark.es, pytest.mark.opensearch]

runner = cli_runner()
#: Short texts (MinHash only) with copies among them, beside the corpus's long ones (SimHash bands too).
SHORT = {"s1": "台湾居民明日起持台胞证可通关，无需另行申请签注。", "s2": "台湾居民明日起持台胞证可通关，无需另行申请签注！",
         "s3": "今天天气晴朗，适合出门散步。", "s4": "今天天气晴朗，适合出门散步！", "s5": "完全不同的一句话。"}


def cli(*args: Any) -> Any:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, (args, result.stdout, result.stderr)
    return result


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    docs, _ = make_corpus(240, 60, seed=11)
    docs += [{"id": k, "text": v} for k, v in SHORT.items()]
    path = tmp_path_factory.mktemp("corpus") / "docs.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for d in docs:
            fh.write(json.dumps({**d, "title": d["text"][:12]}, ensure_ascii=False) + "\n")
    return path


@pytest.fixture
def index_name(es_client: Any, os_client: Any) -> Any:
    """One index name on both servers, deleted from both afterwards."""
    name = f"esdedup-same-{uuid.uuid4().hex[:10]}"
    yield name
    es_client.options(ignore_status=404).indices.delete(index=name)
    os_client.indices.delete(index=name, ignore_unavailable=True)


def _documents(client: Any, index: str) -> dict[str, Any]:
    client.indices.refresh(index=index)
    resp = client.search(index=index, body={"size": 10000, "query": {"match_all": {}}}) if opensearch.wrap(
        client) is not client else client.search(index=index, size=10000, query={"match_all": {}})
    return {h["_id"]: h["_source"] for h in resp["hits"]["hits"]}


def _json_lines(text: str) -> list[Any]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_the_server_says_which_engine_it_is(es_url: str, os_url: str) -> None:
    """The same ``--es URL`` form for both: the client is chosen by the server's answer when the store opens."""
    from elasticsearch import Elasticsearch

    chosen = {url: open_store("nope", es_url=url).client for url in (es_url, os_url)}
    assert isinstance(chosen[os_url].chosen(), opensearch.OpenSearchClient)
    assert isinstance(chosen[es_url].chosen(), Elasticsearch)
    assert opensearch.detect_engine(Elasticsearch(os_url), "here") == "opensearch"
    assert opensearch.detect_engine(Elasticsearch(es_url), "here") == "elasticsearch"


def test_requests_at_once_reuse_the_client_s_connections_without_a_warning(os_url: str, caplog: Any) -> None:
    """A point-in-time read asks in slices at once and an ingest writes while it looks up: opensearch-py's
    client keeps one connection a node unless told more, and warns of each other one it opens and drops."""
    import logging
    import threading

    client = open_store("nope", es_url=os_url).client.chosen()
    assert isinstance(client, opensearch.OpenSearchClient)
    barrier = threading.Barrier(4)

    def ask() -> None:
        for _ in range(10):
            barrier.wait(timeout=30)
            client.search(size=0)

    with caplog.at_level(logging.WARNING, logger="urllib3"):
        threads = [threading.Thread(target=ask) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not [r for r in caplog.records if r.name.startswith("urllib3")], caplog.text


def test_the_same_corpus_gives_the_same_answers_on_both_engines(es_url: str, os_url: str, es_client: Any,
                                                                 os_client: Any, index_name: str,
                                                                 corpus_file: Path, tmp_path: Path) -> None:
    outputs: dict[str, dict[str, Any]] = {}
    for engine, url in (("es", es_url), ("os", os_url)):
        out: dict[str, Any] = {}
        cli("index", "create", "--index", index_name, "--es", url, "--shards", "2", "--replicas", "0",
            "--tokenizer", "rjieba")
        out["ingest"] = json.loads(cli("ingest", corpus_file, "--index", index_name, "--es", url, "--workers", "1",
                                       "--tokenizer", "rjieba", "--dead-letter", tmp_path / f"{engine}-dl.jsonl",
                                       "--checkpoint", tmp_path / f"{engine}-ck.json", "--json").stdout)
        out["again"] = json.loads(cli("ingest", corpus_file, "--index", index_name, "--es", url, "--workers", "1",
                                      "--tokenizer", "rjieba", "--dead-letter", tmp_path / f"{engine}-dl2.jsonl",
                                      "--json").stdout)
        out["dups"] = sorted(map(json.dumps, _json_lines(cli("dups", "--index", index_name, "--es", url,
                                                             "--format", "jsonl").stdout)))
        out["label"] = json.loads(cli("label", "--index", index_name, "--es", url, "--json").stdout)
        out["mapping"] = json.loads(cli("mapping", "--index", index_name, "--es", url).stdout)
        out["info"] = json.loads(cli("info", "--index", index_name, "--es", url, "--json").stdout)
        out["similar"] = json.loads(cli("similar", "--index", index_name, "--es", url, "--text", SHORT["s1"],
                                        "--json").stdout)
        out["similar_id"] = json.loads(cli("similar", "--index", index_name, "--es", url, "--id", "d00003",
                                           "--json").stdout)
        outputs[engine] = out
    es, os_ = outputs["es"], outputs["os"]
    for part in ("ingest", "again", "label"):  # timings differ; every count must not
        for volatile in ("elapsed_s", "docs_per_s", "mb_per_s", "seconds", "dead_letter", "checkpoint"):
            es[part].pop(volatile, None), os_[part].pop(volatile, None)
    assert es["ingest"]["indexed"] == os_["ingest"]["indexed"] > 300
    assert es["dups"] and es["dups"] == os_["dups"]
    for key in ("ingest", "again", "label", "mapping", "info", "similar", "similar_id"):
        assert _without_index_details(es[key]) == _without_index_details(os_[key]), key
    # Every document, its article fields and every dedup field (bands, signature keys, cluster, order) alike.
    docs_es, docs_os = _documents(es_client, index_name), _documents(os_client, index_name)
    assert len(docs_es) == 305
    # Write order numbers come from the run's clock: the same order, not the same numbers.
    for seq in ("seq", "cluster_seq"):
        assert sorted(docs_es, key=lambda k: (docs_es[k]["dedup"][seq], k)) == \
            sorted(docs_os, key=lambda k: (docs_os[k]["dedup"][seq], k)), seq
        for d in (*docs_es.values(), *docs_os.values()):
            del d["dedup"][seq]
    assert docs_es == docs_os
    clusters = {d["dedup"].get("cluster_id") for d in docs_es.values()}
    assert len(clusters) < len(docs_es)  # some documents were labelled duplicates of others

    # The Python API over the caller's own clients: an opensearch-py client is taken as it is.
    body = {"query": {"match": {"text": SHORT["s1"]}}}
    hits = [[h["_id"] for h in search_diversified(c, index_name, body, size=5)["hits"]["hits"]]
            for c in (es_client, os_client)]
    assert hits[0] and sorted(hits[0]) == sorted(hits[1])

    async def diversified_async() -> list[str]:
        from opensearchpy import AsyncOpenSearch

        client = AsyncOpenSearch(os_url)
        try:
            resp = await async_search_diversified(client, index_name, body, size=5)
            return [h["_id"] for h in resp["hits"]["hits"]]
        finally:
            await client.close()

    assert sorted(asyncio.run(diversified_async())) == sorted(hits[0])
    found = [sorted(m["id"] for m in SimilarFinder(open_store(index_name, client=c)).find(text=SHORT["s3"]).matches)
             for c in (es_client, os_client)]
    assert found[0] == found[1] == ["s3", "s4"]
    added = []
    for c in (es_client, os_client):
        store = open_store(index_name, client=c)
        added.append(Ingester(store, store.open(None, create=False).config).add(SHORT["s4"] + "。", id="s6"))
        store.close()
    assert added[0] == added[1] and added[0].status == "indexed" and added[0].cluster_id in ("s3", "s4")


def _without_index_details(value: Any) -> Any:
    """An answer with what names the server rather than the data (store class names are the same)."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return json.loads(re.sub(r"http://127\.0\.0\.1:\d+", "URL", text))


def test_the_review_page_over_opensearch(os_client: Any, tmp_path: Path) -> None:
    from tests.review_fixtures import ingest_sample

    name = f"esdedup-review-{uuid.uuid4().hex[:10]}"
    try:
        ingest_sample(open_store(name, client=os_client), tmp_path)
        review = Review(open_store(name, client=os_client), tmp_path / "labels.jsonl").prepare()
        try:
            with TestClient(create_app(review)) as c:
                overview = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", c.get("/").text))
                assert "15 documents" in overview and "5 clusters of two or more (10 documents)" in overview
                assert 'href="/cluster?id=rail-1"' in c.get("/clusters", params={"q": "高铁"}).text
                assert c.post("/label", data={"a": "rail-1", "b": "rail-2", "label": "1"},
                              follow_redirects=False).status_code == 303
                search = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", c.get("/search", params={"q": "高铁"}).text))
                assert "Raw hits (2)" in search and "diversify(hits): 1 kept" in search
        finally:
            review.close()
    finally:
        os_client.indices.delete(index=name, ignore_unavailable=True)


def test_an_engine_asked_for_is_used_and_a_wrong_one_is_refused(os_url: str, index_name: str,
                                                               corpus_file: Path) -> None:
    """``--engine`` (a proxy may hide the product): OpenSearch asked for an OpenSearch node works; an API key
    is refused before any request (OpenSearch has none)."""
    r = runner.invoke(app, ["info", "--index", index_name, "--es", os_url, "--engine", "opensearch"])
    assert r.exit_code == 2 and f"index {index_name!r} does not exist at {os_url}" in r.stderr
    with pytest.raises(ConfigError, match="OpenSearch takes no API key"):
        open_store(index_name, connection=resolve_settings(os_url, api_key="k", engine="opensearch"))


def test_a_config_with_a_vector_keeps_it_in_source_and_refuses_knn(os_client: Any) -> None:
    name = f"esdedup-vector-{uuid.uuid4().hex[:10]}"
    try:
        store = open_store(name, client=os_client)
        store.open(FingerprintConfig(tokenizer="rjieba", vector_index="int8_flat"))
        mapping = os_client.indices.get_mapping(index=name)[name]["mappings"]["properties"]["dedup"]["properties"]
        assert mapping["vector"] == {"type": "float", "index": False, "doc_values": False}
        printed = json.loads(cli("mapping", "--index", name, "--engine", "opensearch", "--tokenizer", "rjieba",
                                 "--vector-index", "int8_flat").stdout)
        assert printed["mappings"]["properties"]["dedup"]["properties"] == mapping
    finally:
        os_client.indices.delete(index=name, ignore_unavailable=True)


# -- TLS and basic auth: nginx in front of the OpenSearch node, as in test_security.py ---------------------------
@pytest.fixture(scope="module")
def os_proxy(os_url: str, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """test_security.py's nginx (TLS, basic auth, client certificates) in front of the OpenSearch node: its
    fixture's own function, so that both engines sit behind the same proxy."""
    yield from security.proxy.__wrapped__(os_url, tmp_path_factory)


@pytest.mark.parametrize("engine", ["auto", "opensearch"])
def test_tls_basic_auth_and_client_certificates_on_opensearch(os_proxy: Any, os_client: Any, tmp_path: Path,
                                                             engine: str) -> None:
    """Through TLS with a password (the engine found through the proxy, or named), then with a client
    certificate too; a wrong password and an untrusted certificate are one clear line, no secret shown."""
    docs = security.make_docs(20, seed=67)
    path = tmp_path / "docs.jsonl"
    security.write_jsonl(path, docs)
    name = f"esdedup-tls-{uuid.uuid4().hex[:8]}"
    env = {"ESDEDUP_ES_USER": security.USER, "ESDEDUP_ES_PASSWORD": security.PASSWORD, "ESDEDUP_ENGINE": engine}
    try:
        r = security._ingest(os_proxy.url, name, path, tmp_path, "--ca-certs", os_proxy.ca, env=env)
        security._ok(r, len(docs))
        r = security._ingest(os_proxy.mtls_url, name, path, tmp_path / "m", "--ca-certs", os_proxy.ca,
                             "--client-cert", os_proxy.client_cert, "--client-key", os_proxy.client_key, env=env)
        security._ok(r, len(docs))
        r = security.run_cli("similar", "--index", name, "--text", docs[3]["text"], "--json", "--es", os_proxy.url,
                             "--ca-certs", os_proxy.ca, env=env)
        security._assert_clean(r)
        assert r.returncode == 0 and json.loads(r.stdout)["matches"][0]["id"] == docs[3]["id"], r.stderr[-2000:]
        assert os_client.count(index=name)["count"] == len(docs)  # written into OpenSearch, through the proxy

        wrong = {**env, "ESDEDUP_ES_PASSWORD": security.WRONG_PASSWORD}
        r = security._ingest(os_proxy.url, name, path, tmp_path / "w", "--ca-certs", os_proxy.ca, env=wrong)
        security._assert_clean(r)
        line = security._error_line(r)
        assert r.returncode == 3 and "401" in line and "credentials" in line, line
        r = security._ingest(os_proxy.url, name, path, tmp_path / "u", env=env)
        security._assert_clean(r)
        line = security._error_line(r)
        assert r.returncode == 3 and "certificate verify failed" in line and "--ca-certs" in line, line
    finally:
        os_client.indices.delete(index=name, ignore_unavailable=True)


def test_a_write_block_on_opensearch_stops_the_run_and_resume_writes_what_it_refused(os_url: str, os_client: Any,
                                                                                     tmp_path: Path) -> None:
    """The store's refusal holds on OpenSearch as on Elasticsearch (test_faults.py's write-block test): the run
    stops with exit 3 naming the block, nothing it did not confirm is checkpointed, and --resume once the block
    is lifted writes every record."""
    from tests.reliability import balanced, dead_letters, index_ids, last_json, write_corpus

    name = f"esdedup-block-{uuid.uuid4().hex[:8]}"
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    write_corpus(first, 30, seed=70, prefix="a")
    docs = write_corpus(second, 200, seed=71, prefix="b")
    common = ("--index", name, "--es", os_url, "--tokenizer", "rjieba", "--workers", "1", "--json", "--replicas", "0")
    ck, dl = tmp_path / "ck.json", tmp_path / "dl.jsonl"
    try:
        assert security.run_cli("ingest", first, *common).returncode == 0
        os_client.indices.put_settings(index=name, body={"index.blocks.write": True})
        try:
            r = security.run_cli("ingest", second, *common, "--checkpoint", ck, "--dead-letter", dl, timeout=300)
            assert "Traceback" not in r.stderr and r.returncode == 3, (r.returncode, r.stderr[-3000:])
            assert "refused to write" in r.stderr and "cluster_block_exception" in r.stderr, r.stderr[-3000:]
            s = last_json(r.stdout)
            assert balanced(s) and s["indexed"] == 0 and s["error"], s
            assert all(d["kind"] == "unconfirmed" for d in dead_letters(dl))
        finally:
            os_client.indices.put_settings(index=name, body={"index.blocks.write": None})
        r = security.run_cli("ingest", second, *common, "--checkpoint", ck, "--dead-letter", dl, "--resume",
                             timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        s = last_json(r.stdout)
        assert s["read"] == len(docs) and s["indexed"] == len(docs) and s["failed"] == 0, s
        stored = set(index_ids(opensearch.wrap(os_client), name))
        assert stored == {d["id"] for d in docs} | {f"a{i:06d}" for i in range(30)}
    finally:
        os_client.indices.delete(index=name, ignore_unavailable=True)
