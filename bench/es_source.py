"""Vectors in or out of `_source`: what Elasticsearch 9.2's default (dense_vector values kept out of the stored
`_source`, rebuilt from the vector index when a request names them) costs or saves esdedup.

    python bench/es_source.py --version 9.2.0 --docs 20000        # starts a local node of that version
    python bench/es_source.py --version 8.19.21 --docs 20000      # the 8.x baseline (vectors always in _source)
    python bench/es_source.py --es URL                            # a running cluster (bench-source-* deleted)

The same esdedup documents (poems, fingerprinted before the clock starts, one shared set of NDJSON bodies)
go through `_bulk` into fresh 1-shard indexes: the server's default, and, on servers that know the setting,
`index.mapping.exclude_source_vectors: false` (vectors kept in `_source`, as on 8.x). Per variant: the median
bulk rate, the node's CPU seconds, the store size after a force-merge to one segment, and the time to fetch
the fingerprints (doc values + vector, the way every lookup reads candidates) of all documents by id, 500 ids
a request.
"""
from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from elasticsearch import Elasticsearch  # noqa: E402
from es import node_cpu_seconds  # noqa: E402
from es_fields import bodies, load  # noqa: E402

from esdedup import FingerprintConfig  # noqa: E402
from esdedup.es.query import ids_body  # noqa: E402
from esdedup.fingerprint.fingerprinter import Fingerprinter  # noqa: E402
from esdedup.schema import dedup_source, mapping_for  # noqa: E402

#: name -> (what it is, extra index settings); None settings = run only where the server knows the setting.
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "default": ("the server's default", {}),
    "vectors-in-source": ("vectors kept in _source", {"index.mapping.exclude_source_vectors": False}),
}


def knows_setting(es: Elasticsearch, setting: str) -> bool:
    es.options(ignore_status=404).indices.delete(index="bench-source-probe")
    es.indices.create(index="bench-source-probe")
    try:
        got = es.indices.get_settings(index="bench-source-probe", include_defaults=True, flat_settings=True)
        return setting in got["bench-source-probe"].get("defaults", {})
    finally:
        es.indices.delete(index="bench-source-probe")


def index_once(es: Elasticsearch, index: str, settings: dict[str, Any], mapping: dict[str, Any],
               chunks: list[bytes]) -> tuple[float, float]:
    """(wall seconds, node CPU seconds) to bulk ``chunks`` into a fresh ``index`` and refresh it."""
    es.options(ignore_status=404).indices.delete(index=index)
    es.indices.create(index=index, settings={"number_of_shards": 1, "number_of_replicas": 0, **settings},
                      mappings=mapping)
    cpu, t = node_cpu_seconds(es), time.perf_counter()
    for body in chunks:
        if es.bulk(operations=body)["errors"]:
            raise SystemExit(f"{index}: a bulk item was rejected")
    es.indices.refresh(index=index)
    return time.perf_counter() - t, node_cpu_seconds(es) - cpu


def store_mb(es: Elasticsearch, index: str) -> float:
    es.indices.forcemerge(index=index, max_num_segments=1)
    stats = es.indices.stats(index=index, metric="store")
    return float(stats["indices"][index]["primaries"]["store"]["size_in_bytes"]) / 1e6


def fetch_seconds(es: Elasticsearch, index: str, ids: list[str]) -> float:
    """Fetch every document's fingerprint by id (500 a request), checking that each vector came back."""
    t = time.perf_counter()
    for i in range(0, len(ids), 500):
        hits = es.search(index=index, **ids_body(ids[i : i + 500]))["hits"]["hits"]
        if any(len((h.get("_source") or {}).get("dedup", {}).get("vector") or ()) == 0 for h in hits):
            raise SystemExit(f"{index}: a fingerprint came back without its vector")
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--chunk", type=int, default=500)
    ap.add_argument("--version", help="start a local node of this version (default: the es-local default)")
    ap.add_argument("--es", help="a running cluster (default: start a local node)")
    ap.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"))
    ap.add_argument("--no-append", action="store_true")
    args = ap.parse_args()

    docs = load("poems", args.docs)
    config = FingerprintConfig(tokenizer="rjieba", vector_index="int8_flat")  # the default stores no vector
    dedups = [dedup_source(fp, config) for fp in Fingerprinter(config).fingerprint_many([d["text"] for d in docs])]
    mapping = mapping_for(config)
    ids = [d["id"] for d in docs]

    cluster = None
    if args.es is None:
        from tests.es_node import LocalCluster

        cluster = LocalCluster(nodes=1, version=args.version)
        cluster.start()
    es = Elasticsearch(args.es or cluster.url, request_timeout=300)  # type: ignore[union-attr]
    rows = []
    try:
        version = next(iter(es.nodes.info(node_id="_local")["nodes"].values()))["version"]
        names = [n for n in VARIANTS if n == "default" or knows_setting(es, "index.mapping.exclude_source_vectors")]
        prepared = {n: bodies(f"bench-source-{n}", docs, dedups, args.chunk) for n in names}
        index_once(es, "bench-source-default", {}, mapping, prepared["default"])  # warm-up (JIT), not counted
        runs: dict[str, list[tuple[float, float]]] = {n: [] for n in names}
        for _ in range(args.rounds):
            for n in names:
                runs[n].append(index_once(es, f"bench-source-{n}", VARIANTS[n][1], mapping, prepared[n]))
        for n in names:
            index = f"bench-source-{n}"
            size = store_mb(es, index)
            fetch_seconds(es, index, ids)  # warm-up
            fetch = statistics.median(fetch_seconds(es, index, ids) for _ in range(args.rounds))
            rate = len(docs) / statistics.median(w for w, _ in runs[n])
            rows.append(f"| {version} | {VARIANTS[n][0]} | {rate:,.0f} | {statistics.median(c for _, c in runs[n]):.1f} "
                        f"| {size:.1f} | {len(docs) / fetch:,.0f} |")
            es.indices.delete(index=index)
    finally:
        es.close()
        if cluster is not None:
            cluster.stop()

    cmd = "python bench/es_source.py " + " ".join(sys.argv[1:])
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    section = (f"\n### Vectors in or out of _source (bench/es_source.py)\n\n`{cmd.strip()}` — {when}, this machine, "
               f"one local node, {len(docs):,} poems, fields precomputed, median of {args.rounds} rounds after a "
               "warm-up.\n\n| server | _source | bulk docs/s | node CPU s | store MB (1 segment) | "
               "fingerprints fetched by id /s |\n| --- | --- | ---: | ---: | ---: | ---: |\n" + "\n".join(rows) + "\n")
    print(section)
    if not args.no_append:
        with open(args.out, "a", encoding="utf-8") as fh:
            fh.write(section)


if __name__ == "__main__":
    main()
