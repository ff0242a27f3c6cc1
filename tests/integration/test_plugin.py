"""The Elasticsearch plugin (plugin/) on a real node: the ingest processor writes the same dedup fields as
`esdedup ingest`, and the `esdedup` scripts answer as the Python rule does.

The plugin zip comes from the Maven build (``cd plugin && mvn -o package -Dpython=...``) or from
``ESDEDUP_PLUGIN_ZIP``; the fixture starts its own node with it (``scripts/es-local start --plugin``), or uses
``ESDEDUP_TEST_PLUGIN_ES_URL`` (a node that already has the plugin). Without a zip the tests fail with the
build command: they never skip silently.
"""
from __future__ import annotations

import json
import os
import random
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from esdedup_cli.main import app
from typer.testing import CliRunner

from esdedup import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprinter
from esdedup.match.lookup import verify
from esdedup.match.thresholds import Thresholds
from esdedup.schema import dedup_source
from esdedup.store.elastic.store import ElasticStore
from tests.bench_runs import run_bench_script
from tests.es_node import EARLY_STARTS, LocalCluster, given_url

pytestmark = [pytest.mark.es, pytest.mark.plugin]

REPO = Path(__file__).resolve().parents[2]
# What a writer adds, not the text: the labels and the write order (`dedup.seq`, `dedup.cluster_seq`), which
# `esdedup ingest` sets and the node's processor does not (it stamps `seq` only, when the document arrives).
LABELS = ("cluster_id", "duplicate_of", "seq", "cluster_seq")


#: The plugin builds for these servers (plugin/pom.xml; the 9.x one with the Maven profile es9): a plugin loads
#: only on the exact version it was built for.
BUILDS = {"8.19.21": ("target", []), "9.2.0": ("target/es9", ["-Pes9"])}


def server_version() -> str:
    """The version the node fixtures start (tests/conftest.py sets it from the client's major)."""
    return os.environ.get("ESDEDUP_ES_VERSION") or "8.19.21"


def plugin_zip(version: str) -> Path:
    """The plugin zip for ``version``: ``ESDEDUP_PLUGIN_ZIP``, else the Maven build's for that version, built here
    first when there is none (as the node fixtures start their nodes: the README's test command needs nothing done
    by hand)."""
    env = os.environ.get("ESDEDUP_PLUGIN_ZIP")
    if env:
        return Path(env)
    if version not in BUILDS:
        pytest.fail(f"the plugin builds for Elasticsearch {' and '.join(BUILDS)}, not {version}", pytrace=False)
    folder, profile = BUILDS[version]
    pattern = "esdedup-elasticsearch-*.zip" if not profile else f"esdedup-elasticsearch-*-es{version}.zip"
    found = sorted((REPO / "plugin" / folder).glob(pattern))
    if not found:
        _build_plugin(version, profile)
        found = sorted((REPO / "plugin" / folder).glob(pattern))
    if not found:
        pytest.fail(f"the Maven build made no plugin zip under plugin/{folder}", pytrace=False)
    return found[-1]


def _build_plugin(version: str, profile: list[str], engine: str = "elasticsearch") -> None:
    """``mvn package`` in plugin/ (offline first: a machine that built it once has the dependencies); the 9.x
    build (and the OpenSearch ones, ``engine``) on the JDK the node runs on, without its Java tests (the 8.x
    build runs them; the OpenSearch ones run in CI's parity build)."""
    import subprocess
    import sys

    env = dict(os.environ)
    if profile:
        java = subprocess.run([str(REPO / "scripts" / "es-local"), "java", "--engine", engine, "--version", version],
                              capture_output=True, text=True)
        if java.returncode == 0 and java.stdout.strip():
            env["JAVA_HOME"] = java.stdout.strip().splitlines()[-1]  # the JDK es-local runs the node on
        profile = [*profile, "-DskipTests"]
    cmd = ["mvn", "-B", "-q", "package", *profile, f"-Dpython={sys.executable}"]
    for attempt in (["-o"], []):
        proc = subprocess.run(cmd[:1] + attempt + cmd[1:], cwd=REPO / "plugin", capture_output=True, text=True, env=env)
        if proc.returncode == 0:
            return
    pytest.fail(f"building the plugin failed ({' '.join(cmd)} in plugin/):\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}",
                pytrace=False)


