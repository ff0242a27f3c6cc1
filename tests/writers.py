"""Concurrent writers for the tests and the benchmark: a corpus with near-duplicate pairs planted across
files, one writer process (``python -m tests.writers ...``), and the checks on the labels they leave.

A writer process ingests one file into an Elasticsearch or OpenSearch index through the library (what ``esdedup
ingest`` does, with a small batch so that several writers interleave many batches), starting at a given
wall-clock instant so that all writers really run at once.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from tests.corpus import make_corpus, make_variant
from tests.reliability import make_text

CONFIG_JSON = json.dumps({"tokenizer": "rjieba"})


def planted_corpus(n_long: int = 240, n_short: int = 240, variants: int = 60, seed: int = 21
                   ) -> tuple[list[dict[str, str]], list[tuple[str, str]]]:
    """Long articles (6-12 sentences of tests/corpus.py, with chance near-duplicates among them) and
    short texts (unique runs of Han characters, 25-120 characters, no SimHash bands), each with
    ``variants`` planted near-duplicates. Returns (documents, planted pairs)."""
    long_docs, long_pairs = make_corpus(n_long, variants, seed=seed, sentences=(6, 12))
    rng = random.Random(seed + 1)
    short_docs = [{"id": f"s{i:05d}", "text": make_text(rng, clauses=(2, 6))[:120]} for i in range(n_short)]
    short_pairs = []
    for j in range(variants):
        src = short_docs[rng.randrange(n_short)]
        short_docs.append({"id": f"sv{j:05d}", "text": make_variant(rng, src["text"])})
        short_pairs.append((src["id"], f"sv{j:05d}"))
    return long_docs + short_docs, long_pairs + short_pairs


def split_across(docs: list[dict[str, str]], pairs: list[tuple[str, str]], n: int) -> list[list[dict[str, str]]]:
    """``n`` parts of ``docs`` in which every planted variant sits in another part than its original."""
    variant_of = {b: a for a, b in pairs}
    part: dict[str, int] = {}
    parts: list[list[dict[str, str]]] = [[] for _ in range(n)]
    for i, d in enumerate(d for d in docs if d["id"] not in variant_of):
        part[d["id"]] = i % n
    for j, d in enumerate(d for d in docs if d["id"] in variant_of):
        part[d["id"]] = (part[variant_of[d["id"]]] + 1 + j % (n - 1)) % n
    for d in docs:
        parts[part[d["id"]]].append(d)
    return parts


def write_parts(parts: list[list[dict[str, str]]], folder: Path) -> list[Path]:
    paths = []
    for k, part in enumerate(parts):
        path = folder / f"part{k}.jsonl"
        path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in part), "utf-8")
        paths.append(path)
    return paths


def stored_labels(client: Any, index: str) -> dict[str, dict[str, Any]]:
    """id -> the document's ``dedup`` labels (cluster_id, duplicate_of, seq, cluster_seq), every document
    (a point in time, paged)."""
    client.indices.refresh(index=index)
    pit = client.open_point_in_time(index=index, keep_alive="2m")["id"]
    out: dict[str, dict[str, Any]] = {}
    after = None
    try:
        while True:
            page = client.search(size=5000, pit={"id": pit, "keep_alive": "2m"}, sort=[{"_shard_doc": "asc"}],
                                 search_after=after, track_total_hits=False,
                                 source_includes=["dedup.cluster_id", "dedup.duplicate_of", "dedup.seq",
                                                  "dedup.cluster_seq"])
            hits = page["hits"]["hits"]
            if not hits:
                return out
            pit, after = page.get("pit_id", pit), hits[-1]["sort"]
            out.update((h["_id"], h["_source"]["dedup"]) for h in hits)
    finally:
        client.close_point_in_time(id=pit)


def partition(labels: dict[str, dict[str, Any]]) -> set[frozenset[str]]:
    groups: dict[str, set[str]] = defaultdict(set)
    for doc_id, d in labels.items():
        groups[d["cluster_id"]].add(doc_id)
    return {frozenset(g) for g in groups.values()}


def inconsistencies(labels: dict[str, dict[str, Any]]) -> list[str]:
    """What breaks the labelling rule: every cluster is represented by its earliest member (seq, then id),
    whose id and seq every member carries, with ``duplicate_of`` on all members but the representative."""
    out = []
    groups: dict[str, list[str]] = defaultdict(list)
    for doc_id, d in labels.items():
        groups[d["cluster_id"]].append(doc_id)
    for cid, members in groups.items():
        root = min(members, key=lambda i: (labels[i].get("seq", 0), i))
        if cid != root:
            out.append(f"cluster {cid} is represented by {cid}, its earliest member is {root}")
        for i in members:
            d = labels[i]
            if d.get("cluster_seq") != labels[root].get("seq"):
                out.append(f"{i}: cluster_seq {d.get('cluster_seq')} != seq {labels[root].get('seq')} of {root}")
            if d.get("duplicate_of") != (None if i == cid else cid):
                out.append(f"{i}: duplicate_of {d.get('duplicate_of')!r} in cluster {cid}")
    return out


def main(argv: list[str] | None = None) -> int:
    from elasticsearch import Elasticsearch

    from esdedup.fingerprint.config import FingerprintConfig
    from esdedup.ingest import IngestOptions, ingest
    from esdedup.store.elastic.store import ElasticStore

    ap = argparse.ArgumentParser()
    ap.add_argument("es_url")
    ap.add_argument("index")
    ap.add_argument("path")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--on-duplicate", default="label")
    ap.add_argument("--ready", type=Path, help="created once everything is imported; then wait for --go")
    ap.add_argument("--go", type=Path, help="start writing when this file exists")
    ap.add_argument("--progress", type=Path)
    ap.add_argument("--dead-letter", type=Path)
    ap.add_argument("--engine", choices=("elasticsearch", "opensearch"), default="elasticsearch")
    args = ap.parse_args(argv)
    if args.engine == "opensearch":
        from opensearchpy import OpenSearch

        from esdedup.es.opensearch import OpenSearchClient

        client: Any = OpenSearchClient(OpenSearch(args.es_url), request_timeout=120)
    else:
        client = Elasticsearch(args.es_url, request_timeout=120)
    store = ElasticStore(client, args.index, shards=2, replicas=0)
    config = FingerprintConfig.from_dict(json.loads(CONFIG_JSON))
    opts = IngestOptions(workers=1, batch=args.batch, on_duplicate=args.on_duplicate, dead_letter=args.dead_letter)

    def progress(summary: Any) -> None:
        if args.progress is not None:
            args.progress.write_text(str(summary.read))

    if args.ready is not None:
        args.ready.touch()
    while args.go is not None and not args.go.exists():
        time.sleep(0.01)
    summary = ingest([args.path], store, config, opts, progress=progress)
    print(json.dumps(summary.to_dict()))
    return 0 if summary.ok else 1


if __name__ == "__main__":
    sys.exit(main())
