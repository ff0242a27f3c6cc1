"""The esdedup plugin for OpenSearch (plugin/, Maven profiles ``opensearch`` and ``opensearch3``) on a real
OpenSearch node: the ingest processor writes, bit for bit, the dedup fields `esdedup ingest` writes, the
`esdedup` scripts answer as the Python rule does, `esdedup pipeline put` and `esdedup label` work, and the
`jieba` analyzer cuts as jieba does. The Elasticsearch plugin's tests (tests/integration/test_plugin.py), on
OpenSearch.

The zip comes from ``ESDEDUP_OS_PLUGIN_ZIP`` or from the Maven build for the node's version (built here when
missing); the fixture starts its own node with it (``scripts/es-local start --engine opensearch --plugin``), or
uses ``ESDEDUP_TEST_PLUGIN_OS_URL`` (a node that already has the plugin). The version is ``ESDEDUP_OS_VERSION``
(default 2.19.6).
"""
from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from esdedup_cli.main import app
from typer.testing import CliRunner

from esdedup import FingerprintConfig
from esdedup.es import opensearch
from esdedup.fingerprint.fingerprinter import Fingerprinter
from esdedup.match.lookup import similar, similar_on_node, verify
from esdedup.match.thresholds import Thresholds
from esdedup.schema import content_sha1, dedup_source
from esdedup.store.elastic.store import ElasticStore
from tests.es_node import EARLY_STARTS, OS_VERSION, LocalCluster, given_url
from tests.integration.test_plugin import LABELS, REPO, _build_plugin, _script, _write_jsonl, plugin_corpus

pytestmark = [pytest.mark.es, pytest.mark.plugin, pytest.mark.opensearch]


def os_plugin_zip(version: str) -> Path:
    """The plugin zip for OpenSearch ``version``: ``ESDEDUP_OS_PLUGIN_ZIP``, else the Maven build's
    (``-Popensearch`` for 2.x, ``-Popensearch3`` for 3.x), built here first when there is none."""
    env = os.environ.get("ESDEDUP_OS_PLUGIN_ZIP")
    if env:
        return Path(env)
    zip_path = REPO / "plugin" / "target" / f"esdedup-opensearch-0.1.0-os{version}.zip"
    if not zip_path.exists():
        profile = "-Popensearch3" if version.split(".")[0] == "3" else "-Popensearch"
        _build_plugin(version, [profile, f"-Dopensearch.version={version}"], engine="opensearch")
    if not zip_path.exists():
        pytest.fail(f"the Maven build made no {zip_path.relative_to(REPO)}", pytrace=False)
    return zip_path


def _start_plugin_node() -> LocalCluster:
    cluster = LocalCluster(nodes=1, engine="opensearch", version=OS_VERSION, plugins=[str(os_plugin_zip(OS_VERSION))])
    cluster.start()
    return cluster


# started early, in the background, when the run selects a test using it (tests/es_node.py, EarlyStarts)
if not given_url("ESDEDUP_TEST_PLUGIN_OS_URL"):
    EARLY_STARTS.register("plugin_os_url", _start_plugin_node)


@pytest.fixture(scope="module")
def plugin_os_url() -> Iterator[str]:
    url = given_url("ESDEDUP_TEST_PLUGIN_OS_URL")
    if url:
        yield url
        return
    with EARLY_STARTS.held("plugin_os_url") as cluster:
        yield cluster.url


@pytest.fixture(scope="module")
def plugin_os(plugin_os_url) -> Iterator[Any]:
    """An opensearch-py client of the node with the plugin."""
    from opensearchpy import OpenSearch

    client = OpenSearch(plugin_os_url, timeout=120)
    yield client
    client.close()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, list[dict[str, str]]]:
    """The Elasticsearch plugin tests' corpus (real texts, edited copies, edge cases)."""
    return plugin_corpus(tmp_path_factory.mktemp("osplugin"))


def _store(client: Any, index: str, **kw: Any) -> ElasticStore:
    return ElasticStore(opensearch.wrap(client), index, **kw)


def _sources(client: Any, index: str) -> dict[str, dict]:
    client.indices.refresh(index=index)
    resp = client.search(index=index, body={"size": 10_000, "query": {"match_all": {}}})
    return {h["_id"]: h["_source"] for h in resp["hits"]["hits"]}


def _bulk(client: Any, index: str, docs: list[dict[str, str]], refresh: bool = False) -> int:
    from opensearchpy import helpers

    ok, errors = helpers.bulk(client, ({"_index": index, "_id": d["id"], "_source": d} for d in docs), refresh=refresh)
    assert not errors
    return int(ok)


def _cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