def _check_client_major(version: str) -> None:
    import elasticsearch

    if elasticsearch.__version__[0] != int(version.split(".")[0]):
        pytest.fail(f"the plugin's node runs Elasticsearch {version}, which needs the {version.split('.')[0]}.x Python "
                    f"client; this environment has elasticsearch {elasticsearch.__versionstr__} (or set "
                    "ESDEDUP_ES_VERSION to the server of the client's major)", pytrace=False)


def _start_plugin_node() -> LocalCluster:
    version = server_version()
    _check_client_major(version)
    cluster = LocalCluster(nodes=1, version=version, plugins=[str(plugin_zip(version))])
    cluster.start()
    return cluster


# started early, in the background, when the run selects a test using it (tests/es_node.py, EarlyStarts)
if not given_url("ESDEDUP_TEST_PLUGIN_ES_URL"):
    EARLY_STARTS.register("plugin_url", _start_plugin_node)


@pytest.fixture(scope="module")
def plugin_url() -> Iterator[str]:
    url = given_url("ESDEDUP_TEST_PLUGIN_ES_URL")
    if url:
        yield url
        return
    with EARLY_STARTS.held("plugin_url") as cluster:
        yield cluster.url


@pytest.fixture(scope="module")
def plugin_es(plugin_url):
    from elasticsearch import Elasticsearch

    client = Elasticsearch(plugin_url, request_timeout=120)
    yield client
    client.close()


def _edited(rng: random.Random, text: str) -> str:
    chars = list(text)
    for _ in range(max(1, len(chars) // 40)):
        i = rng.randrange(len(chars))
        chars[i] = rng.choice("的一是在不了有和人这中大为上个国")
    return "".join(chars)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, list[dict[str, str]]]:
    return plugin_corpus(tmp_path_factory.mktemp("plugin"))


def plugin_corpus(folder: Path) -> tuple[Path, list[dict[str, str]]]:
    """Real text (People's Daily paragraphs and articles, also in Traditional script), edited copies of some
    (near-duplicates), and edge cases: invisible characters, full-width forms, only stopwords (an empty
    fingerprint)."""
    import opencc

    from bench.corpora import peoples_daily_articles, peoples_daily_paragraphs

    rng = random.Random(17)
    paras = peoples_daily_paragraphs()
    texts = paras[::60][:300] + peoples_daily_articles(1500)[:40]
    s2t = opencc.OpenCC("s2t")  # one converter: each one loads its dictionaries
    texts += [s2t.convert(p) for p in paras[7::200][:60]]
    texts += [_edited(rng, t) for t in texts[:300:3]]
    texts += ["北\u200b京欢迎你\ufeff，ＨＥＬＬＯ　Ｗｏｒｌｄ！", "的了是", "C++ 与 C# 的 3.14% 差别",
              "東京タワーへ行きました 😀"]
    docs = [{"id": f"d{i}", "text": t} for i, t in enumerate(texts)]
    path = folder / "docs.jsonl"
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), "utf-8")
    return path, docs


def _sources(client, index: str) -> dict[str, dict]:
    client.indices.refresh(index=index)
    resp = client.search(index=index, size=10_000, query={"match_all": {}})
    out = {h["_id"]: h["_source"] for h in resp["hits"]["hits"]}
    # 9.x keeps dense vectors out of a plain _source and returns them when named
    vectors = client.search(index=index, size=10_000, query={"match_all": {}}, source=["dedup.vector"])
    for h in vectors["hits"]["hits"]:
        if "vector" in h["_source"].get("dedup", {}):
            out[h["_id"]]["dedup"]["vector"] = h["_source"]["dedup"]["vector"]
    return out


