"""`esdedup dups --partition I/P` at scale: one index of N documents, then for each P the P partitions run
as P processes at once; wall (all of them), each process's peak RSS and wall, and whether the partitions'
pairs together are exactly those of one `dups` run (and no pair twice).

    python bench/partitions.py --docs 200000 --local               # the embedded store (a temporary --data-dir)
    python bench/partitions.py --docs 200000 --es http://127.0.0.1:9400
    python bench/partitions.py --docs 2000 --local --parts 1,2     # a quick check (tests run it)
    python bench/partitions.py --docs 1000000 --corpus scale --shards 3 --es URL   # bench/scale.py's corpus
    python bench/partitions.py --docs-file DOCS.jsonl --local      # the documents of a file (its --docs ignored)
    python bench/partitions.py --docs 10000000 --corpus scale --local --data-dir DIR --on-duplicate index --parts 1
    python bench/partitions.py --existing --local --data-dir DIR --parts 2,4                      # the same store again
    python bench/partitions.py --existing --local --data-dir DIR --parts 1,4 --whole first        # no separate dups

With ``--es`` each run's node CPU (every node of the cluster, ``_nodes/stats``) is measured too.

The documents: sources of 150 to 600 characters drawn at random from esdedup's list of common characters
(so that unrelated documents share no n-gram by chance), and for one source in four a planted near-duplicate
(tests/corpus.py's `make_variant`: a few characters replaced, a short prefix or suffix), ingested with ``python -m esdedup ingest`` as a user runs it; the index is dropped after the run unless
``--keep``. Prints a Markdown table and the JSON of the figures.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import es as es_bench  # noqa: E402
import numpy as np  # noqa: E402
import scale  # noqa: E402
from scale import PeakRss, log  # noqa: E402

from esdedup.api import open_store  # noqa: E402
from tests.corpus import make_variant  # noqa: E402


def make_docs(n: int, seed: int = 1) -> list[dict[str, str]]:
    """``n`` documents: sources, and a planted near-duplicate after every fourth."""
    rng = random.Random(seed)
    text = (ROOT / "esdedup/data/common_simplified.txt").read_text("utf-8")
    chars = [c for line in text.splitlines() if not line.startswith("#") for c in line if not c.isspace()]
    docs: list[dict[str, str]] = []
    while len(docs) < n:
        body = "".join(rng.choices(chars, k=rng.randint(150, 600)))
        docs.append({"id": f"d{len(docs):08d}", "text": body})
        if len(docs) % 4 == 0 and len(docs) < n:
            docs.append({"id": f"d{len(docs):08d}", "text": make_variant(rng, body)})
    return docs


def node_cpu(es_url: str | None) -> float | None:
    """The cluster's node CPU seconds so far (None for the embedded store)."""
    if es_url is None:
        return None
    from elasticsearch import Elasticsearch
    with Elasticsearch(es_url) as client:
        return es_bench.node_cpu_seconds(client)


def line_hashes(paths: list[Path]) -> np.ndarray:
    """A 64-bit hash of every line of ``paths``, sorted: two outputs hold the same lines as often when these
    are equal (ten million pairs' lines are 80 MB here, not gigabytes of strings)."""
    out: list[int] = []
    for path in paths:
        with open(path, "rb") as fh:
            out += (int.from_bytes(hashlib.blake2b(line.rstrip(b"\n"), digest_size=8).digest(), "little")
                    for line in fh if line.strip())
    return np.sort(np.array(out, dtype=np.uint64))


