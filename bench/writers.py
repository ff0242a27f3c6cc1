"""Concurrent writers on Elasticsearch: what settling labels after each write costs, with 1 and N writers.

    python bench/writers.py --docs 20000                  # starts a local node with scripts/es-local
    python bench/writers.py --docs 20000 --es URL         # or uses a running cluster (indexes deleted after)

Documents: Tang and Song poems from the npm package chinese-poetry (see bench/corpora.py), with every
twentieth poem planted again as a lightly edited copy in another writer's part (so that writers really
label each other's documents). Three runs, each into a fresh index (2 shards, 0 replicas), each writer a
process running `esdedup.ingest.run.ingest` on its part with one fingerprint worker, all starting together:

1. one writer, settling switched off (``ElasticStore.settles = False``): labelling that
   assumes a single writer, right only while nobody else writes;
2. one writer, settling on (the default; a writer that is alone, by the index's indexing counter, skips it);
3. ``--writers`` writers, settling off: the same work without settling (the clusters come out wrong: the
   row gives how many documents end up in another cluster than with one writer);
4. ``--writers`` writers, settling on: after each batch, a refresh and a second lookup of the batch.

docs/s = documents of all writers / wall time from the common start to the last writer's end. The script
checks that runs 2 and 4 end with the same clusters, each represented by its earliest member.
"""
from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing as mp
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import corpora  # noqa: E402
from elasticsearch import Elasticsearch  # noqa: E402
from es import node  # noqa: E402

from esdedup import FingerprintConfig  # noqa: E402
from esdedup.ingest import IngestOptions, ingest  # noqa: E402
from esdedup.store.elastic.store import ElasticStore  # noqa: E402
from tests.corpus import make_variant  # noqa: E402
from tests.writers import inconsistencies, partition, stored_labels  # noqa: E402


def planted_poems(n: int, writers: int, seed: int = 3) -> list[list[dict[str, str]]]:
    """``n`` poems dealt round-robin to ``writers`` parts, plus an edited copy of every twentieth poem in the
    next part."""
    rng = random.Random(seed)
    parts: list[list[dict[str, str]]] = [[] for _ in range(writers)]
    for i, p in enumerate(corpora.poems(n)):
        doc = {"id": f"p{i:07d}", "title": p["title"], "text": p["text"]}
        parts[i % writers].append(doc)
        if i % 20 == 0:
            parts[(i + 1) % writers].append({**doc, "id": f"p{i:07d}-copy", "text": make_variant(rng, p["text"])})
    return parts


def _writer(url: str, index: str, path: str, config_json: str, settle: bool, start: Any, out: Any) -> None:
    store = ElasticStore(Elasticsearch(url, request_timeout=120), index, shards=2, replicas=0)
    store.settles = settle
    start.wait()
    summary = ingest([path], store, FingerprintConfig.from_json(config_json), IngestOptions(workers=1))
    out.put(summary.to_dict())


def run(url: str, index: str, paths: list[Path], config: FingerprintConfig, settle: bool) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    start, out = ctx.Barrier(len(paths) + 1), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(url, index, str(p), config.to_json(), settle, start, out))
             for p in paths]
    for p in procs:
        p.start()
    start.wait()
    t0 = time.perf_counter()
    summaries = [out.get(timeout=3600) for _ in procs]
    wall = time.perf_counter() - t0
    for p in procs:
        p.join()
    assert all(s["error"] is None and s["failed"] == 0 for s in summaries), summaries
    docs = sum(s["read"] for s in summaries)
    return {"docs": docs, "wall": wall, "docs_per_s": docs / wall,
            "relabelled": sum(s["relabelled"] for s in summaries)}


def misplaced(expected: dict[str, dict[str, Any]], got: dict[str, dict[str, Any]]) -> int:
    """Documents whose cluster (as a set of documents) differs from the expected one."""
    def members(labels: dict[str, dict[str, Any]]) -> dict[str, frozenset[str]]:
        return {doc_id: cluster for cluster in partition(labels) for doc_id in cluster}

    want, have = members(expected), members(got)
    return sum(1 for doc_id in want if have.get(doc_id) != want[doc_id])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=20_000)
    ap.add_argument("--writers", type=int, default=4)
    ap.add_argument("--es", help="a running cluster (default: start a local node)")
    ap.add_argument("--tokenizer", default="rjieba")
    args = ap.parse_args()
    cluster, url = node(args.es)
    es = Elasticsearch(url, request_timeout=120)
    tmp = corpora.scratch_folder("esdedup-bench-writers-")
    config = FingerprintConfig(tokenizer=args.tokenizer)
    rows = []
    try:
        parts = planted_poems(args.docs, args.writers)
        paths = []
        for k, part in enumerate(parts):
            paths.append(tmp / f"part{k}.jsonl")
            paths[-1].write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in part), "utf-8")
        whole = tmp / "all.jsonl"
        whole.write_text("".join(p.read_text("utf-8") for p in paths), "utf-8")
        labels = {}
        for name, files, settle in (("1 writer, settling off", [whole], False),
                                    ("1 writer, settling on", [whole], True),
                                    (f"{args.writers} writers, settling off", paths, False),
                                    (f"{args.writers} writers, settling on", paths, True)):
            index = f"bench-writers-{len(rows)}"
            es.options(ignore_status=404).indices.delete(index=index)
            r = run(url, index, files, config, settle)
            labels[name] = stored_labels(es, index)
            es.indices.delete(index=index)
            rows.append((name, r, labels[name]))
        one, many = labels["1 writer, settling on"], labels[f"{args.writers} writers, settling on"]
        same = partition(one) == partition(many) and not inconsistencies(one) and not inconsistencies(many)
    finally:
        if cluster is not None:
            cluster.stop()
    n = rows[0][1]["docs"]
    print(f"`python bench/writers.py --docs {args.docs} --writers {args.writers}` — "
          f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {n:,} poems (every twentieth "
          f"planted again, edited, in another part), tokenizer {args.tokenizer}, 2 shards, one fingerprint "
          "worker per writer.\n")
    print("| run | docs/s | of 1 writer, settling off | wall s | labels moved after writing | near-duplicates "
          "| documents in another cluster than with 1 writer |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    base = rows[0][1]["docs_per_s"]
    for name, r, got in rows:
        dups = sum(1 for d in got.values() if d.get("duplicate_of"))
        print(f"| {name} | {r['docs_per_s']:,.0f} | {r['docs_per_s'] / base:.0%} | {r['wall']:.1f} | "
              f"{r['relabelled']:,} | {dups:,} | {misplaced(one, got):,} |")
    print(f"\nSame clusters with 1 and {args.writers} writers, each represented by its earliest member: {same}")


if __name__ == "__main__":
    main()