@pytest.fixture(scope="module")
def indexes(plugin_es, plugin_url, corpus, tmp_path_factory) -> Iterator[tuple[str, str, FingerprintConfig]]:
    """Index A written by `esdedup ingest`; index B by plain _bulk through the plugin's pipeline (its default
    pipeline, made by `esdedup pipeline put` from the config B carries, read from A's _meta)."""
    from elasticsearch import helpers

    path, docs = corpus
    suffix = uuid.uuid4().hex[:8]
    a, b, pipeline = f"plugin-a-{suffix}", f"plugin-b-{suffix}", f"esdedup-plugin-{suffix}"
    tmp = tmp_path_factory.mktemp("ingest")
    # With a vector (the default stores none), so that the scripts' cosines are compared too.
    result = CliRunner().invoke(app, ["ingest", str(path), "--index", a, "--es", plugin_url, "--workers", "1",
                                      "--replicas", "0", "--vector-index", "int8_flat",
                                      "--dead-letter", str(tmp / "dl.jsonl"), "--json"])
    assert result.exit_code == 0, result.output
    config = ElasticStore(plugin_es, a).open().config
    ElasticStore(plugin_es, b, replicas=0).open(config)
    made = CliRunner().invoke(app, ["pipeline", "put", "--index", b, "--es", plugin_url, "--name", pipeline])
    assert made.exit_code == 0 and made.stdout.strip() == pipeline, made.output
    assert plugin_es.indices.get_settings(index=b)[b]["settings"]["index"]["default_pipeline"] == pipeline
    ok, errors = helpers.bulk(plugin_es, ({"_index": b, "_id": d["id"], "_source": d} for d in docs))
    assert ok == len(docs) and not errors
    yield a, b, config
    plugin_es.indices.delete(index=[a, b])
    plugin_es.ingest.delete_pipeline(id=pipeline)


def test_the_pipeline_writes_every_dedup_field_as_esdedup_ingest_does(plugin_es, corpus, indexes):
    _, docs = corpus
    a, b, _ = indexes
    by_ingest, by_plugin = _sources(plugin_es, a), _sources(plugin_es, b)
    assert set(by_ingest) == set(by_plugin) == {d["id"] for d in docs}
    differ = []
    for doc_id, src in by_ingest.items():
        want = {k: v for k, v in src["dedup"].items() if k not in LABELS}
        if {k: v for k, v in by_plugin[doc_id]["dedup"].items() if k not in LABELS} != want:
            differ.append(doc_id)
    assert differ == [], f"{len(differ)} documents differ, e.g. {differ[:5]}"
    # the processor stamps the write order (when the document reached the node: one _bulk keeps its order) and
    # writes no labels
    seqs = [by_plugin[d["id"]]["dedup"]["seq"] for d in docs]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert not any("cluster_id" in s["dedup"] or "cluster_seq" in s["dedup"] for s in by_plugin.values())
    # the corpus reaches every part of the layout: long texts with band keys, short ones, empty ones
    fields = [set(s["dedup"]) for s in by_plugin.values()]
    assert any("band_0" in f for f in fields) and any("band_0" not in f and "lsh_keys" in f for f in fields)
    assert any("vector" in f for f in fields)
    assert any(s["dedup"]["empty"] for s in by_plugin.values())


def test_an_empty_text_is_rejected_as_esdedup_ingest_rejects_it(plugin_es, indexes):
    import elasticsearch

    with pytest.raises(elasticsearch.BadRequestError, match="is empty"):
        plugin_es.index(index=indexes[1], id="blank", document={"text": " \u3000\n"})


def test_the_pipeline_refuses_a_config_it_cannot_reproduce(plugin_es, indexes):
    import elasticsearch

    config = indexes[2].to_dict() | {"t2s": True}
    with pytest.raises(elasticsearch.BadRequestError, match="t2s"):
        plugin_es.ingest.put_pipeline(id="esdedup-t2s", processors=[{"esdedup_fingerprint": {"config": config}}])


def _script(source: str, params: dict) -> dict:
    return {"lang": "esdedup", "source": source, "params": params}


def test_scripts_find_the_near_duplicates_the_python_rule_finds(plugin_es, corpus, indexes):
    _, docs = corpus
    a, _, config = indexes
    store = ElasticStore(plugin_es, a)
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
        resp = plugin_es.search(index=a, size=1000, query={"script_score": {
            "query": {"match_all": {}}, "script": _script("near_duplicate", params), "min_score": 1.0}},
            script_fields={"hamming": {"script": _script("hamming", params)},
                           "cosine": {"script": _script("cosine", params)}})
        server = {h["_id"]: (h["fields"]["hamming"][0], h["fields"]["cosine"][0]) for h in resp["hits"]["hits"]}
        client = {m.id: (m.hamming, m.cosine) for m in verify(fp, stored, config, t)}
        assert server == client, text[:40]
        found_any += bool(client)
        # the score orders as esdedup does: by Hamming distance, then by cosine
        order = [h["_id"] for h in resp["hits"]["hits"] if server[h["_id"]][0] is not None]
        assert [server[i][0] for i in order] == sorted(server[i][0] for i in order)
    assert found_any >= len(queries) // 2


