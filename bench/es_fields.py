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
import base64
import copy
import datetime
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
import numpy as np  # noqa: E402
from elasticsearch import Elasticsearch  # noqa: E402
from es import node, node_cpu_seconds  # noqa: E402

from esdedup import FingerprintConfig  # noqa: E402
from esdedup.fingerprint import Fingerprinter  # noqa: E402
from esdedup.schema import ARTICLE_FIELDS, content_sha1, dedup_source, mapping_for  # noqa: E402
from esdedup.store.elastic import json_bytes  # noqa: E402

Dedup = dict[str, Any]
Mapping = dict[str, Any]
PLAIN_MAPPING = {"properties": {**copy.deepcopy(ARTICLE_FIELDS), "author": {"type": "keyword"}}}


def _props(mapping: Mapping) -> dict[str, Any]:
    return mapping["properties"]["dedup"]["properties"]


def _is_lsh(name: str) -> bool:
    return name.startswith("lsh_")


def _is_band(name: str) -> bool:
    return name.startswith("band_")


@dataclass(frozen=True)
class Step:
    """One change to esdedup's layout: to the mapping (once) and to every document's dedup object."""

    mapping: Callable[[Mapping], None] = lambda m: None
    doc: Callable[[Dedup], Dedup] = lambda d: d


def _without(drop: Callable[[str], bool]) -> Step:
    """Remove the dedup fields ``drop`` selects, from the mapping and from every document."""
    def mapping(m: Mapping) -> None:
        for name in [n for n in _props(m) if drop(n)]:
            del _props(m)[name]
    return Step(mapping, lambda d: {k: v for k, v in d.items() if not drop(k)})


def _no_doc_values(select: Callable[[str], bool]) -> Step:
    def mapping(m: Mapping) -> None:
        for name, spec in _props(m).items():
            if select(name):
                spec["doc_values"] = False
    return Step(mapping)


def _key_value(key: str) -> int:
    """The 64-bit value of an LSH key ``"m<band>:<16 hex>"`` (the band is mixed into the value already)."""
    return int(key.partition(":")[2], 16)