@pytest.fixture(scope="module")
def indexes(plugin_os, plugin_os_url, corpus, tmp_path_factory) -> Iterator[tuple[str, str, FingerprintConfig]]:
    """Index A written by `esdedup ingest`; index B by plain _bulk through the plugin's pipeline (its default
    pipeline, made by `esdedup pipeline put` from the config B carries, read from A's _meta)."""
    path, docs = corpus
    suffix = uuid.uuid4().hex[:8]
    a, b, pipeline = f"osplugin-a-{suffix}", f"osplugin-b-{suffix}", f"esdedup-osplugin-{suffix}"
    tmp = tmp_path_factory.mktemp("ingest")
    # With a vector (the default stores none; on OpenSearch it is kept in _source), so that the scripts' cosines
    # are compared too.
    result = _cli("ingest", str(path), "--index", a, "--es", plugin_os_url, "--workers", "1", "--replicas", "0",
                  "--vector-index", "int8_flat", "--dead-letter", str(tmp / "dl.jsonl"), "--json")
    assert result.exit_code == 0, result.output
    config = _store(plugin_os, a).open().config
    _store(plugin_os, b, replicas=0).open(config)
    made = _cli("pipeline", "put", "--index", b, "--es", plugin_os_url, "--name", pipeline)
    assert made.exit_code == 0 and made.stdout.strip() == pipeline, made.output
    assert plugin_os.indices.get_settings(index=b)[b]["settings"]["index"]["default_pipeline"] == pipeline
    assert _bulk(plugin_os, b, docs) == len(docs)
    yield a, b, config
    plugin_os.indices.delete(index=f"{a},{b}")
    plugin_os.ingest.delete_pipeline(id=pipeline)


def test_the_plugin_is_the_opensearch_build_of_the_node_s_version(plugin_os):
    plugins = plugin_os.cat.plugins(format="json")
    assert [(p["component"], p["version"]) for p in plugins] == [("esdedup", "0.1.0")]
    assert plugin_os.info()["version"]["distribution"] == "opensearch"


def test_the_pipeline_writes_the_fields_of_the_client_bit_for_bit(plugin_os, corpus, indexes):
    """Every dedup field the node's processor writes equals what `esdedup ingest` wrote for the same text, and
    what the Python fingerprinter gives (`esdedup.schema.dedup_source`), to the last bit."""
    _, docs = corpus
    a, b, config = indexes
    by_ingest, by_plugin = _sources(plugin_os, a), _sources(plugin_os, b)
    assert set(by_ingest) == set(by_plugin) == {d["id"] for d in docs}
    fper = Fingerprinter(config)
    differ, differ_python = [], []
    for d in docs:
        node = {k: v for k, v in by_plugin[d["id"]]["dedup"].items() if k not in LABELS}
        if node != {k: v for k, v in by_ingest[d["id"]]["dedup"].items() if k not in LABELS}:
            differ.append(d["id"])
        # the client's own fields, through JSON as the node's answer came
        own = dedup_source(fper.fingerprint(d["text"]), config, content_sha1(fper.normalize(d["text"])))
        if node != json.loads(json.dumps(own)):
            differ_python.append(d["id"])
    assert differ == [] and differ_python == [], (differ[:5], differ_python[:5])
    # the processor stamps the write order (one _bulk keeps its order) and writes no labels
    seqs = [by_plugin[d["id"]]["dedup"]["seq"] for d in docs]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert not any("cluster_id" in s["dedup"] or "cluster_seq" in s["dedup"] for s in by_plugin.values())
    # the corpus reaches every part of the layout: long texts with band keys, short ones, empty ones, vectors
    fields = [set(s["dedup"]) for s in by_plugin.values()]
    assert any("band_0" in f for f in fields) and any("band_0" not in f and "lsh_keys" in f for f in fields)
    assert any("vector" in f for f in fields)
    assert any(s["dedup"]["empty"] for s in by_plugin.values())


def test_an_empty_text_and_a_config_the_plugin_cannot_reproduce_are_refused(plugin_os, plugin_os_url, indexes):
    from opensearchpy.exceptions import RequestError

    with pytest.raises(RequestError, match="is empty"):
        plugin_os.index(index=indexes[1], id="blank", body={"text": " \u3000\n"})
    name = f"osplugin-t2s-{uuid.uuid4().hex[:8]}"
    _store(plugin_os, name, replicas=0).open(indexes[2].replace(t2s=True))
    try:
        made = _cli("pipeline", "put", "--index", name, "--es", plugin_os_url)
        assert made.exit_code == 2, made.output
        assert "refused the index's config" in made.stderr and "t2s" in made.stderr
        assert "Traceback" not in made.output
    finally:
        plugin_os.indices.delete(index=name)


