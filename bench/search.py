"""Search-time cost of diversifying: response size and latency of 100-hit pages, fetched whole against
fetched as `search_diversified` fetches them (only the dedup fields the rule reads).

    python bench/search.py --docs 20000 --queries 200        # starts a local node with scripts/es-local
    python bench/search.py --es URL                          # or uses a running cluster

Documents: Tang and Song poems from chinese-poetry (bench/corpora.py), ingested with `esdedup ingest`
(default config, label mode). Queries: single characters and two-character words common in poems.

* "full _source" is what a plain search returns to a caller that diversifies it: every stored field, the dedup fields
  included (16 LSH keys, band keys, the 256-float vector), plus the SimHash as a doc value; then `diversify`.
* "search_diversified" is the request that function sends (the small dedup fields only; the signature from
  ``_source``; the bulky fields excluded) and the whole call (one window, no over-fetch), `diversify` included.

Response size is the JSON of the response body as the client decoded it, re-encoded (UTF-8, no spaces):
what travels is close to it without compression.
"""
from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import corpora  # noqa: E402
from elasticsearch import Elasticsearch  # noqa: E402
from es import node, pct  # noqa: E402

from esdedup.ingest import IngestOptions, ingest  # noqa: E402
from esdedup.match.thresholds import Thresholds  # noqa: E402
from esdedup.search.diversify import diversify  # noqa: E402
from esdedup.search.paging import _with_dedup_fields, index_config, search_diversified  # noqa: E402
from esdedup.store.elastic.store import ElasticStore  # noqa: E402

WORDS = ["明月", "春风", "故人", "秋", "山", "江", "酒", "花", "夜", "雨", "天涯", "归", "云", "柳", "长安", "白"]


def size_of(body: object) -> int:
    return len(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=20000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--es", default=None)
    ap.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"))
    ap.add_argument("--no-append", action="store_true")
    args = ap.parse_args(argv)

    cluster, url = node(args.es)
    rows = []
    try:
        es = Elasticsearch(url, request_timeout=120)
        store = ElasticStore(es, "bench-esdedup-search", shards=1, replicas=0)
        store.drop()
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "poems.jsonl"
            with path.open("w", encoding="utf-8") as fh:
                for p in corpora.poems(args.docs):
                    fh.write(json.dumps(p, ensure_ascii=False) + "\n")
            ingest([path], store, None, IngestOptions(dead_letter=Path(tmp) / "dl.jsonl"))
        config = index_config(es, store.name)
        t = Thresholds.from_config(config)
        queries = [{"query": {"match": {"text": WORDS[i % len(WORDS)]}}} for i in range(args.queries)]
        before_req = {"docvalue_fields": ["dedup.simhash", "dedup.empty"]}
        after_req, _ = _with_dedup_fields({}, config, t)
        for name, extra in (("full _source", before_req), ("search_diversified request", after_req)):
            sizes, times = [], []
            for q in queries:
                start = time.perf_counter()
                resp = es.search(index=store.name, size=args.size, **q, **extra)
                diversify(resp["hits"]["hits"], config=config)
                times.append((time.perf_counter() - start) * 1000)
                sizes.append(size_of(resp.body))
            rows.append((name + " + `diversify`", statistics.median(sizes), pct(times, 50), pct(times, 95)))
        times = []
        for q in queries:
            start = time.perf_counter()
            search_diversified(es, store.name, q, size=args.size, overfetch=1, max_rounds=1)
            times.append((time.perf_counter() - start) * 1000)
        rows.append(("`search_diversified` call (same request)", float("nan"), pct(times, 50), pct(times, 95)))
        store.drop()
    finally:
        if cluster is not None:
            cluster.stop()

    cmd = "python bench/search.py " + " ".join(sys.argv[1:] if argv is None else argv)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    table = ["| request | response bytes (median) | p50 ms | p95 ms |", "| --- | ---: | ---: | ---: |"]
    table += [f"| {n} | {'' if b != b else f'{b:,.0f}'} | {p50:.1f} | {p95:.1f} |" for n, b, p50, p95 in rows]
    section = (f"\n## Search responses (bench/search.py)\n\n`{cmd.strip()}` — {when}, this machine (2 cores), "
               f"Elasticsearch single node, {args.docs:,} poems ingested with the default config, "
               f"{args.queries} match queries of {args.size} hits each, client and node on the same cores.\n\n"
               + "\n".join(table) + "\n")
    print(section)
    if not args.no_append:
        with open(args.out, "a", encoding="utf-8") as fh:
            fh.write(section)


if __name__ == "__main__":
    main()