@pytest.fixture(scope="module")
def default_index(plugin_es, plugin_url, corpus, tmp_path_factory) -> Iterator[tuple[str, FingerprintConfig]]:
    """The corpus written by `esdedup ingest` under the default config: no TF vector, so a short text is not
    segmented and carries no SimHash (`FingerprintConfig.gets_terms`)."""
    path, _ = corpus
    name = f"plugin-default-{uuid.uuid4().hex[:8]}"
    tmp = tmp_path_factory.mktemp("ingest-default")
    result = CliRunner().invoke(app, ["ingest", str(path), "--index", name, "--es", plugin_url, "--workers", "1",
                                      "--replicas", "0", "--dead-letter", str(tmp / "dl.jsonl"), "--json"])
    assert result.exit_code == 0, result.output
    config = ElasticStore(plugin_es, name).open().config
    assert not config.stores_vector
    yield name, config
    plugin_es.indices.delete(index=name)


def test_a_text_without_simhash_has_no_hamming_on_the_node(plugin_es, corpus, default_index):
    """Where a side carries no SimHash, the scripts give no Hamming (field null, score 0), as the Python measures
    do; near_duplicate decides and ranks such a pair as esdedup does (after any Hamming distance), and
    `similar --server-side` shows what the client path shows."""
    import elasticsearch

    from esdedup.match.lookup import similar, similar_on_node

    _, docs = corpus
    name, config = default_index
    store = ElasticStore(plugin_es, name)
    store.open()
    stored = [d for batch in store.scan() for d in batch]
    fper = Fingerprinter(config)
    t = Thresholds.from_config(config)
    fps = {d["id"]: fper.fingerprint(d["text"]) for d in docs}
    shorts = [d for d in docs if not fps[d["id"]].empty and not config.gets_terms(fps[d["id"]].chars)]
    longs = [d for d in docs if config.gets_terms(fps[d["id"]].chars)]
    assert len(shorts) >= 20 and len(longs) >= 20
    without = with_ = 0
    for d in shorts[::10] + longs[::10]:
        fp = fps[d["id"]]
        query = dedup_source(fp, config)
        query["vector"] = np.asarray(fp.vector, dtype=np.float64).tolist()
        params = {"query": query, **t.to_dict(), "strategy": config.strategy,
                  "short_text_chars": config.short_text_chars, "vector_index": config.vector_index}
        resp = plugin_es.search(index=name, size=1000, query={"script_score": {
            "query": {"match_all": {}}, "script": _script("near_duplicate", params), "min_score": 1.0}},
            script_fields={"hamming": {"script": _script("hamming", params)}})
        server = {h["_id"]: h["fields"]["hamming"][0] for h in resp["hits"]["hits"]}
        client = {m.id: m.hamming for m in verify(fp, stored, config, t)}
        assert server == client, d["id"]
        without += sum(h is None for h in server.values())
        with_ += sum(h is not None for h in server.values())
        # nearest by Hamming first, a pair without one after any distance
        order = [server[h["_id"]] for h in resp["hits"]["hits"]]
        assert order == sorted(order, key=lambda h: (h is None, h or 0)), d["id"]
        # as a score, no SimHash is no evidence (as jaccard without signatures)
        scored = plugin_es.search(index=name, size=1000, query={"script_score": {
            "query": {"match_all": {}}, "script": _script("hamming", params)}})
        chars = {s.id: s.chars for s in stored}
        for h in scored["hits"]["hits"]:
            if not (config.gets_terms(fp.chars) and config.gets_terms(chars[h["_id"]])):
                assert h["_score"] == 0.0, (d["id"], h["_id"])
        node = similar_on_node(store, fp, top=50, exclude=d["id"])
        by_client = similar(store, [fp], top=50, exclude=[d["id"]])[0]
        assert sorted((m.id, m.hamming, m.jaccard is None) for m in node) == \
            sorted((m.id, m.hamming, m.jaccard is None) for m in by_client), d["id"]
    assert without > 0 and with_ > 0
    # without the vector_index the node cannot tell which texts carry a SimHash: refused, not guessed
    params.pop("vector_index")
    with pytest.raises(elasticsearch.BadRequestError) as refused:
        plugin_es.search(index=name, size=1, query={"script_score": {
            "query": {"match_all": {}}, "script": _script("hamming", params)}})
    assert "params.vector_index" in json.dumps(refused.value.body)
    # nor does the rule run without a Hamming distance or a cosine threshold (Thresholds refuses them too)
    params.update(vector_index=config.vector_index, hamming_k=None, cosine=None)
    with pytest.raises(elasticsearch.BadRequestError) as refused:
        plugin_es.search(index=name, size=1, query={"script_score": {
            "query": {"match_all": {}}, "script": _script("near_duplicate", params)}})
    assert "params.hamming_k, params.cosine" in json.dumps(refused.value.body)