def test_scripts_find_the_near_duplicates_the_python_rule_finds(plugin_os, corpus, indexes):
    _, docs = corpus
    a, _, config = indexes
    store = _store(plugin_os, a)
    store.open()
    stored = [d for batch in store.scan() for d in batch]
    fper = Fingerprinter(config)
    t = Thresholds.from_config(config)
    queries = [d["text"] for d in docs[::7]]
    found_any = 0
    for text in queries:
        fp = fper.fingerprint(text)
        query = dedup_source(fp, config)
        if not fp.empty:  # the query's own float32 values, as the client path compares them
            query["vector"] = np.asarray(fp.vector, dtype=np.float64).tolist()
        params = {"query": query, "hamming_k": t.hamming_k, "cosine": t.cosine, "jaccard": t.jaccard,
                  "containment": t.containment, "strategy": config.strategy,
                  "short_text_chars": config.short_text_chars, "vector_index": config.vector_index}
        resp = plugin_os.search(index=a, body={
            "size": 1000,
            "query": {"script_score": {"query": {"match_all": {}}, "script": _script("near_duplicate", params),
                                       "min_score": 1.0}},
            "script_fields": {"hamming": {"script": _script("hamming", params)},
                              "cosine": {"script": _script("cosine", params)}}})
        server = {h["_id"]: (h["fields"]["hamming"][0], h["fields"]["cosine"][0]) for h in resp["hits"]["hits"]}
        client = {m.id: (m.hamming, m.cosine) for m in verify(fp, stored, config, t)}
        assert server == client, text[:40]
        found_any += bool(client)
        # the score orders as esdedup does: by Hamming distance, then by cosine
        order = [h["_id"] for h in resp["hits"]["hits"]]
        assert [server[i][0] for i in order] == sorted(server[i][0] for i in order)
    assert found_any >= len(queries) // 2


def test_similar_on_the_node_answers_as_the_client_path(plugin_os, plugin_os_url, corpus, indexes):
    """`similar --server-side` (one request, the node verifies) gives the client path's matches and measures."""
    _, docs = corpus
    a, _, config = indexes
    store = _store(plugin_os, a)
    store.open()
    fper = Fingerprinter(config)
    compared = 0
    for d in docs[::5]:
        fp = fper.fingerprint(d["text"])
        client = similar(store, [fp], top=50, exclude=[d["id"]])[0]
        node = similar_on_node(store, fp, top=50, exclude=d["id"])
        assert sorted((m.id, m.hamming, round(m.cosine, 5), m.jaccard is None) for m in node) == \
            sorted((m.id, m.hamming, round(m.cosine, 5), m.jaccard is None) for m in client), d["id"]
        compared += bool(client)
    assert compared >= 5
    doc = next(d for d in docs if d["text"].strip())
    ran = _cli("similar", "--index", a, "--es", plugin_os_url, "--id", doc["id"], "--server-side", "--json")
    assert ran.exit_code == 0, ran.output
    assert json.loads(ran.stdout)["query"]["path"] == "node"


def _labels(client: Any, index: str) -> dict[str, tuple]:
    return {i: (s["dedup"].get("cluster_id"), s["dedup"].get("duplicate_of")) for i, s in _sources(client, index).items()}