def run_partitions(where: list[str], parts: int, out: Path, es_url: str | None) -> dict[str, object]:
    """The ``parts`` partitions of `dups` at once; their figures and their pairs' lines' hashes."""
    procs = []
    node0 = node_cpu(es_url)
    t = time.perf_counter()
    for i in range(parts):
        argv = [sys.executable, "-m", "esdedup", "dups", *where, "--partition", f"{i}/{parts}", "--json"]
        fh = open(out / f"p{i}of{parts}.jsonl", "wb")  # noqa: SIM115 (closed once the process is reaped)
        err = open(out / f"p{i}of{parts}.err", "wb")  # noqa: SIM115
        proc = subprocess.Popen(argv, stdout=fh, stderr=err, cwd=ROOT)
        procs.append((proc, PeakRss(proc.pid), fh, err, time.perf_counter()))
    runs = []
    for i, (proc, peak, fh, err, start) in enumerate(procs):
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        fh.close()
        err.close()
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"partition {i}/{parts} failed: {(out / f'p{i}of{parts}.err').read_text()[-2000:]}")
        summary = json.loads((out / f"p{i}of{parts}.err").read_text().splitlines()[-1])
        runs.append({"partition": f"{i}/{parts}", "wall_s": round(wall, 1), "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
                     "peak_rss_mb": round(peak.stop()), **{k: summary.get(k) for k in ("keys", "fetched", "held", "candidates", "pairs")}})
    lines = line_hashes([out / f"p{i}of{parts}.jsonl" for i in range(parts)])
    wall = round(time.perf_counter() - t, 1)
    node1 = node_cpu(es_url)
    node = None if node0 is None or node1 is None else round(node1 - node0, 1)
    return {"parts": parts, "wall_s": wall, "node_cpu_s": node, "runs": runs, "lines": lines}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=200_000)
    ap.add_argument("--es", help="a running node or cluster (else --local)")
    ap.add_argument("--local", action="store_true", help="the embedded store, in a temporary --data-dir")
    ap.add_argument("--parts", default="1,2,4", help="the partition counts to run, e.g. 1,2,4")
    ap.add_argument("--index", default="bench-partitions")
    ap.add_argument("--keep", action="store_true", help="keep the index")
    ap.add_argument("--corpus", choices=("random", "scale"), default="random",
                    help="random texts of common characters, or bench/scale.py's poems with planted variants")
    ap.add_argument("--variants", type=int, default=3, help="--corpus scale: planted near-duplicates a source")
    ap.add_argument("--on-duplicate", choices=("label", "index", "skip"), default="label",
                    help="ingest's --on-duplicate (index: rows only, no labels; the pairs do not depend on them)")
    ap.add_argument("--shards", type=int, help="primaries of the Elasticsearch index (ingest's --shards)")
    ap.add_argument("--replicas", type=int, help="replicas of the Elasticsearch index (ingest's --replicas)")
    ap.add_argument("--whole", help="the output of one `esdedup dups` of the index (an earlier run's), instead of "
                                    "running it again; 'first': no such run, the first partition count's pairs are "
                                    "the reference the others are checked against")
    ap.add_argument("--docs-file", help="the documents to ingest (JSONL, e.g. an earlier bench/scale.py run's "
                                        "--docs-file) instead of making them")
    ap.add_argument("--existing", action="store_true",
                    help="the index is there already (a --keep run's): no documents, no ingest")
    ap.add_argument("--data-dir", help="with --local: the embedded store's folder, kept after the run (with "
                                       "--existing: the store there, as it is)")
    args = ap.parse_args()
    if bool(args.es) == args.local:
        raise SystemExit("give --es URL or --local")
    if args.data_dir and not args.local:
        raise SystemExit("--data-dir names an embedded store: give it with --local")
    tmp = Path(tempfile.mkdtemp(prefix="esdedup-partitions-"))
    data_dir = args.data_dir or str(tmp / "data")
    where = ["--index", args.index, *(["--es", args.es] if args.es else ["--data-dir", data_dir])]
    # An existing index's corpus is whatever built it: not named.
    result: dict[str, object] = {"store": "elasticsearch" if args.es else "embedded",
                                 "corpus": None if args.existing else args.corpus}
    if args.existing:
        if not args.es and not args.data_dir:
            raise SystemExit("--existing needs --es, or --local with --data-dir (a kept embedded store)")
        if args.es:
            from elasticsearch import Elasticsearch
            with Elasticsearch(args.es) as client:
                result["docs"] = client.count(index=args.index)["count"]
        else:
            result["docs"] = open_store(args.index, data_dir=data_dir).count()
    else:
        src = tmp / "docs.jsonl"
        if args.docs_file:
            src = Path(args.docs_file)
            result["corpus"] = f"file {src.name}"
            result["docs"] = scale.read_docs(src).count
        elif args.corpus == "scale":
            result["docs"] = scale.make_docs(args.docs, args.variants, 2, 0, src).count
        else:
            docs = make_docs(args.docs)
            src.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
            result["docs"] = len(docs)
        log(f"ingest: {result['docs']:,} documents")
        layout = ["--on-duplicate", args.on_duplicate, *(["--shards", str(args.shards)] if args.shards else []),
                  *(["--replicas", str(args.replicas)] if args.replicas is not None else [])]
        node0 = node_cpu(args.es)
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "esdedup", "ingest", str(src), *where, *layout], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
        result["ingest_s"] = round(time.perf_counter() - t, 1)
        node1 = node_cpu(args.es)
        result["ingest_node_cpu_s"] = None if node0 is None or node1 is None else round(node1 - node0, 1)
    try:
        whole: np.ndarray | None = None
        if args.whole == "first":
            result["whole"] = {"wall_s": None, "peak_rss_mb": None, "pairs": None}
        elif args.whole:
            whole = line_hashes([Path(args.whole)])
            result["whole"] = {"wall_s": None, "peak_rss_mb": None, "pairs": len(whole)}
        else:
            log("dups (one process, as it chooses)")
            t = time.perf_counter()
            with open(tmp / "whole.jsonl", "wb") as fh:
                proc = subprocess.Popen([sys.executable, "-m", "esdedup", "dups", *where], stdout=fh, cwd=ROOT)
                peak = PeakRss(proc.pid)
                proc.wait()
            whole = line_hashes([tmp / "whole.jsonl"])
            result["whole"] = {"wall_s": round(time.perf_counter() - t, 1), "peak_rss_mb": round(peak.stop()),
                               "pairs": len(whole)}
        rows = []
        for parts in (int(p) for p in args.parts.split(",")):
            log(f"dups in {parts} partitions at once")
            r = run_partitions(where, parts, tmp, args.es)
            lines = r.pop("lines")
            if whole is None:  # --whole first: this count is the reference
                whole = lines
                r["reference"] = True
            r["same_pairs"] = bool(np.array_equal(lines, whole))
            r["repeated"] = len(lines) - len(np.unique(lines))
            rows.append(r)
            log(json.dumps(r))  # each partition count as it ends: a long run stopped later keeps these
        result["partitions"] = rows
    finally:
        if not args.keep:
            if args.es and not args.existing:
                open_store(args.index, es_url=args.es).drop()
            shutil.rmtree(tmp, ignore_errors=True)
    w = result["whole"]
    print(f"| {result['store']}, {result['docs']:,} documents | wall s | CPU s per process | node CPU s | "
          "peak RSS MB per process | pairs | same |")
    print("|---|---|---|---|---|---|---|")
    if w["pairs"] is not None:
        print(f"| dups (one process) | {w['wall_s'] or '-'} | - | - | {w['peak_rss_mb'] or '-'} | {w['pairs']:,} | - |")
    for r in rows:
        rss = ", ".join(str(x["peak_rss_mb"]) for x in r["runs"])
        cpu = ", ".join(str(x["cpu_s"]) for x in r["runs"])
        pairs = sum(x["pairs"] for x in r["runs"])
        node = "-" if r["node_cpu_s"] is None else r["node_cpu_s"]
        same = "yes" if r["same_pairs"] and not r["repeated"] else "NO"
        print(f"| --partition I/{r['parts']} ({r['parts']} at once) | {r['wall_s']} | {cpu} | {node} | {rss} | "
              f"{pairs:,} | {'reference' if r.get('reference') else same} |")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
