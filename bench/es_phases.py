"""Where the client's CPU goes in `esdedup ingest` into Elasticsearch: the run's steps timed one by one.

    python bench/es_phases.py --docs 30000 --mode label --es URL     # or without --es: a local node
    python bench/es_phases.py --docs 30000 --mode label --es URL --python-bulk-lines   # the same, lines in Python

The steps of the run are wrapped (each call's thread CPU time, `time.thread_time`, summed per step; a step
that calls another counts it too) and one ingest of --docs poems, 2 workers, default config, runs into a
fresh index. Printed: the client's CPU a poem (this process, and the fingerprint workers, as bench/es.py
counts them) and each step's CPU a poem. What no step names (the worker pool's own threads pickling and
unpickling batches, the collector) is the difference between the process's CPU and the steps' sum of the
main thread and the writer thread.
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import corpora  # noqa: E402
from elasticsearch import Elasticsearch  # noqa: E402
from es import node  # noqa: E402
from steps import cpu, install, spent  # noqa: E402

import esdedup.ingest.driver as driver  # noqa: E402
import esdedup.ingest.labels as labels  # noqa: E402
import esdedup.ingest.run as run  # noqa: E402
import esdedup.ingest.workers as workers  # noqa: E402
import esdedup.store.elastic.writes as writes  # noqa: E402
from esdedup import FingerprintConfig  # noqa: E402
from esdedup.fingerprint.fingerprinter import Fingerprinter  # noqa: E402
from esdedup.ingest import IngestOptions, ingest  # noqa: E402
from esdedup.store.elastic.store import ElasticStore  # noqa: E402

STEPS = [
    (run, "batches", "reading records into batches", True),
    (workers.Workers, "_submit", "handing batches to the workers", False),
    (workers.Fingerprinted, "fingerprints", "fingerprints unpacked from the workers' columns", False),
    (driver.IngestRun, "_accept", "records accepted (ids, counts)", False),
    (labels.Labeller, "lookup", "lookups, candidates read from the store", False),
    (labels, "run_key_lists", "run keys of the batch", False),
    (labels.BatchCandidates, "__init__", "candidates in the run's memory and the rule's verdicts", False),
    (labels.Labeller, "_label", "labels record by record (clusters joined)", False),
    (labels.Labeller, "new_docs", "documents to write", False),
    (writes, "bulk_actions", "writer: bulk request lines", True),
    (writes.Bulk, "_send", "writer: the client library's send and parse", False),
    (writes.Bulk, "write", "writer: everything (lines, send, results)", True),
    (driver.IngestRun, "drain", "after the write (outcomes counted, stats, checkpoint)", False),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=30_000)
    ap.add_argument("--mode", default="label", choices=["label", "index"])
    ap.add_argument("--es", help="a running cluster (default: start a local node)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--python-bulk-lines", action="store_true",
                    help="the bulk request lines written in Python (the native core's step off, the rest on)")
    args = ap.parse_args()
    if args.python_bulk_lines:
        writes._native_lines = lambda: None  # type: ignore[assignment]
    install(STEPS)
    cluster, url = node(args.es)
    tmp = corpora.scratch_folder("esdedup-phases-")
    try:
        path = tmp / "poems.jsonl"
        with open(path, "w", encoding="utf-8") as fh:
            for d in corpora.poems(args.docs):
                fh.write(json.dumps(d, ensure_ascii=False) + "\n")
        config = FingerprintConfig()
        Fingerprinter(config)  # the tables a Fingerprinter is built from, made before the clock (as bench/es.py)
        store = ElasticStore(Elasticsearch(url, request_timeout=120), f"bench-phases-{args.mode}", replicas=0)
        store.drop()
        main0, kids0, wall0 = cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN), time.perf_counter()
        summary = ingest([path], store, config, IngestOptions(workers=args.workers, on_duplicate=args.mode,
                                                              dead_letter=tmp / "dl.jsonl"))
        store.refresh()
        main_s, kids_s = cpu(resource.RUSAGE_SELF) - main0, cpu(resource.RUSAGE_CHILDREN) - kids0
        wall = time.perf_counter() - wall0
        store.drop()
    finally:
        if cluster is not None:
            cluster.stop()
    assert summary.ok and summary.indexed == args.docs, summary.to_dict()
    per = 1e6 / args.docs
    print(f"{args.mode}: {args.docs} poems, wall {wall:.1f} s, client CPU {(main_s + kids_s) * per:.1f} µs a poem "
          f"(this process {main_s * per:.1f}, workers {kids_s * per:.1f}), threads {threading.active_count()}")
    print("| step | CPU µs a poem |\n| --- | ---: |")
    for step, seconds in sorted(spent.items(), key=lambda kv: -kv[1]):
        print(f"| {step} | {seconds * per:.1f} |")


if __name__ == "__main__":
    main()
