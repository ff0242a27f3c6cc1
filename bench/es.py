"""Elasticsearch benchmark: esdedup ingest next to a plain _bulk of the same documents, lookup latency of the
band and kNN paths, and diversify time on real hits — one node, one run.

    python bench/es.py --docs 100000                 # starts a local node with scripts/es-local
    python bench/es.py --docs 100000 --es URL        # or uses a running cluster (indexes are deleted after)

Documents: Tang and Song poems from the npm package chinese-poetry (real text; see bench/corpora.py).
The plain baseline sends {id, title, author, text} through helpers.streaming_bulk with the same chunk size;
esdedup sends the same records through `esdedup.ingest.run` (fingerprinting in worker processes, a band lookup
per batch, labels) into an index with the dedup fields.

The node is warmed up first (one untimed plain and one untimed esdedup bulk: a cold JVM indexes at about half
its warm rate, so whichever run came first would look slow). Each round runs every ingest row in turn: the
plain and server's-share bulks, `label` mode's bound (its fingerprint workers with the documents precomputed:
the rate if the run's main thread did nothing a record), esdedup's `index` and `label` modes; a row gives
the run of median wall (range in brackets), its share of plain `_bulk` as the median of each round's own ratio
(the machine's speed drifts between rounds), and the CPU seconds of the node (`_nodes/stats`) and of the client
(this process and its fingerprint workers), which share the machine's cores here.
For the node's cost of each group of dedup fields, see bench/es_fields.py.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import corpora  # noqa: E402
from elasticsearch import Elasticsearch, helpers  # noqa: E402

from esdedup import FingerprintConfig  # noqa: E402
from esdedup.fingerprint.fingerprinter import Fingerprinter  # noqa: E402
from esdedup.ingest import IngestOptions, ingest  # noqa: E402
from esdedup.ingest.options import BATCH  # noqa: E402
from esdedup.ingest.workers import Stop, Workers  # noqa: E402
from esdedup.match.lookup import similar, similar_knn  # noqa: E402
from esdedup.readers import Record  # noqa: E402
from esdedup.schema import content_sha1  # noqa: E402
from esdedup.search.diversify import diversify  # noqa: E402
from esdedup.store.base import NewDoc  # noqa: E402
from esdedup.store.elastic.store import ElasticStore  # noqa: E402
from esdedup.store.elastic.writes import index_action  # noqa: E402


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def node(url: str | None):
    """(local cluster or None, URL): the given cluster, else a node started with scripts/es-local (the
    caller stops it)."""
    if url is not None:
        return None, url
    from tests.es_node import LocalCluster

    cluster = LocalCluster(nodes=1)
    cluster.start()
    return cluster, cluster.url


def pin(es: Elasticsearch) -> None:
    """Node processes on CPU 0 (all their threads), this process and the workers it starts on CPU 1."""
    for info in es.nodes.info(metric="process")["nodes"].values():
        subprocess.run(["taskset", "-a", "-p", "-c", "0", str(info["process"]["id"])], check=True,
                       stdout=subprocess.DEVNULL)
    os.sched_setaffinity(0, {1})


def node_cpu_seconds(es: Elasticsearch) -> float:
    """CPU seconds used so far by the cluster's node processes (``_nodes/stats``; works for any cluster). The
    node refreshes the figure about once a second: only runs of several seconds are measured usefully."""
    nodes = es.nodes.stats(metric="process")["nodes"].values()
    return sum(n["process"]["cpu"]["total_in_millis"] for n in nodes) / 1000


def node_description(es: Elasticsearch) -> tuple[str, str]:
    """The cluster as the node reports it (not as this script expects): its version and node count
    ("Elasticsearch 8.19.21 single node"), and its heap ("heap 1 GiB")."""
    nodes = list(es.nodes.info(metric="jvm")["nodes"].values())
    heaps = sorted({n["jvm"]["mem"]["heap_max_in_bytes"] / 2**30 for n in nodes})
    heap = "/".join(f"{h:.1f}".rstrip("0").rstrip(".") for h in heaps)
    count = "single node" if len(nodes) == 1 else f"{len(nodes)} nodes"
    versions = "/".join(sorted({n["version"] for n in nodes}))
    return f"Elasticsearch {versions} {count}", f"heap {heap} GiB"


def client_cpu_seconds() -> float:
    """CPU seconds of this process and its finished children (the fingerprint workers)."""
    return main_cpu_seconds() + workers_cpu_seconds()


def main_cpu_seconds() -> float:
    """CPU seconds of this process (its threads: the run, the writer)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def workers_cpu_seconds() -> float:
    """CPU seconds of this process's finished children (the fingerprint workers)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class Timed:
    """Wall, node CPU and client CPU seconds of a ``with`` block."""

    def __init__(self, es: Elasticsearch) -> None:
        self.es = es

    def __enter__(self) -> Timed:
        self.node, self.main, self.workers = node_cpu_seconds(self.es), main_cpu_seconds(), workers_cpu_seconds()
        self.t = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.t
        self.node = node_cpu_seconds(self.es) - self.node
        self.main, self.workers = main_cpu_seconds() - self.main, workers_cpu_seconds() - self.workers
        self.client = self.main + self.workers

    def cpu(self) -> str:
        split = f" (main {self.main:.1f}, workers {self.workers:.1f})" if self.workers >= 0.05 else ""
        return f"node {self.node:.1f} + client {self.client:.1f}{split}"


def median(runs: list[Timed]) -> tuple[Timed, list[float]]:
    """The run of median wall time, and the wall times of all (a table row's figure and its range)."""
    return sorted(runs, key=lambda t: t.wall)[len(runs) // 2], [t.wall for t in runs]


def bulk(es: Elasticsearch, index: str, actions, expected: int, chunk: int) -> None:
    """Send ``actions`` through helpers.streaming_bulk; every one must land."""
    ok = sum(1 for good, _ in helpers.streaming_bulk(es, actions, chunk_size=chunk, raise_on_error=False) if good)
    assert ok == expected, f"bulk into {index} indexed {ok} of {expected}"


def timed_bulk(es: Elasticsearch, index: str, actions, expected: int, chunk: int) -> Timed:
    """`bulk`, then a refresh of ``index``, timed."""
    with Timed(es) as timed:
        bulk(es, index, actions, expected, chunk)
        es.indices.refresh(index=index)
    return timed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--es", help="a running cluster (default: start a local node)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--tokenizer", default="jieba")
    ap.add_argument("--strategy", default="auto", help="FingerprintConfig.strategy (auto, simhash, minhash)")
    ap.add_argument("--lookups", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3,
                    help="rounds of every ingest row, in turn (medians reported)")
    ap.add_argument("--pin", action="store_true",
                    help="node on CPU 0, this process and its workers on CPU 1 (a local node): the client as if on "
                         "a host of its own, the node the same single core in every run")
    ap.add_argument("--chunk", type=int, default=500)
    ap.add_argument("--fingerprint-share", type=float, default=1.0,
                    help="of each batch's texts, the part the workers fingerprint in the row that bounds `label` "
                         "mode (1: all; less: as if fingerprinting cost that much less)")
    ap.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"))
    ap.add_argument("--no-append", action="store_true")
    args = ap.parse_args()

    cluster, url = node(args.es)
    es = Elasticsearch(url, request_timeout=120)
    if args.pin:
        pin(es)
    server, heap = node_description(es)
    tmp = corpora.scratch_folder("esdedup-bench-")
    try:
        docs = list(corpora.poems(args.docs))
        path = tmp / "poems.jsonl"
        with open(path, "w", encoding="utf-8") as fh:
            for d in docs:
                fh.write(json.dumps(d, ensure_ascii=False) + "\n")
        mb = path.stat().st_size / 1e6

        config = FingerprintConfig(tokenizer=args.tokenizer, strategy=args.strategy)
        fper = Fingerprinter(config)
        floor_store = ElasticStore(es, "bench-esdedup-floor", replicas=0, chunk_size=args.chunk)
        # The server's share: the documents esdedup writes, dedup fields computed and encoded here, once,
        # before any clock starts (the bulk helper copies an action before reading it).
        floor_actions = [index_action(floor_store.name, config,
                                      NewDoc(d["id"], fp, d, content_sha1(fper.normalize(d["text"]))))
                         for d, fp in zip(docs, fper.fingerprint_many([d["text"] for d in docs]), strict=True)]
        # The records `label` mode's bound hands its workers.
        records = [Record(d["id"], d["text"], d.get("title"), {}, "poems.jsonl", f"line {i + 1}", 0, "utf-8")
                   for i, d in enumerate(docs)]

        def plain_bulk() -> Timed:
            es.options(ignore_status=404).indices.delete(index="bench-plain")
            es.indices.create(index="bench-plain", settings={"number_of_shards": 1, "number_of_replicas": 0},
                              mappings={"properties": {"id": {"type": "keyword"}, "title": {"type": "text"},
                                                       "author": {"type": "keyword"}, "text": {"type": "text"}}})
            timed = timed_bulk(es, "bench-plain", ({"_index": "bench-plain", "_id": d["id"], "_source": d} for d in docs),
                               len(docs), args.chunk)
            # Deleted at once, as every measured index but the last: its background merges must not run
            # into the next measurement.
            es.indices.delete(index="bench-plain")
            return timed

        def floor_bulk() -> Timed:
            floor_store.drop()
            floor_store.open(config)
            timed = timed_bulk(es, floor_store.name, floor_actions, len(docs), args.chunk)
            floor_store.drop()
            return timed

        def fingerprint_bound() -> Timed:
            """What `label` mode would reach if its main thread did nothing a record: the workers fingerprint
            each batch as in `label` mode (each document's ``dedup`` JSON and run-key hashes too), and the main
            thread sends that batch's documents, precomputed, one write in flight as the run keeps it."""
            floor_store.drop()
            floor_store.open(config)
            cut = max(1, round(BATCH * args.fingerprint_share))
            batches = (records[at:at + BATCH][:cut] for at in range(0, len(records), BATCH))
            with ThreadPoolExecutor(1) as writer, Timed(es) as timed:
                workers = Workers(config, args.workers, encode=True, held=True)
                try:
                    sending = None
                    starts = range(0, len(floor_actions), BATCH)
                    for at, _ in zip(starts, workers.in_order(batches, Stop()), strict=True):
                        if sending is not None:
                            sending.result()
                        batch = floor_actions[at:at + BATCH]
                        sending = writer.submit(bulk, es, floor_store.name, batch, len(batch), args.chunk)
                    if sending is not None:
                        sending.result()
                finally:
                    workers.close()
                es.indices.refresh(index=floor_store.name)
            floor_store.drop()
            return timed

        def esdedup_ingest(mode: str) -> tuple[Timed, ElasticStore, int]:
            """`ingest` in ``mode`` into a fresh index, timed; (timing, its store, near-duplicates labelled)."""
            store = ElasticStore(es, f"bench-esdedup-{mode}", replicas=0, chunk_size=args.chunk)
            store.drop()
            with Timed(es) as timed:
                summary = ingest([path], store, config, IngestOptions(workers=args.workers, on_duplicate=mode,
                                                                     dead_letter=tmp / "dl.jsonl"))
                store.refresh()
            assert summary.ok and summary.indexed == len(docs), summary.to_dict()
            return timed, store, summary.duplicates

        # 1. Every row --rounds times, one after the other in each round, so that each is compared with the
        # plain `_bulk` of its own round: the machine's speed drifts by a third from one minute to the next.
        # A warm-up first, not counted: a cold node indexes at half its warm rate until the JIT has compiled
        # the bulk path, and whichever run came first would pay for it.
        plain_bulk()
        floor_bulk()
        runs: dict[str, list[Timed]] = {"plain": [], "floor": [], "index": [], "label": [], "bound": []}
        duplicates = 0
        store = None
        for _ in range(args.rounds):
            # Each index is deleted before the next run, as it would otherwise merge in the background beside
            # it; `label` runs last, and the last round's index is kept for the lookups below.
            if store is not None:
                store.drop()
            runs["plain"].append(plain_bulk())
            runs["floor"].append(floor_bulk())
            runs["bound"].append(fingerprint_bound())
            timed, store, _ = esdedup_ingest("index")
            runs["index"].append(timed)
            store.drop()
            timed, store, duplicates = esdedup_ingest("label")
            runs["label"].append(timed)
        floor_actions.clear()
        records.clear()
        rows = []

        def row(what: str, key: str, note: str = "") -> None:
            """A row: the run of median wall; its rate's share of plain `_bulk` is the median of each round's
            own ratio (range in brackets), and for esdedup's runs the client's CPU a poem (median)."""
            timed, walls = median(runs[key])
            ratios = sorted(p.wall / t.wall for p, t in zip(runs["plain"], runs[key], strict=True))
            share = f"{statistics.median(ratios):.0%}"
            if len(ratios) > 1 and key != "plain":
                share += f" ({ratios[0]:.0%}-{ratios[-1]:.0%})"
            spread = f" ({min(walls):.1f}-{max(walls):.1f})" if len(walls) > 1 else ""
            if key in ("index", "label"):
                per_poem = statistics.median(t.client for t in runs[key]) / len(docs) * 1e6
                note = "; ".join(filter(None, (note, f"client CPU {per_poem:.0f} µs a poem (median)")))
            rows.append((what, f"{len(docs) / timed.wall:,.0f}", share, f"{timed.wall:.1f}{spread}", timed.cpu(), note))

        row("plain `_bulk` (no dedup fields)", "plain")
        row("`_bulk` of esdedup's documents, fields precomputed (the server's share)", "floor")
        # 2. esdedup ingest without lookups, then labelling near-duplicates (the default).
        row("esdedup ingest `--on-duplicate index`", "index", "no lookups")
        row("esdedup ingest `--on-duplicate label`", "label", f"{duplicates} near-duplicates labelled")
        share = (f"{args.fingerprint_share:.0%} of each batch fingerprinted" if args.fingerprint_share < 1
                 else "every text fingerprinted")
        row("`label` mode's bound: its fingerprint workers, the documents precomputed (nothing a record in the "
            "main thread)", "bound", share)

        # 3. lookups: band path and kNN path, one query at a time, on documents of the index.
        assert store is not None
        rng = random.Random(1)
        sample = rng.sample(docs, min(args.lookups, len(docs)))
        fps = fper.fingerprint_many([d["text"] for d in sample])
        band_ms, knn_ms = [], []
        lookups = []
        for d, fp in zip(sample, fps):
            t = time.perf_counter()
            similar(store, [fp], exclude=[d["id"]])
            band_ms.append((time.perf_counter() - t) * 1000)
            if store.config.stores_vector:  # the default (strategy auto) stores no vector: no kNN
                t = time.perf_counter()
                similar_knn(store, fp, k=10, exclude=d["id"])
                knn_ms.append((time.perf_counter() - t) * 1000)
        lookups.append(("band lookup (`similar`, 1 query)", f"p50 {pct(band_ms, 50):.1f} ms",
                     f"p95 {pct(band_ms, 95):.1f} ms", f"{len(band_ms)} queries"))
        if knn_ms:
            lookups.append(("kNN lookup (`similar --knn`, k=10)", f"p50 {pct(knn_ms, 50):.1f} ms",
                         f"p95 {pct(knn_ms, 95):.1f} ms", f"{len(knn_ms)} queries"))

        # 4. diversify 100 real hits of a text search.
        resp = es.search(index=store.name, size=100, query={"match": {"text": "明月"}},
                         docvalue_fields=["dedup.simhash", "dedup.empty"], fields=["dedup.vector"])
        hits = resp["hits"]["hits"]
        times = []
        for _ in range(2000):
            t = time.perf_counter()
            diversify(hits, config=store.config)
            times.append((time.perf_counter() - t) * 1e6)
        lookups.append((f"`diversify` of {len(hits)} real hits (the index's rule)", f"median {statistics.median(times):.0f} µs",
                     f"p95 {pct(times, 95):.0f} µs", "2000 calls"))

        es.options(ignore_status=404).indices.delete(index="bench-esdedup-label")
    finally:
        if cluster is not None:
            cluster.stop()

    cmd = "python bench/es.py " + " ".join(sys.argv[1:])
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    table = ["| ingest | docs/s | of plain | wall s | CPU s | notes |", "| --- | ---: | ---: | ---: | --- | --- |"]
    table += ["| " + " | ".join(r) + " |" for r in rows]
    table += ["", "| lookup | p50 | p95 | notes |", "| --- | --- | --- | --- |"]
    table += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in lookups]
    section = (f"\n## Elasticsearch (bench/es.py)\n\n`{cmd.strip()}` — {when}, this machine"
               f" (2 cores, 24 GiB), {server} ({heap}, 1 shard, 0 replicas), "
               f"{len(docs):,} poems ({mb:.1f} MB JSONL) from chinese-poetry {corpora.POETRY_VERSION}, tokenizer "
               f"{args.tokenizer}, strategy {args.strategy}, {args.workers} fingerprint workers, bulk chunks of {args.chunk}"
               f"{'; node pinned to CPU 0, client and workers to CPU 1' if args.pin else ''}; "
               f"node warmed up first; every ingest row in each of {args.rounds} rounds, in turn: the run of "
               f"median wall (range), its share of plain the median of each round's own ratio (range).\n\n"
               + "\n".join(table) + "\n")
    print(section)
    if not args.no_append:
        with open(args.out, "a", encoding="utf-8") as fh:
            fh.write(section)


if __name__ == "__main__":
    main()
