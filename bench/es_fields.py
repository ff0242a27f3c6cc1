"""Where the node's indexing time goes: `_bulk` of the same documents with esdedup's fields one group at a time.

    python bench/es_fields.py --docs 50000                     # poems (short), starts a local node
    python bench/es_fields.py --docs 20000 --corpus articles   # People's Daily articles (about 1,100 chars)
    python bench/es_fields.py --es URL                         # a running cluster (its bench-fields-* indexes are deleted)

Every document is fingerprinted and encoded before the clock starts; each variant sends the same pre-built
NDJSON bodies through `_bulk` (chunks of --chunk documents) into a fresh 1-shard index and refreshes it. The
node is warmed up first (JIT), the variants run in rotation for --rounds rounds, and the table gives the median
rate and the node's CPU seconds (`_nodes/stats`) per variant. This isolates the server's share: no
fingerprinting and no client work is timed. Documents carry what ingest writes (`dedup_source`, content hash
included), without the cluster labels and write order, whose size depends on the ids.

A variant is a config (what `dedup_source` and `mapping_for` make of it) and changes to that layout, so each
variant's row, set against the default layout's, prices one field group or one encoding of it (schema 4).

"articles" has only 1,705 real documents (the People's Daily of January 1998, paragraphs joined to at least
1,000 characters); --docs of them are sent round-robin under distinct ids, which costs the node the same as
new text would.
"""
from __future__ import annotations

import argparse
import base64
import copy
import datetime
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import corpora  # noqa: E402
from elasticsearch import Elasticsearch  # noqa: E402
from es import node, node_cpu_seconds  # noqa: E402

from esdedup import FingerprintConfig  # noqa: E402
from esdedup.fingerprint.fingerprinter import Fingerprint, Fingerprinter  # noqa: E402
from esdedup.schema import ARTICLE_FIELDS, LSH_KEYS, content_sha1, dedup_source, json_bytes, mapping_for  # noqa: E402

Dedup = dict[str, Any]
Mapping = dict[str, Any]
PLAIN_MAPPING = {"properties": {**copy.deepcopy(ARTICLE_FIELDS), "author": {"type": "keyword"}}}


def _props(mapping: Mapping) -> dict[str, Any]:
    return mapping["properties"]["dedup"]["properties"]


@dataclass(frozen=True)
class Step:
    """One change to a layout: to the mapping (once) and to every document's dedup object."""

    mapping: Callable[[Mapping], None] = lambda m: None
    doc: Callable[[Dedup], Dedup] = lambda d: d


def _without(*names: str) -> Step:
    """Remove dedup fields, from the mapping and from every document."""
    def mapping(m: Mapping) -> None:
        for name in names:
            _props(m).pop(name, None)
    return Step(mapping, lambda d: {k: v for k, v in d.items() if k not in names})


def _lsh_keys_as(spec: dict[str, Any], encode: Callable[[int], Any] = lambda k: k) -> Step:
    """The LSH keys field mapped as ``spec``, its values encoded by ``encode``."""
    def mapping(m: Mapping) -> None:
        _props(m)[LSH_KEYS] = dict(spec)
    return Step(mapping, lambda d: {**d, LSH_KEYS: [encode(k) for k in d[LSH_KEYS]]} if LSH_KEYS in d else d)


def _first_lsh_keys(n: int) -> Step:
    """Only the first ``n`` LSH keys of each document (what each key costs the node; not a layout: fewer
    bands lose recall)."""
    return Step(doc=lambda d: {**d, LSH_KEYS: d[LSH_KEYS][:n]} if LSH_KEYS in d else d)


def _source_excludes(*names: str) -> Step:
    """Dedup fields indexed as in the default layout but not kept in ``_source`` (they follow from the stored signature).
    A partial update of such a document through ``_source`` would drop them: a probe of the cost only."""
    def mapping(m: Mapping) -> None:
        m["_source"] = {"excludes": [f"dedup.{name}" for name in names]}
    return Step(mapping)


def _not_indexed(*names: str) -> Step:
    """Dedup fields kept as doc values (what `diversify` and lookups read) but not indexed: esdedup never
    searches them (Elasticsearch 8.1+ still answers a term or range query on them from the doc values)."""
    def mapping(m: Mapping) -> None:
        for name in names:
            _props(m)[name] = {**_props(m)[name], "index": False}
    return Step(mapping)


def _signature_bytes(keep: int) -> Step:
    """The MinHash signature with only the low ``keep`` bytes of each 16-bit value (a probe of what the
    signature's size costs the node: fewer bits per value change the estimates)."""
    def doc(d: Dedup) -> Dedup:
        if "minhash" not in d:
            return d
        raw = base64.b64decode(d["minhash"])
        return {**d, "minhash": base64.b64encode(raw[::2] if keep == 1 else raw).decode("ascii")}
    return Step(doc=doc)


def _unsegmented_without(*names: str) -> Step:
    """Dedup fields left out of the documents of texts that were not segmented (a short text under ``auto``:
    its SimHash 0 and its token count 0 say nothing), kept in the mapping for the texts that are."""
    def doc(d: Dedup) -> Dedup:
        if d.get("tokens") or int(d.get("simhash", "0"), 16):
            return d
        return {k: v for k, v in d.items() if k not in names}
    return Step(doc=doc)


_NOT_SIGNATURE = ("minhash", "shingles")
_NEVER_SEARCHED = ("simhash", "tokens", "chars", "shingles", "empty", "content_sha1")