def test_pipeline_put_refuses_what_the_plugin_cannot_reproduce_in_one_line(plugin_es, plugin_url, indexes):
    name = f"plugin-t2s-{uuid.uuid4().hex[:8]}"
    ElasticStore(plugin_es, name, replicas=0).open(indexes[2].replace(t2s=True))
    try:
        made = CliRunner().invoke(app, ["pipeline", "put", "--index", name, "--es", plugin_url])
        assert made.exit_code == 2, made.output
        assert "refused the index's config" in made.stderr and "t2s" in made.stderr
        assert "Traceback" not in made.output
    finally:
        plugin_es.indices.delete(index=name)


def test_similar_on_the_node_answers_as_the_client_path(plugin_es, plugin_url, corpus, indexes):
    """`similar --server-side` (one request, the node verifies) gives the client path's matches and measures."""
    from esdedup.match.lookup import similar, similar_on_node

    _, docs = corpus
    a, _, config = indexes
    store = ElasticStore(plugin_es, a)
    store.open()
    fper = Fingerprinter(config)
    compared = signed = 0
    for d in docs[::5]:
        fp = fper.fingerprint(d["text"])
        client = similar(store, [fp], top=50, exclude=[d["id"]])[0]
        node = similar_on_node(store, fp, top=50, exclude=d["id"])
        # the same matches in the same order (nearest first, as Match.rank)
        assert [(m.id, m.hamming, round(m.cosine, 5), m.jaccard is None) for m in node] == \
            [(m.id, m.hamming, round(m.cosine, 5), m.jaccard is None) for m in client], d["id"]
        signed += sum(m.jaccard is not None for m in client)
        compared += bool(client)
    assert compared >= 5 and signed > 0
    doc = next(d for d in docs if d["text"].strip())
    cli_run = CliRunner().invoke(app, ["similar", "--index", a, "--es", plugin_url, "--id", doc["id"], "--server-side",
                                       "--json"])
    assert cli_run.exit_code == 0, cli_run.output
    assert json.loads(cli_run.stdout)["query"]["path"] == "node"


def test_similar_on_the_node_ranks_as_the_client_path_where_the_node_scores_otherwise(plugin_es, plugin_url, tmp_path):
    """The node scores by Hamming, then cosine; esdedup ranks a pair with signatures by Jaccard first. A text's
    sentences in reverse order keep its terms (Hamming 0) but lose bigrams, and one edited character keeps more
    bigrams: `similar --server-side` shows them in the client path's order all the same."""
    from esdedup.match.lookup import similar, similar_on_node

    base = ("今年以来，全国各地认真贯彻中央的决策部署，经济运行总体平稳，"
            "就业形势保持稳定，居民收入稳步增长，市场供应充足，物价水平基本稳定")
    reversed_ = "，".join(reversed(base.split("，")))
    edited = base.replace("就业", "就职", 1)
    name = f"plugin-rank-{uuid.uuid4().hex[:8]}"
    path = _write_jsonl(tmp_path / "docs.jsonl", [{"id": "base", "text": base}, {"id": "reversed", "text": reversed_},
                                                  {"id": "edited", "text": edited}])
    made = CliRunner().invoke(app, ["ingest", str(path), "--index", name, "--es", plugin_url, "--replicas", "0",
                                    "--vector-index", "int8_flat", "--on-duplicate", "index"])
    assert made.exit_code == 0, made.output
    try:
        store = ElasticStore(plugin_es, name)
        store.open()
        fp = Fingerprinter(store.config).fingerprint(base)
        client = similar(store, [fp], top=10, exclude=["base"])[0]
        node = similar_on_node(store, fp, top=10, exclude="base")
        assert [m.id for m in client] == ["edited", "reversed"]  # Jaccard first
        assert client[1].hamming == 0 < client[0].hamming  # the node's own score puts "reversed" first
        assert [(m.id, m.hamming, m.jaccard) for m in node] == [(m.id, m.hamming, m.jaccard) for m in client]
    finally:
        plugin_es.indices.delete(index=name)


def _labels(client, index: str) -> dict[str, tuple]:
    return {i: (s["dedup"].get("cluster_id"), s["dedup"].get("duplicate_of")) for i, s in _sources(client, index).items()}


