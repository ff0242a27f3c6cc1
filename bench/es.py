"""Elasticsearch benchmark: esdedup ingest next to a plain _bulk of the same documents, lookup latency of the
band and kNN paths, and diversify time on real hits — one node, one run.

    python bench/es.py --docs 100000                 # starts a local node with scripts/es-local
    python bench/es.py --docs 100000 --es URL        # or uses a running cluster (indexes are deleted after)

Documents: Tang and Song poems from the npm package chinese-poetry (real text; see bench/corpora.py).
The plain baseline sends {id, title, author, text} through helpers.streaming_bulk with the same chunk size;
esdedup sends the same records through `esdedup.ingest` (fingerprinting in worker processes, a band lookup
per batch, labels) into an index with the dedup fields.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import corpora  # noqa: E402
from elasticsearch import Elasticsearch, helpers  # noqa: E402

from esdedup import FingerprintConfig  # noqa: E402
from esdedup.diversify import diversify  # noqa: E402
from esdedup.fingerprint import Fingerprinter  # noqa: E402
from esdedup.ingest import IngestOptions, ingest  # noqa: E402
from esdedup.lookup import similar, similar_knn  # noqa: E402
from esdedup.store.base import NewDoc  # noqa: E402
from esdedup.store.elastic import ElasticStore  # noqa: E402


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def timed_bulk(es: Elasticsearch, index: str, actions, expected: int, chunk: int) -> float:
    """Seconds to send ``actions`` through helpers.streaming_bulk and refresh ``index``; every one must land."""
    t = time.perf_counter()
    ok = sum(1 for good, _ in helpers.streaming_bulk(es, actions, chunk_size=chunk, raise_on_error=False) if good)
    es.indices.refresh(index=index)
    secs = time.perf_counter() - t
    assert ok == expected, f"bulk into {index} indexed {ok} of {expected}"
    return secs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--es", help="a running cluster (default: start a local node)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--tokenizer", default="rjieba")
    ap.add_argument("--strategy", default="auto", help="FingerprintConfig.strategy (auto, simhash, minhash)")
    ap.add_argument("--lookups", type=int, default=1000)
    ap.add_argument("--chunk", type=int, default=500)
    ap.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"))
    ap.add_argument("--no-append", action="store_true")
    args = ap.parse_args()

    cluster = None
    url = args.es
    if url is None:
        from tests.es_node import LocalCluster

        cluster = LocalCluster(nodes=1)
        cluster.start()
        url = cluster.url
    es = Elasticsearch(url, request_timeout=120)
    tmp = Path(tempfile.mkdtemp(prefix="esdedup-bench-"))
    try:
        docs = list(corpora.poems(args.docs))
        path = tmp / "poems.jsonl"
        with open(path, "w", encoding="utf-8") as fh:
            for d in docs:
                fh.write(json.dumps(d, ensure_ascii=False) + "\n")
        mb = path.stat().st_size / 1e6
        rows = []

        # 1. plain _bulk of the same records, no dedup fields.
        es.options(ignore_status=404).indices.delete(index="bench-plain")
        es.indices.create(index="bench-plain", settings={"number_of_shards": 1, "number_of_replicas": 0},
                          mappings={"properties": {"id": {"type": "keyword"}, "title": {"type": "text"},
                                                   "author": {"type": "keyword"}, "text": {"type": "text"}}})
        plain_s = timed_bulk(es, "bench-plain", ({"_index": "bench-plain", "_id": d["id"], "_source": d} for d in docs),
                             len(docs), args.chunk)
        plain_rate = len(docs) / plain_s
        rows.append(("plain `_bulk` (no dedup fields)", f"{plain_rate:,.0f} docs/s", f"{mb / plain_s:.2f} MB/s",
                     f"{plain_s:.1f} s"))

        config = FingerprintConfig(tokenizer=args.tokenizer, strategy=args.strategy)

        # 1b. the server's share: the documents esdedup writes (dedup fields computed beforehand, not timed)
        # sent the same way as the plain ones. No ingest can beat this on the same node.
        fper = Fingerprinter(config)
        floor_store = ElasticStore(es, "bench-esdedup-floor", replicas=0, chunk_size=args.chunk)
        floor_store.drop()
        floor_store.open(config)
        actions = [floor_store._action(NewDoc(d["id"], fp, d, ""))
                   for d, fp in zip(docs, fper.fingerprint_many([d["text"] for d in docs]), strict=True)]
        floor_s = timed_bulk(es, floor_store.name, actions, len(docs), args.chunk)
        floor_store.drop()
        del actions
        rows.append(("`_bulk` of esdedup's documents, fields precomputed (the server's share)",
                     f"{len(docs) / floor_s:,.0f} docs/s", f"{mb / floor_s:.2f} MB/s",
                     f"{floor_s:.1f} s ({plain_s / floor_s:.0%} of plain)"))

        # 2. esdedup ingest, labelling near-duplicates (the default), then without lookups.
        results = {}
        for mode in ("label", "index"):
            store = ElasticStore(es, f"bench-esdedup-{mode}", replicas=0, chunk_size=args.chunk)
            store.drop()
            t = time.perf_counter()
            summary = ingest([path], store, config, IngestOptions(workers=args.workers, on_duplicate=mode,
                                                                 dead_letter=tmp / "dl.jsonl"))
            store.refresh()
            secs = time.perf_counter() - t
            assert summary.ok and summary.indexed == len(docs), summary.to_dict()
            results[mode] = (store, summary, secs)
            rows.append((f"esdedup ingest `--on-duplicate {mode}`", f"{len(docs) / secs:,.0f} docs/s",
                         f"{mb / secs:.2f} MB/s",
                         f"{secs:.1f} s ({len(docs) / secs / plain_rate:.0%} of plain; "
                         f"{summary.duplicates} near-duplicates labelled)"))

        # 3. lookups: band path and kNN path, one query at a time, on documents of the index.
        store = results["label"][0]
        rng = random.Random(1)
        sample = rng.sample(docs, min(args.lookups, len(docs)))
        fps = fper.fingerprint_many([d["text"] for d in sample])
        band_ms, knn_ms = [], []
        for d, fp in zip(sample, fps):
            t = time.perf_counter()
            similar(store, [fp], exclude=[d["id"]])
            band_ms.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            similar_knn(store, fp, k=10, exclude=d["id"])
            knn_ms.append((time.perf_counter() - t) * 1000)
        rows.append(("band lookup (`similar`, 1 query)", f"p50 {pct(band_ms, 50):.1f} ms",
                     f"p95 {pct(band_ms, 95):.1f} ms", f"{len(band_ms)} queries"))
        rows.append(("kNN lookup (`similar --knn`, k=10)", f"p50 {pct(knn_ms, 50):.1f} ms",
                     f"p95 {pct(knn_ms, 95):.1f} ms", f"{len(knn_ms)} queries"))

        # 4. diversify 100 real hits of a text search.
        resp = es.search(index=store.name, size=100, query={"match": {"text": "明月"}},
                         docvalue_fields=["dedup.simhash", "dedup.empty"], fields=["dedup.vector"])
        hits = resp["hits"]["hits"]
        times = []
        for _ in range(2000):
            t = time.perf_counter()
            diversify(hits, hamming_k=3)
            times.append((time.perf_counter() - t) * 1e6)
        rows.append((f"`diversify` of {len(hits)} real hits (hamming_k=3)", f"median {statistics.median(times):.0f} µs",
                     f"p95 {pct(times, 95):.0f} µs", "2000 calls"))

        for name in ("bench-plain", "bench-esdedup-label", "bench-esdedup-index"):
            es.options(ignore_status=404).indices.delete(index=name)
    finally:
        if cluster is not None:
            cluster.stop()

    cmd = "python bench/es.py " + " ".join(sys.argv[1:])
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    table = ["| what | rate / p50 | MB/s / p95 | notes |", "| --- | --- | --- | --- |"]
    table += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    section = (f"\n## Elasticsearch (bench/es.py)\n\n`{cmd.strip()}` — {when}, this machine"
               f" (2 cores, 24 GiB), Elasticsearch 8.19.21 single node (heap 1 GiB, 1 shard, 0 replicas), "
               f"{len(docs):,} poems ({mb:.1f} MB JSONL) from chinese-poetry {corpora.POETRY_VERSION}, tokenizer "
               f"{args.tokenizer}, strategy {args.strategy}, {args.workers} fingerprint workers, bulk chunks of {args.chunk}.\n\n"
               + "\n".join(table) + "\n")
    print(section)
    if not args.no_append:
        with open(args.out, "a", encoding="utf-8") as fh:
            fh.write(section)


if __name__ == "__main__":
    main()
