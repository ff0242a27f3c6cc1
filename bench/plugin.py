"""The Elasticsearch plugin's ingest processor against a plain _bulk and against esdedup ingest — one node.

    python bench/plugin.py --docs 20000                  # starts a local node with the plugin (scripts/es-local)
    python bench/plugin.py --docs 20000 --es URL         # a running cluster that has the plugin

Documents: Tang and Song poems from the npm package chinese-poetry (real text; see bench/corpora.py), sent as
bare {id, title, author, text} records. Rows, all into one shard without replicas:

* plain ``_bulk`` into an index without dedup fields;
* ``_bulk`` of esdedup's documents with the dedup fields computed beforehand in Python (what the node pays
  to index the fields alone);
* plain ``_bulk`` of the bare records into an esdedup index whose default pipeline is the plugin's
  ``esdedup_fingerprint`` processor (the node fingerprints: segmentation, hashes, vector, MinHash);
* ``esdedup ingest`` of the same records (fingerprints in Python worker processes), without lookups
  (``--on-duplicate index``) and labelling (the default);
* the pipeline ``_bulk`` followed by ``esdedup label`` (`esdedup.ingest.label.label_new`): the labels ingest gives,
  for documents any client wrote.

Then ``similar`` latency (``--lookups N``, 0 to skip) on the index ``esdedup ingest`` labelled: N stored poems,
each looked up (its fingerprint computed beforehand, itself excluded, top 10) by the client path (one
``_msearch`` band lookup, candidates verified in Python) and by the node (``similar --server-side``: one
``script_score`` request that returns only verified near-duplicates), interleaved; p50/p95/mean milliseconds
and the node's CPU for all N. The two answers must be the same for every lookup.

Every config is the default FingerprintConfig (tokenizer jieba: the plugin reproduces jieba, not rjieba). The
node is warmed up first (an untimed plain and pipeline bulk of the first documents); the bulk rows run
--rounds times (median, range in brackets). CPU seconds: the node's (``_nodes/stats``) and this process's
with its workers'; both share the machine's cores.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import corpora  # noqa: E402
from elasticsearch import Elasticsearch  # noqa: E402
from es import Timed, median, node_description, pct, timed_bulk  # noqa: E402

from esdedup import FingerprintConfig  # noqa: E402
from esdedup.fingerprint.fingerprinter import Fingerprinter  # noqa: E402
from esdedup.ingest import IngestOptions, ingest  # noqa: E402
from esdedup.ingest.label import label_new  # noqa: E402
from esdedup.match.lookup import similar, similar_on_node  # noqa: E402
from esdedup.schema import content_sha1  # noqa: E402
from esdedup.store.base import NewDoc  # noqa: E402
from esdedup.store.elastic.store import ElasticStore  # noqa: E402
from esdedup.store.elastic.writes import index_action  # noqa: E402

PIPELINE = "bench-esdedup-plugin"


def plugin_zip() -> str:
    found = sorted((ROOT / "plugin" / "target").glob("esdedup-elasticsearch-*.zip"))
    if not found:
        raise SystemExit("build the plugin first: cd plugin && mvn -o -B package -Dpython=$(which python)")
    return str(found[-1])


def node(url: str | None):
    if url is not None:
        return None, url
    from tests.es_node import LocalCluster

    cluster = LocalCluster(nodes=1, plugins=[plugin_zip()])
    cluster.start()
    return cluster, cluster.url


class Runs:
    """The bulk loads of one benchmark: each recreates its index, loads, and deletes it."""

    def __init__(self, es: Elasticsearch, docs: list[dict], config: FingerprintConfig, chunk: int) -> None:
        self.es, self.docs, self.config, self.chunk = es, docs, config, chunk
        es.ingest.put_pipeline(id=PIPELINE, processors=[
            {"esdedup_fingerprint": {"field": "text", "config": config.to_dict()}}])

    def plain(self, docs: list[dict] | None = None) -> Timed:
        docs = docs or self.docs
        self.es.options(ignore_status=404).indices.delete(index="bench-plain")
        self.es.indices.create(index="bench-plain", settings={"number_of_shards": 1, "number_of_replicas": 0},
                               mappings={"properties": {"id": {"type": "keyword"}, "title": {"type": "text"},
                                                        "author": {"type": "keyword"}, "text": {"type": "text"}}})
        timed = timed_bulk(self.es, "bench-plain", ({"_index": "bench-plain", "_id": d["id"], "_source": d}
                                                    for d in docs), len(docs), self.chunk)
        self.es.indices.delete(index="bench-plain")
        return timed

    def pipeline(self, docs: list[dict] | None = None, *, label: bool = False) -> Timed:
        """The pipeline ``_bulk``; with ``label``, timed with the `label_new` run after it."""
        docs = docs or self.docs
        store = ElasticStore(self.es, "bench-plugin", replicas=0)
        store.drop()
        store.open(self.config)
        self.es.indices.put_settings(index=store.name, settings={"index.default_pipeline": PIPELINE})
        with Timed(self.es) as timed:
            bulk = timed_bulk(self.es, store.name, ({"_index": store.name, "_id": d["id"], "_source": d}
                                                     for d in docs), len(docs), self.chunk)
            if label:
                summary = label_new(store)
                assert summary.labelled == len(docs), summary
                self.labelled = summary.duplicates
        sample = self.es.search(index=store.name, size=1, query={"match_all": {}})["hits"]["hits"][0]["_source"]
        assert "simhash" in sample["dedup"], "the pipeline did not write the dedup fields"
        store.drop()
        return timed if label else bulk

    def precomputed(self, new_docs: list[NewDoc]) -> Timed:
        store = ElasticStore(self.es, "bench-precomputed", replicas=0, chunk_size=self.chunk)
        store.drop()
        store.open(self.config)
        actions = [index_action(store.name, store.config, d) for d in new_docs]  # encoded before the clock starts
        timed = timed_bulk(self.es, store.name, actions, len(new_docs), self.chunk)
        store.drop()
        return timed

    def ingest(self, path: Path, mode: str, workers: int, tmp: Path, *, keep: bool = False) -> tuple[Timed, int]:
        store = ElasticStore(self.es, f"bench-ingest-{mode}", replicas=0, chunk_size=self.chunk)
        store.drop()
        with Timed(self.es) as timed:
            summary = ingest([path], store, self.config, IngestOptions(workers=workers, on_duplicate=mode,
                                                                       dead_letter=tmp / "dl.jsonl"))
            store.refresh()
        assert summary.ok and summary.indexed == len(self.docs), summary.to_dict()
        if not keep:
            store.drop()
        return timed, summary.duplicates


def lookup_latency(es: Elasticsearch, store: ElasticStore, docs: list[dict], config: FingerprintConfig,
                   n: int) -> list[tuple[str, ...]]:
    """Rows of ``similar`` latency: the client path against the node's, the same N lookups interleaved."""
    store.open()
    sample = random.Random(17).sample(docs, min(n, len(docs)))
    fps = Fingerprinter(config).fingerprint_many([d["text"] for d in sample])
    paths = {"client": lambda fp, x: similar(store, [fp], top=10, exclude=[x])[0],
             "node": lambda fp, x: similar_on_node(store, fp, top=10, exclude=x)}
    for fp, d in list(zip(fps, sample))[:20]:  # warm-up, not counted
        for run in paths.values():
            run(fp, d["id"])
    ms: dict[str, list[float]] = {k: [] for k in paths}
    cpu: dict[str, float] = dict.fromkeys(paths, 0.0)
    found = 0
    for name, run in paths.items():
        with Timed(es) as timed:  # one path after the other: the node's CPU figure is per path
            for fp, d in zip(fps, sample):
                start = time.perf_counter()
                run(fp, d["id"])
                ms[name].append((time.perf_counter() - start) * 1000)
        cpu[name] = timed.node
    for fp, d in zip(fps, sample):  # the same answers (ids) on both paths
        client, on_node = paths["client"](fp, d["id"]), paths["node"](fp, d["id"])
        assert sorted(m.id for m in client) == sorted(m.id for m in on_node), d["id"]
        found += bool(client)
    return [(f"`similar` {'client path (band lookup, Python verifies)' if k == 'client' else '--server-side (node verifies)'}",
             f"{pct(v, 50):.1f}", f"{pct(v, 95):.1f}", f"{sum(v) / len(v):.1f}", f"{cpu[k]:.1f}",
             f"{found} of {len(sample)} lookups found near-duplicates, same answers on both paths")
            for k, v in ms.items()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=20_000)
    ap.add_argument("--es", help="a running cluster with the plugin (default: start a local node with it)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--rounds", type=int, default=3, help="bulk rounds (median reported)")
    ap.add_argument("--chunk", type=int, default=500)
    ap.add_argument("--lookups", type=int, default=1000, help="similar lookups per path (0: skip)")
    args = ap.parse_args()

    cluster, url = node(args.es)
    es = Elasticsearch(url, request_timeout=300)
    server, heap = node_description(es)
    tmp = corpora.scratch_folder("esdedup-bench-plugin-")
    rows = []
    latency: list[tuple[str, ...]] = []
    try:
        docs = list(corpora.poems(args.docs))
        path = tmp / "poems.jsonl"
        path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), "utf-8")
        mb = path.stat().st_size / 1e6
        config = FingerprintConfig()
        runs = Runs(es, docs, config, args.chunk)
        runs.plain(docs[:5000])  # warm-up, not counted: a cold JVM indexes at half its warm rate
        runs.pipeline(docs[:5000])
        fper = Fingerprinter(config)
        new_docs = [NewDoc(d["id"], fp, d, content_sha1(fper.normalize(d["text"])))
                    for d, fp in zip(docs, fper.fingerprint_many([d["text"] for d in docs]), strict=True)]
        plains, pipes, pres = [], [], []
        for _ in range(args.rounds):
            plains.append(runs.plain())
            pres.append(runs.precomputed(new_docs))
            pipes.append(runs.pipeline())
        plain, walls = median(plains)
        rate = len(docs) / plain.wall

        def row(what: str, timed: Timed, walls: list[float], note: str = "") -> None:
            spread = f" ({min(walls):.1f}-{max(walls):.1f})" if len(walls) > 1 else ""
            rows.append((what, f"{len(docs) / timed.wall:,.0f}", f"{len(docs) / timed.wall / rate:.0%}",
                         f"{timed.wall:.1f}{spread}", timed.cpu(), note))

        row("plain `_bulk` (no dedup fields)", plain, walls)
        row("`_bulk` of esdedup's documents, fields computed beforehand in Python", *median(pres),
            "the node's cost of the fields alone")
        row("plain `_bulk` through the `esdedup_fingerprint` pipeline (plugin)", *median(pipes),
            "the node fingerprints")
        labelled = runs.pipeline(label=True)
        row("plain `_bulk` through the pipeline, then `esdedup label`", labelled, [labelled.wall],
            f"{runs.labelled} near-duplicates labelled")
        for mode in ("index", "label"):
            timed, dups = runs.ingest(path, mode, args.workers, tmp, keep=mode == "label" and args.lookups > 0)
            row(f"esdedup ingest `--on-duplicate {mode}`", timed, [timed.wall],
                f"{dups} near-duplicates labelled" if mode == "label" else "no lookups")
        if args.lookups:
            store = ElasticStore(es, "bench-ingest-label")
            latency = lookup_latency(es, store, docs, config, args.lookups)
            store.drop()
        es.ingest.delete_pipeline(id=PIPELINE)
    finally:
        if cluster is not None:
            cluster.stop()

    cmd = "python bench/plugin.py " + " ".join(sys.argv[1:])
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    table = ["| load | docs/s | of plain | wall s | CPU s | notes |", "| --- | ---: | ---: | ---: | --- | --- |"]
    table += ["| " + " | ".join(r) + " |" for r in rows]
    print(f"\n## The ingest processor (bench/plugin.py)\n\n`{cmd.strip()}` — {when}, this machine (2 cores), "
          f"{server} with the esdedup plugin ({heap}, 1 shard, 0 replicas), "
          f"{len(docs):,} poems ({mb:.1f} MB JSONL) from chinese-poetry {corpora.POETRY_VERSION}, default config "
          f"(tokenizer jieba), {args.workers} ingest workers, bulk chunks of {args.chunk}; node warmed up first, "
          f"bulk rows: median of {args.rounds} rounds (range).\n\n" + "\n".join(table) + "\n")
    if latency:
        lat = ["| lookup | p50 ms | p95 ms | mean ms | node CPU s | notes |", "| --- | ---: | ---: | ---: | ---: | --- |"]
        lat += ["| " + " | ".join(r) + " |" for r in latency]
        print(f"`similar` on the labelled index, {args.lookups} lookups per path (top 10, the poem itself "
              "excluded):\n\n" + "\n".join(lat) + "\n")


if __name__ == "__main__":
    main()