def _write_jsonl(path: Path, docs: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), "utf-8")
    return path


def test_label_gives_pipeline_documents_the_clusters_esdedup_ingest_gives(plugin_es, plugin_url, corpus, indexes,
                                                                         tmp_path):
    """Documents bulk-written through the pipeline, then `esdedup label`: the clusters and representatives of
    `esdedup ingest` of the same corpus in the same order. In two waves: the second written while label runs
    keep running beside the writer, then one more run labels what is new since; a further run finds nothing."""
    import threading
    import time

    from elasticsearch import helpers

    from esdedup.ingest.label import label_new

    _, docs = corpus
    _, _, config = indexes
    first, second = docs[: len(docs) * 3 // 5], docs[len(docs) * 3 // 5 :]
    suffix = uuid.uuid4().hex[:8]
    a, b = f"label-a-{suffix}", f"label-b-{suffix}"
    try:
        for wave in (first, second):  # one ingest per wave, in the order the pipeline gets them
            path = _write_jsonl(tmp_path / f"wave{len(wave)}.jsonl", wave)
            done = CliRunner().invoke(app, ["ingest", str(path), "--index", a, "--es", plugin_url, "--workers", "1",
                                            "--replicas", "0", "--dead-letter", str(tmp_path / "dl.jsonl")])
            assert done.exit_code == 0, done.output
        ElasticStore(plugin_es, b, replicas=0).open(config)
        made = CliRunner().invoke(app, ["pipeline", "put", "--index", b, "--es", plugin_url])
        assert made.exit_code == 0, made.output
        ok, _ = helpers.bulk(plugin_es, ({"_index": b, "_id": d["id"], "_source": d} for d in first))
        assert ok == len(first)
        assert all(c is None for c, _ in _labels(plugin_es, b).values())  # the processor writes no labels

        ran = CliRunner().invoke(app, ["label", "--index", b, "--es", plugin_url, "--json"])
        assert ran.exit_code == 0, ran.output
        summary = json.loads(ran.stdout)
        assert summary["found"] == summary["labelled"] == len(first) and summary["changed"] == 0

        writing = threading.Event()
        writing.set()
        runs = []

        def keep_labelling() -> None:
            store = ElasticStore(plugin_es, b)
            while writing.is_set():
                runs.append(label_new(store, batch=50))
                time.sleep(0.05)

        labeller = threading.Thread(target=keep_labelling)
        labeller.start()
        try:
            for start in range(0, len(second), 20):  # small bulks, refreshed, so the runs see them arrive
                helpers.bulk(plugin_es, ({"_index": b, "_id": d["id"], "_source": d} for d in second[start : start + 20]),
                             refresh=True)
        finally:
            writing.clear()
            labeller.join()
        assert sum(r.labelled for r in runs) > 0  # the runs beside the writer labelled some of the new ones
        last = label_new(ElasticStore(plugin_es, b))
        assert last.changed == 0 and sum(r.labelled for r in runs) + last.labelled == len(second)

        want, got = _labels(plugin_es, a), _labels(plugin_es, b)
        assert set(got) == {d["id"] for d in docs}
        differ = sorted(i for i in want if want[i] != got[i])
        assert differ == [], [(i, want[i], got[i]) for i in differ[:5]]
        assert sum(1 for _, dup in want.values() if dup) >= 50  # the corpus has near-duplicates across the waves

        again = label_new(ElasticStore(plugin_es, b))
        assert (again.found, again.labelled, again.relabelled) == (0, 0, 0)
        assert _labels(plugin_es, b) == got
    finally:
        plugin_es.indices.delete(index=[a, b], ignore_unavailable=True)
        plugin_es.options(ignore_status=404).ingest.delete_pipeline(id=f"esdedup-{b}")


def test_label_in_partitions_leaves_the_labels_of_one_run(plugin_es, plugin_url, corpus, indexes):
    """The same documents bulk-written through the pipeline into two indexes in the same order: one `esdedup
    label` on the first; on the second, `label --partition I/3` as three processes at once, one of them
    stopped after its first batch and run again. Each document is labelled by one partition, and the labels
    are those of the one run."""
    import subprocess
    import sys

    from elasticsearch import helpers

    from esdedup.ingest.label import label_new
    from esdedup.store.partition import Partition

    _, docs = corpus
    _, _, config = indexes
    suffix = uuid.uuid4().hex[:8]
    one, parts = f"label-one-{suffix}", f"label-parts-{suffix}"
    try:
        for name in (one, parts):
            ElasticStore(plugin_es, name, replicas=0).open(config)
            made = CliRunner().invoke(app, ["pipeline", "put", "--index", name, "--es", plugin_url])
            assert made.exit_code == 0, made.output
            ok, _ = helpers.bulk(plugin_es, ({"_index": name, "_id": d["id"], "_source": d} for d in docs))
            assert ok == len(docs)
        ran = CliRunner().invoke(app, ["label", "--index", one, "--es", plugin_url, "--json"])
        assert ran.exit_code == 0, ran.output
        assert json.loads(ran.stdout)["labelled"] == len(docs)

        class Stopped(Exception):
            pass

        def stop(_summary) -> None:
            raise Stopped  # as a process killed between two batches

        with pytest.raises(Stopped):
            label_new(ElasticStore(plugin_es, parts), batch=50, progress=stop, partition=Partition(1, 3))
        cmd = [sys.executable, "-m", "esdedup_cli", "label", "--index", parts, "--es", plugin_url, "--json"]
        procs = [subprocess.Popen([*cmd, "--partition", f"{i}/3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for i in range(3)]
        summaries = []
        for proc in procs:
            out, err = proc.communicate(timeout=600)
            assert proc.returncode == 0 and out == "", err
            summaries.append(json.loads(err.strip().splitlines()[-1]))
        assert [s["partition"] for s in summaries] == ["0/3", "1/3", "2/3"]
        assert all(s["event"] == "summary" and s["changed"] == 0 for s in summaries)
        stopped_first = 50
        assert sum(s["labelled"] for s in summaries) == len(docs) - stopped_first
        assert all(s["found"] > 0 for s in summaries)  # every share had documents to label

        want, got = _labels(plugin_es, one), _labels(plugin_es, parts)
        assert set(got) == {d["id"] for d in docs}
        differ = sorted(i for i in want if want[i] != got[i])
        assert differ == [], [(i, want[i], got[i]) for i in differ[:5]]
        assert sum(1 for _, dup in want.values() if dup) >= 50
        again = label_new(ElasticStore(plugin_es, parts), partition=Partition(2, 3))
        assert (again.found, again.labelled) == (0, 0)
    finally:
        plugin_es.indices.delete(index=[one, parts], ignore_unavailable=True)
        for name in (one, parts):
            plugin_es.options(ignore_status=404).ingest.delete_pipeline(id=f"esdedup-{name}")


@pytest.mark.es
def test_the_plugin_offers_a_jieba_analyzer_that_segments_as_jieba(plugin_url, tmp_path, monkeypatch) -> None:
    """The plugin's `jieba` analyzer and tokenizer cut text fields into jieba's words (lower-cased, no spaces
    or punctuation), so `--text-analyzer jieba` matches Chinese by word: 电动车 finds no 电 or 车 alone."""
    import jieba
    from elasticsearch import Elasticsearch

    client = Elasticsearch(plugin_url, request_timeout=120)
    texts = ["今天上午，连接两座省会城市的新高铁线路正式开通运营。", "新能源汽车销量超过800万辆，iPhone 用户也在买电动车",
             "他来到了网易杭研大厦", "小明硕士毕业于中国科学院计算所，后在日本京都大学深造"]
    try:
        for text in texts:
            for kind in ("analyzer", "tokenizer"):
                got = [t["token"] for t in client.indices.analyze(**{kind: "jieba"}, text=text)["tokens"]]
                want = [w.lower() for w in jieba.lcut(text) if any(c.isalnum() for c in w)]
                assert got == want, (kind, text)
        for var in ("ESDEDUP_ES_URL", "ESDEDUP_ES_API_KEY", "ESDEDUP_ES_USER", "ESDEDUP_ES_PASSWORD"):
            monkeypatch.delenv(var, raising=False)
        monkeypatch.setenv("ESDEDUP_DATA_DIR", str(tmp_path / "data"))
        made = CliRunner().invoke(app, ["index", "create", "--index", "worded", "--text-analyzer", "jieba", "--es",
                                      plugin_url])
        assert made.exit_code == 0, made.output
        for i, text in enumerate(["电池的价格下降了", "他买了一辆车", "电动车的销量增长"]):
            client.index(index="worded", id=str(i), document={"text": text}, refresh=True, pipeline="_none")
        hits = client.search(index="worded", query={"match": {"text": "电动车"}})["hits"]["hits"]
        assert [h["_id"] for h in hits] == ["2"]
    finally:
        client.options(ignore_status=404).indices.delete(index="worded")
        client.close()


@pytest.mark.es
def test_the_plugin_walkthrough_runs_as_written(plugin_url, tmp_path):
    """The plugin block on a node with the plugin (the fixture builds it and starts the node, as the block's
    `mvn package` and `es-local start --plugin` do): the pipeline fingerprints what `_bulk` sends, and `label`
    labels the reprints."""
    import re
    import urllib.request

    from tests.integration.test_readme import run_lines, section_block

    env = {k: v for k, v in os.environ.items() if k not in ("ESDEDUP_ES_URL", "ESDEDUP_ES_API_KEY", "ESDEDUP_ES_USER",
                                                            "ESDEDUP_ES_PASSWORD")}
    env.update(ESDEDUP_DATA_DIR=str(tmp_path / "data"), ESDEDUP_CONFIG=str(tmp_path / "none.json"))
    block = section_block("Inside Elasticsearch (plugin)", document="docs/plugin.md")
    made, _put, _bulk, label = run_lines(block, plugin_url, env, skip=("cd plugin", "scripts/es-local"))
    assert made == "created index 'wire'\n"
    labelled = re.match(r"(\d+) unlabelled documents: (\d+) labelled \((\d+) near-duplicates\)", label)
    assert labelled and labelled.groups() == ("13", "13", "4"), label
    urllib.request.urlopen(urllib.request.Request(f"{plugin_url}/wire", method="DELETE"), timeout=60).read()


def test_the_scale_doc_label_block_runs_as_written(plugin_url, tmp_path):
    """docs/scale.md's `label --partition` block on a node with the plugin, with bash (its partitions run at
    once): the three summaries together label the 13 documents and their 4 near-duplicates, once each, and a
    further `label` finds nothing."""
    import re
    import subprocess
    import sys
    import urllib.request

    from tests.integration.test_readme import section_block

    block = section_block("Labelling new documents in partitions", document="docs/scale.md")
    assert "--partition $i/3" in block
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "news.bulk.ndjson").write_bytes((REPO / "examples" / "news.bulk.ndjson").read_bytes())
    env = {k: v for k, v in os.environ.items() if k not in ("ESDEDUP_ES_URL", "ESDEDUP_ES_API_KEY", "ESDEDUP_ES_USER",
                                                            "ESDEDUP_ES_PASSWORD")}
    env.update(ESDEDUP_DATA_DIR=str(tmp_path / "data"), ESDEDUP_CONFIG=str(tmp_path / "none.json"),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    wire = f"{plugin_url}/wire"
    urllib.request.urlopen(urllib.request.Request(f"{wire}?ignore_unavailable=true", method="DELETE"), timeout=60)
    try:
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", block.replace("http://127.0.0.1:9250", plugin_url)],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        lines = done.stdout.splitlines()
        summaries = [json.loads(ln) for ln in lines[-4:-1]]
        assert [(s["event"], s["partition"]) for s in summaries] == [("summary", f"{i}/3") for i in range(3)]
        assert sum(s["labelled"] for s in summaries) == sum(s["found"] for s in summaries) == 13
        assert sum(s["duplicates"] for s in summaries) == 4
        assert re.match(r"0 unlabelled documents: 0 labelled", lines[-1]), lines[-1]
    finally:
        urllib.request.urlopen(urllib.request.Request(f"{wire}?ignore_unavailable=true", method="DELETE"), timeout=60)


@pytest.mark.es
def test_the_plugin_benchmark_runs_and_both_lookup_paths_answer_alike(plugin_url):
    """`bench/plugin.py` on a few poems, on the node with the plugin: every row of its table, and the client's
    and the node's `similar` give the same answers (the script asserts it for every lookup)."""
    run_bench_script(["plugin.py", "--es", plugin_url, "--docs", "300", "--rounds", "1", "--lookups", "5"],
         r"Elasticsearch \d+\.\d+\.\d+ single node with the esdedup plugin \(heap [\d.]+ GiB, 1 shard(.|\n)*"
         r"\| plain `_bulk` through the pipeline, then `esdedup label` \| [\d,]+ \|(.|\n)*"
         r"\| esdedup ingest `--on-duplicate label` \| [\d,]+ \|(.|\n)*"
         r"lookups found near-duplicates, same answers on both paths")
