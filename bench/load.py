"""Load: concurrent ``similar`` lookups against a 3-node Elasticsearch cluster.

By default a 3-node local cluster is started through scripts/es-local (tests/es_node.py), an index with 3
shards and 1 replica is filled with ``--docs`` distinct articles (the generator of tests/reliability.py,
ingested by ``python -m esdedup ingest``), then ``--clients`` client processes issue lookups for
``--seconds``: each lookup is ``esdedup.api.similar_to`` (fingerprint the text, band ``_msearch``, exact
verification), the text being a stored article (half of them) or a near-duplicate of one (a few characters
changed and a prefix added). A lookup is *correct* when the article it came from is among the matches.
Each client talks to one node (round robin over the nodes). Reported: lookups per second, latency
p50/p95/p99/max, errors and wrong answers; the run fails (exit 1) on any error or wrong answer.

Only loopback addresses are accepted (``--es`` is refused for any other host); the duration is bounded.

Run: ``python bench/load.py`` (about 12 minutes on 2 cores: 3 nodes start, 100,000 articles are ingested,
60 s of load) or ``python bench/load.py --es http://127.0.0.1:9200,http://127.0.0.1:9201`` for a running
cluster. ``--append BENCHMARKS.md`` appends the result under "## Load (bench/load.py)".
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import multiprocessing as mp
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.reliability import cli_env, make_docs, write_jsonl  # noqa: E402

LOOPBACK = {"127.0.0.1", "localhost", "::1"}
SECTION = "## Load (bench/load.py)"
BR = "  "  # markdown line break
MODES = {
    "service": "each client keeps its store and Fingerprinter open, as a service would, and a lookup is "
               "`lookup.similar(store, [fingerprint(text)])` (fingerprint, one band `_msearch`, exact "
               "verification).",
    "one-shot": "each lookup is `api.similar_to(store, text=...)`, what one `esdedup similar` run does: it also "
                "re-reads the index mapping and builds a new Fingerprinter every time.",
}


def _variant(rng: random.Random, text: str) -> str:
    chars = list(text)
    for _ in range(max(1, len(chars) // 60)):
        chars[rng.randrange(len(chars))] = chr(0x4E00 + rng.randrange(2500))
    return "据报道，" + "".join(chars)


def _client(args: tuple[str, str, list[tuple[str, str]], float, float, int, str]) -> dict:
    url, index, queries, start_at, deadline, seed, mode = args
    from esdedup.api import similar_to
    from esdedup.errors import StoreError
    from esdedup.es.connect import make_client, resolve_settings
    from esdedup.fingerprint.fingerprinter import Fingerprinter
    from esdedup.match.lookup import similar
    from esdedup.store.elastic.store import ElasticStore

    client = make_client(resolve_settings(url))
    store = ElasticStore(client, index)
    fper = Fingerprinter(store.open(None, create=False).config)  # a service keeps both open

    def lookup(text: str) -> list[str]:
        if mode == "one-shot":  # what one `esdedup similar` does: open, new Fingerprinter, look up
            return [m["id"] for m in similar_to(store, text=text, top=5).matches]
        return [m.id for m in similar(store, [fper.fingerprint(text)], top=5)[0]]

    rng = random.Random(seed)
    lat: list[float] = []
    errors: list[str] = []
    wrong = 0
    lookup(queries[0][1])  # warm up: tokenizer dictionary, connection
    time.sleep(max(0.0, start_at - time.time()))  # every client measures the same window
    while time.time() < deadline:
        doc_id, text = queries[rng.randrange(len(queries))]
        t = time.perf_counter()
        try:
            ids = lookup(text)
        except StoreError as exc:
            errors.append(str(exc)[:200])
            continue
        lat.append(time.perf_counter() - t)
        if doc_id not in ids:
            wrong += 1
    client.close()
    return {"lat": lat, "errors": errors, "wrong": wrong}


def _percentile(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(p / 100 * len(xs)) - 1))]


def _count(url: str, index: str) -> int:
    from elasticsearch import Elasticsearch

    es = Elasticsearch(url, request_timeout=60)
    try:
        r = es.options(ignore_status=404).count(index=index)
        return int(r.get("count", 0)) if r.meta.status == 200 else 0
    finally:
        es.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--es", help="comma-separated node URLs of a running cluster (loopback only); "
                                 "default: start a 3-node local cluster")
    ap.add_argument("--index", default="esdedup-load")
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--queries", type=int, default=2000, help="distinct lookup texts")
    ap.add_argument("--mode", choices=("service", "one-shot"), default="service",
                    help="service: each client keeps its store and Fingerprinter and calls lookup.similar; "
                         "one-shot: api.similar_to per lookup, as one `esdedup similar` run does")
    ap.add_argument("--keep", action="store_true", help="leave the started cluster running (prints its URLs)")
    ap.add_argument("--append", type=Path, help="append the result to this markdown file (BENCHMARKS.md)")
    args = ap.parse_args(argv)
    if not 0 < args.seconds <= 600:
        ap.error("--seconds must be in (0, 600]")

    cluster = None
    if args.es:
        urls = [u.strip().rstrip("/") for u in args.es.split(",") if u.strip()]
    else:
        from tests.es_node import LocalCluster

        cluster = LocalCluster(nodes=3, name=f"esdedup-load-{os.getpid()}", watch=not args.keep)
        print("starting a 3-node local cluster ...", file=sys.stderr)
        urls = cluster.start()
    for u in urls:
        if urlsplit(u).hostname not in LOOPBACK:
            ap.error(f"refusing a non-loopback address: {u}")
    try:
        docs = make_docs(args.docs, seed=101, prefix="L")
        have = _count(urls[0], args.index)
        ingest_s = None
        if have < args.docs:
            with tempfile.TemporaryDirectory() as tmp:
                path = write_jsonl(Path(tmp) / "load.jsonl", docs)
                print(f"ingesting {args.docs} articles ...", file=sys.stderr)
                t = time.monotonic()
                r = subprocess.run([sys.executable, "-m", "esdedup", "ingest", str(path), "--index", args.index,
                                    "--es", urls[0], "--tokenizer", "rjieba", "--shards", "3", "--replicas", "1",
                                    "--json", "--quiet", "--dead-letter", str(Path(tmp) / "dl.jsonl"),
                                    "--checkpoint", str(Path(tmp) / "ck.json")],
                                   env=cli_env(), capture_output=True, text=True, timeout=3600)
                ingest_s = time.monotonic() - t
                if r.returncode != 0:
                    print(r.stdout[-2000:], r.stderr[-3000:], file=sys.stderr)
                    return 1
        from elasticsearch import Elasticsearch

        es = Elasticsearch(urls, request_timeout=120)
        es.cluster.health(index=args.index, wait_for_status="green", timeout="120s")
        es.indices.refresh(index=args.index)
        n_docs = int(es.count(index=args.index)["count"])
        es.close()

        rng = random.Random(7)
        picked = rng.sample(docs, min(args.queries, len(docs)))
        queries = [(d["id"], d["text"] if i % 2 == 0 else _variant(rng, d["text"])) for i, d in enumerate(picked)]
        deadline = time.time() + 20 + args.seconds  # the clients start within 20 s (imports, warm-up)
        start_at = deadline - args.seconds
        print(f"{args.clients} clients, {args.seconds:.0f} s of lookups ...", file=sys.stderr)
        with mp.get_context("spawn").Pool(args.clients) as pool:
            pending = pool.map_async(_client, [(urls[i % len(urls)], args.index, queries, start_at, deadline, i,
                                                args.mode) for i in range(args.clients)])
            results = pending.get(timeout=args.seconds + 300)
        lat = [x for r in results for x in r["lat"]]
        errors = [e for r in results for e in r["errors"]]
        wrong = sum(r["wrong"] for r in results)
        out = {
            "docs": n_docs, "clients": args.clients, "seconds": args.seconds, "lookups": len(lat),
            "lookups_per_s": round(len(lat) / args.seconds, 1),
            "p50_ms": round(1000 * statistics.median(lat), 1), "p95_ms": round(1000 * _percentile(lat, 95), 1),
            "p99_ms": round(1000 * _percentile(lat, 99), 1), "max_ms": round(1000 * max(lat), 1),
            "errors": len(errors), "wrong": wrong, "mode": args.mode, "ingest_seconds": round(ingest_s, 1) if ingest_s else None,
        }
        print(json.dumps(out))
        if errors:
            print("first errors:", *sorted(set(errors))[:5], sep="\n  ", file=sys.stderr)
        if args.append:
            _append(args.append, out, argv if argv is not None else sys.argv[1:])
        return 0 if not errors and not wrong else 1
    finally:
        if cluster is not None and not args.keep:
            cluster.stop()
        elif cluster is not None:
            print("cluster left running:", ",".join(urls), f"(stop it: scripts/es-local stop --purge --name "
                  f"{cluster.name} --state-dir {cluster.state_dir})", file=sys.stderr)


def _append(path: Path, out: dict, argv: list[str]) -> None:
    cmd = "python bench/load.py" + "".join(f" {a}" for a in argv)
    try:
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        load = "n/a"
    import elasticsearch

    text = f"""
{SECTION}

Command: `{cmd}`{BR}
Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores (the 3 Elasticsearch nodes, 1 GB
heap each, and the {out['clients']} client processes share them), Python {platform.python_version()},
elasticsearch-py {elasticsearch.__version__[0]}.{elasticsearch.__version__[1]}, Elasticsearch 8.19 (scripts/es-local);
load average at the end {load}{BR}
Date: {_dt.date.today().isoformat()}{BR}
Index: {out['docs']:,} distinct articles (about 100 Han characters each), 3 shards, 1 replica, 3 nodes.
Mode `{out['mode']}`: {MODES[out['mode']]} Half the texts are stored articles, half near-duplicates of one (a few
characters changed, a prefix added); a lookup is correct when its article is among the matches.
{out['clients']} client processes, one node each (round robin), {out['seconds']:.0f} s.

| lookups | lookups/s | p50 ms | p95 ms | p99 ms | max ms | errors | wrong answers |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| {out['lookups']:,} | {out['lookups_per_s']} | {out['p50_ms']} | {out['p95_ms']} | {out['p99_ms']} | {out['max_ms']} | {out['errors']} | {out['wrong']} |
"""
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)


if __name__ == "__main__":
    sys.exit(main())