def test_label_gives_pipeline_documents_the_clusters_esdedup_ingest_gives(plugin_os, plugin_os_url, corpus, indexes,
                                                                         tmp_path):
    """Documents bulk-written through the pipeline in two waves, `esdedup label` after each: the clusters and
    representatives `esdedup ingest` gives the same corpus in the same order; a further run finds nothing."""
    _, docs = corpus
    _, _, config = indexes
    first, second = docs[: len(docs) * 3 // 5], docs[len(docs) * 3 // 5 :]
    suffix = uuid.uuid4().hex[:8]
    a, b = f"oslabel-a-{suffix}", f"oslabel-b-{suffix}"
    try:
        for wave in (first, second):  # one ingest per wave, in the order the pipeline gets them
            path = _write_jsonl(tmp_path / f"wave{len(wave)}.jsonl", wave)
            done = _cli("ingest", str(path), "--index", a, "--es", plugin_os_url, "--workers", "1", "--replicas", "0",
                        "--dead-letter", str(tmp_path / "dl.jsonl"))
            assert done.exit_code == 0, done.output
        _store(plugin_os, b, replicas=0).open(config)
        made = _cli("pipeline", "put", "--index", b, "--es", plugin_os_url)
        assert made.exit_code == 0, made.output
        for wave in (first, second):
            assert _bulk(plugin_os, b, wave, refresh=True) == len(wave)
            ran = _cli("label", "--index", b, "--es", plugin_os_url, "--json")
            assert ran.exit_code == 0, ran.output
            summary = json.loads(ran.stdout)
            assert summary["found"] == summary["labelled"] == len(wave) and summary["changed"] == 0

        want, got = _labels(plugin_os, a), _labels(plugin_os, b)
        assert set(got) == {d["id"] for d in docs}
        differ = sorted(i for i in want if want[i] != got[i])
        assert differ == [], [(i, want[i], got[i]) for i in differ[:5]]
        assert sum(1 for _, dup in want.values() if dup) >= 50  # the corpus has near-duplicates across the waves

        again = _cli("label", "--index", b, "--es", plugin_os_url, "--json")
        assert again.exit_code == 0 and json.loads(again.stdout)["found"] == 0, again.output
        assert _labels(plugin_os, b) == got
    finally:
        plugin_os.indices.delete(index=f"{a},{b}", ignore_unavailable=True)
        plugin_os.ingest.delete_pipeline(id=f"esdedup-{b}", ignore=404)


def test_the_plugin_offers_a_jieba_analyzer_that_segments_as_jieba(plugin_os, plugin_os_url, tmp_path,
                                                                  monkeypatch) -> None:
    """The `jieba` analyzer and tokenizer cut text fields into jieba's words (lower-cased, no spaces or
    punctuation), so `--text-analyzer jieba` matches Chinese by word: 电动车 finds no 电 or 车 alone."""
    import jieba

    texts = ["今天上午，连接两座省会城市的新高铁线路正式开通运营。", "新能源汽车销量超过800万辆，iPhone 用户也在买电动车",
             "他来到了网易杭研大厦", "小明硕士毕业于中国科学院计算所，后在日本京都大学深造"]
    try:
        for text in texts:
            for kind in ("analyzer", "tokenizer"):
                got = [t["token"] for t in plugin_os.indices.analyze(body={kind: "jieba", "text": text})["tokens"]]
                want = [w.lower() for w in jieba.lcut(text) if any(c.isalnum() for c in w)]
                assert got == want, (kind, text)
        for var in ("ESDEDUP_ES_URL", "ESDEDUP_ES_API_KEY", "ESDEDUP_ES_USER", "ESDEDUP_ES_PASSWORD"):
            monkeypatch.delenv(var, raising=False)
        monkeypatch.setenv("ESDEDUP_DATA_DIR", str(tmp_path / "data"))
        made = _cli("index", "create", "--index", "osworded", "--text-analyzer", "jieba", "--es", plugin_os_url)
        assert made.exit_code == 0, made.output
        for i, text in enumerate(["电池的价格下降了", "他买了一辆车", "电动车的销量增长"]):
            plugin_os.index(index="osworded", id=str(i), body={"text": text}, refresh=True, pipeline="_none")
        hits = plugin_os.search(index="osworded", body={"query": {"match": {"text": "电动车"}}})["hits"]["hits"]
        assert [h["_id"] for h in hits] == ["2"]
    finally:
        plugin_os.indices.delete(index="osworded", ignore_unavailable=True)


def test_the_plugin_section_of_the_opensearch_page_runs_as_written(plugin_os, plugin_os_url, tmp_path):
    """docs/opensearch.md's plugin block on the node with the plugin (the fixture starts it, as the block's
    `es-local start --plugin` does): the index, its pipeline, the example articles sent by a plain _bulk, and
    `label` labels the reprints."""
    import re

    from tests.integration.test_readme import run_lines, section_block

    env = {k: v for k, v in os.environ.items() if k not in ("ESDEDUP_ES_URL", "ESDEDUP_ES_API_KEY", "ESDEDUP_ES_USER",
                                                            "ESDEDUP_ES_PASSWORD")}
    env.update(ESDEDUP_DATA_DIR=str(tmp_path / "data"), ESDEDUP_CONFIG=str(tmp_path / "none.json"))
    block = section_block("The plugin on OpenSearch", document="docs/opensearch.md")
    assert block.startswith("scripts/es-local start --engine opensearch") and "--plugin" in block.splitlines()[0]
    try:
        made, put, bulk, label = run_lines(block, plugin_os_url, env, skip=("scripts/es-local",))
        assert (made, put) == ("created index 'wire'\n", "esdedup-wire\n")
        assert json.loads(bulk)["errors"] is False
        labelled = re.match(r"(\d+) unlabelled documents: (\d+) labelled \((\d+) near-duplicates\)", label)
        assert labelled and labelled.groups() == ("13", "13", "4"), label
    finally:
        plugin_os.indices.delete(index="wire", ignore_unavailable=True)
        plugin_os.ingest.delete_pipeline(id="esdedup-wire", ignore=404)
