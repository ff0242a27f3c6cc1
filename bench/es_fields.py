"""Where the node's indexing time goes: `_bulk` of the same documents with esdedup's fields one group at a time.

    python bench/es_fields.py --docs 50000                     # poems (short), starts a local node
    python bench/es_fields.py --docs 20000 --corpus articles   # People's Daily articles (about 1,100 chars)
    python bench/es_fields.py --es URL                         # a running cluster (its bench-fields-* indexes are deleted)

Every document is fingerprinted and encoded before the clock starts; each variant sends the same pre-built
NDJSON bodies through `_bulk` (chunks of --chunk documents) into a fresh 1-shard index and refreshes it. The
node is warmed up first (JIT), the variants run in rotation for --rounds rounds, and the table gives the median
rate and the node's CPU seconds (`_nodes/stats`) per variant. This isolates the server's share: no
fingerprinting and no client work is timed.

"articles" has only 1,705 real documents (the People's Daily of January 1998, paragraphs joined to at least
1,000 characters); --docs of them are sent round-robin under distinct ids, which costs the node the same as
new text would.
"""
from __future__ import annotations

import argparse
import copy
import datetime
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import corpora  # noqa: E402
from elasticsearch import Elasticsearch  # noqa: E402
from es import node, node_cpu_seconds  # noqa: E402

from esdedup import FingerprintConfig  # noqa: E402
from esdedup.fingerprint import Fingerprinter  # noqa: E402
from esdedup.schema import ARTICLE_FIELDS, dedup_source, mapping_for  # noqa: E402
from esdedup.store.elastic import json_bytes  # noqa: E402

Dedup = dict[str, Any]
PLAIN_MAPPING = {"properties": {**copy.deepcopy(ARTICLE_FIELDS), "author": {"type": "keyword"}}}


def _is_lsh(name: str) -> bool:
    return name.startswith("lsh_")


def _without(drop: Callable[[str], bool]) -> Callable[[dict[str, Any], Dedup], Dedup]:
    """A variant that removes the dedup fields ``drop`` selects, from the mapping and from every document."""
    def apply(props: dict[str, Any], d: Dedup) -> Dedup:
        for name in [n for n in props if drop(n)]:
            del props[name]
        return {k: v for k, v in d.items() if not drop(k)}
    return apply


def _lsh_index_only(props: dict[str, Any], d: Dedup) -> Dedup:
    for name in props:
        if _is_lsh(name):
            props[name]["doc_values"] = False
    return d


def _vector_not_indexed(props: dict[str, Any], d: Dedup) -> Dedup:
    props["vector"] = {"type": "dense_vector", "dims": props["vector"]["dims"], "index": False}
    return d


#: name -> (what it is, how it changes the esdedup mapping properties and a document's dedup object).
#: None is the plain index: the article fields only.
VARIANTS: dict[str, tuple[str, Callable[[dict[str, Any], Dedup], Dedup] | None]] = {
    "plain": ("plain: article fields only", None),
    "esdedup": ("esdedup's documents, default mapping", lambda props, d: d),
    "lsh-index-only": ("... LSH fields without doc values", _lsh_index_only),
    "no-lsh": ("... without the 32 LSH fields", _without(_is_lsh)),
    "no-minhash": ("... without the MinHash signature", _without(lambda n: n in ("minhash", "shingles"))),
    "vector-not-indexed": ("... vector stored, not indexed for kNN", _vector_not_indexed),
    "no-vector": ("... without the vector", _without(lambda n: n == "vector")),
    "simhash-only": ("SimHash bands + vector (no MinHash, no LSH)",
                     _without(lambda n: _is_lsh(n) or n in ("minhash", "shingles"))),
    "bands-only": ("SimHash bands, no vector, no MinHash, no LSH",
                   _without(lambda n: _is_lsh(n) or n in ("minhash", "shingles", "vector"))),
}


def load(corpus: str, n: int) -> list[dict[str, str]]:
    if corpus == "poems":
        return list(corpora.poems(n))
    arts = corpora.peoples_daily_articles(1000)
    return [{"id": f"pd-{i}", "title": "", "author": "", "text": arts[i % len(arts)]} for i in range(n)]


def bodies(index: str, docs: list[dict[str, str]], dedups: list[Dedup] | None, chunk: int) -> list[bytes]:
    out = []
    for i in range(0, len(docs), chunk):
        lines = []
        for j in range(i, min(i + chunk, len(docs))):
            lines.append(json_bytes({"index": {"_index": index, "_id": docs[j]["id"]}}))
            lines.append(json_bytes(docs[j] if dedups is None else {**docs[j], "dedup": dedups[j]}))
        out.append(b"\n".join(lines) + b"\n")
    return out