#: name -> (what it is, config overrides, changes to that config's layout); None is the plain index.
VARIANTS: dict[str, tuple[str, dict[str, Any], list[Step]] | None] = {
    "plain": None,
    "esdedup": ("esdedup's documents, default config (16 LSH bands of 3 rows)", {}, []),
    "32x4": ("... 32 LSH bands of 4 rows (the default before)", {"minhash_bands": 32, "minhash_rows": 4}, []),
    "20x3": ("... 20 LSH bands of 3 rows", {"minhash_bands": 20, "minhash_rows": 3}, []),
    "knn": ("... with the vector for kNN (`vector_index` int8_flat)", {"vector_index": "int8_flat"}, []),
    "lsh-no-dv": ("... `lsh_keys` without doc values", {}, [_lsh_keys_as({"type": "long", "doc_values": False})]),
    "lsh-not-in-source": ("... `lsh_keys` indexed but left out of `_source` (`_source.excludes`)", {},
                          [_source_excludes(LSH_KEYS)]),
    "lsh-keyword": ("... `lsh_keys` as a keyword field (the same keys as strings)", {},
                    [_lsh_keys_as({"type": "keyword"}, str)]),
    "8-keys": ("... 8 LSH keys a document instead of 16", {}, [_first_lsh_keys(8)]),
    "no-lsh": ("... without the LSH keys", {}, [_without(LSH_KEYS)]),
    "unsearched-not-indexed": ("... fields esdedup never searches as doc values only (`index: false`)", {},
                               [_not_indexed(*_NEVER_SEARCHED)]),
    "unsegmented-lean": ("... an unsegmented text's SimHash, token count and `empty` left out (a short text "
                         "under `auto`)", {}, [_unsegmented_without("simhash", "tokens", "empty")]),
    "sig-8bit": ("... signature of 8-bit values (128 bytes)", {}, [_signature_bytes(1)]),
    "leanest": ("... all three: 8-bit signature, `lsh_keys` without doc values, never-searched fields as doc "
                "values only", {}, [_signature_bytes(1), _lsh_keys_as({"type": "long", "doc_values": False}),
                                    _not_indexed(*_NEVER_SEARCHED)]),
    "simhash": ("strategy simhash: SimHash bands + vector, no MinHash, no LSH", {"strategy": "simhash"}, []),
    "bands-only": ("SimHash bands, no vector, no MinHash, no LSH", {}, [_without(LSH_KEYS, *_NOT_SIGNATURE)]),
}


def label(name: str) -> str:
    variant = VARIANTS[name]
    return "plain: article fields only" if variant is None else variant[0]


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


def prepare(name: str, docs: list[dict[str, str]], fps: dict[str, list[Fingerprint]], sha1s: list[str],
            config: FingerprintConfig, chunk: int) -> tuple[dict[str, Any], list[bytes]]:
    """(mapping, bulk bodies) of one variant; ``fps``: fingerprints by config identity (filled as needed)."""
    variant = VARIANTS[name]
    index = f"bench-fields-{name}"
    if variant is None:
        return PLAIN_MAPPING, bodies(index, docs, None, chunk)
    _, overrides, steps = variant
    cfg = config.replace(**overrides)
    key = json.dumps(cfg.identity(), sort_keys=True)
    if key not in fps:  # another strategy: other fingerprint fields
        fps[key] = Fingerprinter(cfg).fingerprint_many([d["text"] for d in docs])
    mapping = mapping_for(cfg)
    dedups = [dedup_source(fp, cfg, sha1) for fp, sha1 in zip(fps[key], sha1s, strict=True)]
    for step in steps:
        step.mapping(mapping)
        dedups = [step.doc(d) for d in dedups]
    return mapping, bodies(index, docs, dedups, chunk)


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
    ap.add_argument("--tokenizer", default="jieba")
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
    fper = Fingerprinter(config)
    sha1s = [content_sha1(fper.normalize(d["text"])) for d in docs]
    fps = {json.dumps(config.identity(), sort_keys=True): fper.fingerprint_many([d["text"] for d in docs])}
    prepared = {name: prepare(name, docs, fps, sha1s, config, args.chunk) for name in names}
    del fps

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
                wall, cpu = runs[name][-1]
                print(f"{name:20s} {len(docs) / wall:9,.0f} docs/s  node CPU {cpu:5.1f} s", flush=True)
    finally:
        if cluster is not None:
            cluster.stop()

    plain_rate = len(docs) / statistics.median(w for w, _ in runs["plain"])
    mb = sum(len(d["text"].encode()) for d in docs) / 1e6
    # On a shared machine the wall time mostly measures the neighbours; the node's CPU seconds less so, and
    # "CPU of plain" (plain's node CPU over the variant's) is what the rate would be if the node were alone.
    plain_cpu = statistics.median(c for _, c in runs["plain"])
    table = ["| what | docs/s (median) | of plain | node CPU s | CPU of plain | bulk body MB | dedup bytes/doc |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    plain_bytes = sum(map(len, prepared["plain"][1]))
    for name in names:
        rate = len(docs) / statistics.median(w for w, _ in runs[name])
        rates = sorted(len(docs) / w for w, _ in runs[name])
        cpu = statistics.median(c for _, c in runs[name])
        table.append(f"| {label(name)} | {rate:,.0f} ({rates[0]:,.0f}-{rates[-1]:,.0f}) | {rate / plain_rate:.0%} "
                     f"| {cpu:.1f} | {f'{plain_cpu / cpu:.0%}' if cpu else 'n/a'} "
                     f"| {sum(map(len, prepared[name][1])) / 1e6:.0f} "
                     f"| {(sum(map(len, prepared[name][1])) - plain_bytes) / len(docs):,.0f} |")
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