def _b64_key(bits: int) -> Callable[[str], str]:
    """An LSH key as the top ``bits`` bits of its value, base64url without padding (8 characters for 48)."""
    def encode(key: str) -> str:
        return base64.urlsafe_b64encode((_key_value(key) >> (64 - bits)).to_bytes(bits // 8, "big")).decode()
    return encode


def _one_field(lsh_type: str = "keyword", key: Callable[[str], Any] = lambda k: k, *, bands: bool = True) -> Step:
    """All LSH keys in one multi-valued field ``lsh`` (encoded by ``key``); ``bands``: all SimHash band keys
    in one ``bands`` too."""
    def moved(name: str) -> bool:
        return _is_lsh(name) or (bands and _is_band(name))

    def mapping(m: Mapping) -> None:
        props = _props(m)
        for name in [n for n in props if moved(n)]:
            del props[name]
        props["lsh"] = {"type": lsh_type}
        if bands:
            props["bands"] = {"type": "keyword"}

    def doc(d: Dedup) -> Dedup:
        out = {k: v for k, v in d.items() if not moved(k)}
        lsh = [key(v) for k, v in d.items() if _is_lsh(k)]
        band_keys = [v for k, v in d.items() if _is_band(k)]
        if lsh:
            out["lsh"] = lsh
        if bands and band_keys:
            out["bands"] = band_keys
        return out
    return Step(mapping, doc)


def _separate_fields(key: Callable[[str], Any], lsh_type: str = "keyword") -> Step:
    """The LSH keys in their own field each, as today (``lsh_<band>``), encoded by ``key``."""
    def mapping(m: Mapping) -> None:
        for name, spec in _props(m).items():
            if _is_lsh(name):
                spec["type"] = lsh_type
    return Step(mapping, lambda d: {k: key(v) if _is_lsh(k) else v for k, v in d.items()})


def _text_field() -> Step:
    """All LSH keys in one ``text`` field, space-separated, whitespace analyzer, no norms, no positions: one
    field value a document instead of 32 (no doc values: text fields have none)."""
    def mapping(m: Mapping) -> None:
        _props(m)["lsh"] = {"type": "text", "analyzer": "whitespace", "norms": False, "index_options": "docs"}
    return Step(mapping, lambda d: {**d, "lsh": " ".join(d["lsh"])} if "lsh" in d else d)


def _first_lsh_keys(n: int) -> Step:
    """Only the first ``n`` LSH keys of each document (to measure what each key costs the node)."""
    return Step(doc=lambda d: {**d, "lsh": d["lsh"][:n]} if "lsh" in d else d)


def _pooled_lsh_keys(pool: int) -> Step:
    """LSH keys of the same length, but drawn from ``pool`` values (terms shared by many documents instead of
    nearly unique ones: what uniqueness costs, the number and length of the values being equal)."""
    def doc(d: Dedup) -> Dedup:
        keys = d.get("lsh", [])
        return {**d, "lsh": [f"{k[0]}{sum(map(ord, k)) % pool:0{len(k) - 1}d}" for k in keys]}
    return Step(doc=doc)


def _source_excludes(*fields: str) -> Step:
    def mapping(m: Mapping) -> None:
        m["_source"] = {"excludes": [f"dedup.{f}" for f in fields]}
    return Step(mapping)


def _signature_bits(bits: int) -> Step:
    """The MinHash signature as the low ``bits`` bits of each value (b-bit MinHash), base64."""
    dtype = {16: "<u2", 8: "u1"}[bits]

    def doc(d: Dedup) -> Dedup:
        if "minhash" not in d:
            return d
        sig = np.frombuffer(base64.b64decode(d["minhash"]), dtype="<u4")
        return {**d, "minhash": base64.b64encode((sig & (2**bits - 1)).astype(dtype).tobytes()).decode()}
    return Step(doc=doc)


def _byte_vector(hex_encoded: bool) -> Step:
    """The vector as int8 (``element_type: byte``, flat kNN index: 8.19 refuses int8_flat for bytes), scaled
    so its largest component is 127; sent as a hex string (accepted since 8.14) or as a list of integers."""
    def mapping(m: Mapping) -> None:
        dims = _props(m)["vector"]["dims"]
        _props(m)["vector"] = {"type": "dense_vector", "dims": dims, "element_type": "byte", "index": True,
                               "similarity": "cosine", "index_options": {"type": "flat"}}

    def doc(d: Dedup) -> Dedup:
        if "vector" not in d:
            return d
        v = np.asarray(d["vector"], dtype=np.float64)
        q = np.round(v * (127 / np.abs(v).max())).astype(np.int8)
        return {**d, "vector": q.tobytes().hex() if hex_encoded else q.tolist()}
    return Step(mapping, doc)


def _vector_not_indexed() -> Step:
    def mapping(m: Mapping) -> None:
        _props(m)["vector"] = {"type": "dense_vector", "dims": _props(m)["vector"]["dims"], "index": False}
    return Step(mapping)


_NO_VECTOR = _without(lambda n: n == "vector")
_SHORT_KEYS = _one_field(key=_b64_key(48))
def _long_key(key: str) -> int:
    """An LSH key as the top 40 bits of its value (a JSON number of at most 13 digits)."""
    return _key_value(key) >> 24


_LONG_KEYS = _one_field("long", _long_key)
_LEAN = [_SHORT_KEYS, _signature_bits(16), _NO_VECTOR]
_LEAN_LONG = [_LONG_KEYS, *_LEAN[1:]]

#: name -> (what it is, the steps from esdedup's default layout); None is the plain index (article fields only).
VARIANTS: dict[str, tuple[str, list[Step] | None]] = {
    "plain": ("plain: article fields only", None),
    "esdedup": ("esdedup's documents, default mapping", []),
    "lsh-index-only": ("... LSH fields without doc values", [_no_doc_values(_is_lsh)]),
    "no-lsh": ("... without the 32 LSH fields", [_without(_is_lsh)]),
    "no-minhash": ("... without the MinHash signature", [_without(lambda n: n in ("minhash", "shingles"))]),
    "vector-not-indexed": ("... vector stored, not indexed for kNN", [_vector_not_indexed()]),
    "no-vector": ("... without the vector", [_NO_VECTOR]),
    "simhash-only": ("SimHash bands + vector (no MinHash, no LSH)",
                     [_without(lambda n: _is_lsh(n) or n in ("minhash", "shingles"))]),
    "bands-only": ("SimHash bands, no vector, no MinHash, no LSH",
                   [_without(lambda n: _is_lsh(n) or n in ("minhash", "shingles", "vector"))]),
    # Candidate layouts (issue 16).
    "one-field": ("LSH keys in one keyword field `lsh`, SimHash bands in one `bands` (keys as today)",
                  [_one_field()]),
    "one-field-no-dv": ("... the same without doc values", [_one_field(), _no_doc_values(lambda n: n == "lsh")]),
    "short-keys": ("... keys of 48 bits, 8 base64url characters", [_SHORT_KEYS]),
    "short-keys-no-dv": ("... the same without doc values", [_SHORT_KEYS, _no_doc_values(lambda n: n == "lsh")]),
    "long-keys": ("... keys of 40 bits as one multi-valued `long` field (points)", [_LONG_KEYS]),
    "long-keys-no-dv": ("... the same without doc values", [_LONG_KEYS, _no_doc_values(lambda n: n == "lsh")]),
    "short-keys-excluded": ("short keys, `lsh` and `bands` left out of `_source`",
                            [_SHORT_KEYS, _source_excludes("lsh", "bands")]),
    "signature-16": ("default layout, signature as 16-bit values (b-bit MinHash)", [_signature_bits(16)]),
    "vector-byte-hex": ("default layout, vector as bytes (hex string, flat kNN index)", [_byte_vector(True)]),
    "vector-byte-list": ("default layout, vector as bytes (list of integers)", [_byte_vector(False)]),
    "lean": ("lean: short keys in one field, 16-bit signature, no vector", _LEAN),
    "lean-byte-vector": ("lean + vector as bytes (hex, flat kNN index)", [*_LEAN[:2], _byte_vector(True)]),
    "lean-excluded": ("lean, `lsh` and `bands` left out of `_source`", [*_LEAN, _source_excludes("lsh", "bands")]),
    "lean-16-keys": ("lean with 16 LSH keys a document instead of 32", [*_LEAN, _first_lsh_keys(16)]),
    "lean-pooled-keys": ("lean, the 32 keys drawn from 1,000 values (shared terms, same lengths)",
                         [*_LEAN, _pooled_lsh_keys(1000)]),
    "lean-no-lsh": ("lean without LSH keys", [*_LEAN, _without(lambda n: n == "lsh")]),
    "lean-no-dv": ("lean, `lsh` without doc values", [*_LEAN, _no_doc_values(lambda n: n == "lsh")]),
    "lean-long": ("lean, keys of 40 bits in one `long` field", _LEAN_LONG),
    "lean-long-no-dv": ("lean, keys of 40 bits in one `long` field without doc values",
                        [_LONG_KEYS, *_LEAN[1:], _no_doc_values(lambda n: n == "lsh")]),
    "lean-long-16-keys": ("lean-long with 16 LSH keys a document", [*_LEAN_LONG, _first_lsh_keys(16)]),
    "lean-long-8-keys": ("lean-long with 8 LSH keys a document", [*_LEAN_LONG, _first_lsh_keys(8)]),
    "lean-long-bands-apart": ("lean-long, SimHash bands in their own fields as today",
                              [_one_field("long", _long_key, bands=False), *_LEAN[1:]]),
    "lean-long-sig32": ("lean-long with the 32-bit signature", [_LONG_KEYS, _NO_VECTOR]),
    "lean-long-vector": ("lean-long with the float vector (int8_flat kNN index, as today)",
                         [_LONG_KEYS, _signature_bits(16)]),
    "lean-long-byte-vector": ("lean-long with the vector as bytes (hex, flat kNN index)",
                              [_LONG_KEYS, _signature_bits(16), _byte_vector(True)]),
    "lean-long-32-fields": ("lean, but the 40-bit keys in 32 `long` fields (`lsh_<band>`)",
                            [_separate_fields(_long_key, "long"), *_LEAN[1:]]),
    "lean-32-fields": ("lean, but the short keys in 32 keyword fields (`lsh_<band>`)",
                       [_separate_fields(_b64_key(48)), *_LEAN[1:]]),
    "lean-text": ("lean, the short keys as one `text` value (whitespace analyzer, no doc values)",
                  [*_LEAN, _text_field()]),
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
    steps = VARIANTS[name][1]
    index = f"bench-fields-{name}"
    if steps is None:
        return PLAIN_MAPPING, bodies(index, docs, None, chunk)
    mapping = copy.deepcopy(base)
    changed = dedups
    for step in steps:
        step.mapping(mapping)
        changed = [step.doc(d) for d in changed]
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
    fper = Fingerprinter(config)
    # As ingest writes them: with the content hash (labels and write order are left out: they are not
    # fingerprint fields, and their size depends on the ids).
    dedups = [dedup_source(fp, config, content_sha1(fper.normalize(d["text"])))
              for d, fp in zip(docs, fper.fingerprint_many([d["text"] for d in docs]), strict=True)]
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
                wall, cpu = runs[name][-1]
                print(f"{name:20s} {len(docs) / wall:9,.0f} docs/s  node CPU {cpu:5.1f} s", flush=True)
    finally:
        if cluster is not None:
            cluster.stop()

    plain_rate = len(docs) / statistics.median(w for w, _ in runs["plain"])
    mb = sum(len(d["text"].encode()) for d in docs) / 1e6
    table = ["| what | docs/s (median) | of plain | node CPU s | bulk body MB | dedup bytes/doc |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    plain_bytes = sum(map(len, prepared["plain"][1]))
    for name in names:
        rate = len(docs) / statistics.median(w for w, _ in runs[name])
        rates = sorted(len(docs) / w for w, _ in runs[name])
        table.append(f"| {VARIANTS[name][0]} | {rate:,.0f} ({rates[0]:,.0f}-{rates[-1]:,.0f}) | {rate / plain_rate:.0%} "
                     f"| {statistics.median(c for _, c in runs[name]):.1f} "
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