def prepare(name: str, docs: list[dict[str, str]], dedups: list[Dedup], base: dict[str, Any],
            chunk: int) -> tuple[dict[str, Any], list[bytes]]:
    """(mapping, bulk bodies) of one variant."""
    change = VARIANTS[name][1]
    index = f"bench-fields-{name}"
    if change is None:
        return PLAIN_MAPPING, bodies(index, docs, None, chunk)
    mapping = copy.deepcopy(base)
    props = mapping["properties"]["dedup"]["properties"]
    changed = [change(props, d) for d in dedups]
    return mapping, bodies(index, docs, changed, chunk)


def send(es: Elasticsearch, name: str, mapping: dict[str, Any], chunks: list[bytes]) -> tuple[float, float]:
    """(wall seconds, node CPU seconds) to bulk ``chunks`` into a fresh index and refresh it."""
    index = f"bench-fields-{name}"
    es.options(ignore_status=404).indices.delete(index=index)
    es.indices.create(index=index, settings={"number_of_shards": 1, "number_of_replicas": 0}, mappings=mapping)
    cpu, t = node_cpu_seconds(es), time.perf_counter()
    for body in chunks:
        resp = es.bulk(operations=body)
        if resp["errors"]:
            bad = next(i for i in resp["items"] if "error" in next(iter(i.values())))
            raise SystemExit(f"{name}: bulk item rejected: {bad}")
    es.indices.refresh(index=index)
    wall, cpu = time.perf_counter() - t, node_cpu_seconds(es) - cpu
    es.indices.delete(index=index)
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=50_000)
    ap.add_argument("--corpus", choices=("poems", "articles"), default="poems")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--chunk", type=int, default=500)
    ap.add_argument("--tokenizer", default="rjieba")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, from: " + ", ".join(VARIANTS))
    ap.add_argument("--es", help="a running cluster (default: start a local node)")
    ap.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"))
    ap.add_argument("--no-append", action="store_true")
    args = ap.parse_args()
    names = ["plain"] + [n for n in args.variants.split(",") if n != "plain"]
    unknown = set(names) - set(VARIANTS)
    if unknown:
        ap.error(f"unknown variants: {', '.join(sorted(unknown))}")

    docs = load(args.corpus, args.docs)
    config = FingerprintConfig(tokenizer=args.tokenizer)
    dedups = [dedup_source(fp, config) for fp in Fingerprinter(config).fingerprint_many([d["text"] for d in docs])]
    base = mapping_for(config)
    prepared = {name: prepare(name, docs, dedups, base, args.chunk) for name in names}
    del dedups

    cluster, url = node(args.es)
    es = Elasticsearch(url, request_timeout=300)
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    try:
        for name in ("plain", "esdedup", "plain"):  # warm-up, not counted: the JIT compiles the bulk path
            if name in prepared:
                send(es, name, *prepared[name])
        for _ in range(args.rounds):
            for name in names:
                runs[name].append(send(es, name, *prepared[name]))
                print(f"{name:20s} {len(docs) / runs[name][-1][0]:9,.0f} docs/s", flush=True)
    finally:
        if cluster is not None:
            cluster.stop()

    plain_rate = len(docs) / statistics.median(w for w, _ in runs["plain"])
    mb = sum(len(d["text"].encode()) for d in docs) / 1e6
    table = ["| what | docs/s (median) | of plain | node CPU s | bulk body MB |", "| --- | ---: | ---: | ---: | ---: |"]
    for name in names:
        rate = len(docs) / statistics.median(w for w, _ in runs[name])
        rates = sorted(len(docs) / w for w, _ in runs[name])
        table.append(f"| {VARIANTS[name][0]} | {rate:,.0f} ({rates[0]:,.0f}-{rates[-1]:,.0f}) | {rate / plain_rate:.0%} "
                     f"| {statistics.median(c for _, c in runs[name]):.1f} "
                     f"| {sum(map(len, prepared[name][1])) / 1e6:.0f} |")
    cmd = "python bench/es_fields.py " + " ".join(sys.argv[1:])
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    section = (f"\n### Server's share by field group (bench/es_fields.py, {args.corpus})\n\n`{cmd.strip()}` — {when}, "
               f"this machine, one local node, {len(docs):,} {args.corpus} ({mb:.1f} MB of text), fields precomputed, "
               f"{args.rounds} rounds after a warm-up; range in brackets.\n\n" + "\n".join(table) + "\n")
    print(section)
    if not args.no_append:
        with open(args.out, "a", encoding="utf-8") as fh:
            fh.write(section)


if __name__ == "__main__":
    main()
