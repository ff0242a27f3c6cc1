"""Scale benchmark: N synthetic documents through `esdedup ingest` into one Elasticsearch index, the
index on disk, `esdedup dups` with both LSH joins, and lookups while the index holds N documents.

    python bench/scale.py --docs 1000000                 # starts a local node (scripts/es-local, heap 1 GiB)
    python bench/scale.py --docs 20000 --no-append       # a quick check, about 2 minutes
    python bench/scale.py --docs 1000000 --es URL        # a running cluster (the index is deleted after)
    python bench/scale.py --es URL --index NAME --phases lookups,store-dups,disk   # finish a stopped run
    python bench/scale.py --docs 1000000 --local         # the embedded store instead (a temporary --data-dir)

Phases (``--phases``, default all): synth, ingest, dups, store-dups, lookups, disk. Without synth and ingest
the phases run on an existing index at ``--es`` as it is, and the index is kept. With ``--local`` the same
phases run on the embedded store (no node: no node CPU, heap or merge; store-dups is Elasticsearch's only;
disk is the store's file), in a temporary folder removed after the run.

Phases, each timed on its own, with a progress line on stderr at least every 30 s:

1. Documents: the poems of chinese-poetry under 2,000 characters (bench/corpora.py), shuffled and cut into
   slices; each slice goes to `esdedup.quality.synth.make_benchmark` (what `esdedup synth` runs) for 2,500 sources
   and ``--variants`` planted near-duplicates of each. Slices, because picking mutually distinct sources and
   pairing negatives grow with the square of the sources (10,000 sources take 21 s, 2,500 take 1.6 s), and
   slices run in parallel. Past what the poems give (about 1.1M documents at 3 variants), the corpus of a
   million documents is written as often as needed, as it is and recoded (`recode`: each letter replaced by one of about its
   frequency, ids prefixed ``r<k>-``), so that ten million documents keep the million's near-duplicate structure. JSONL ``{"id", "text"}``; a variant's id is its source's id + ``v<k>``.
2. Ingest: ``python -m esdedup ingest`` as a user runs it (default config and index settings, label mode):
   wall time, CPU of the CLI and its fingerprint workers (``wait4``), node CPU (``_nodes/stats``), node heap.
3. `dups`: ``python -m esdedup dups`` as it chooses (in-memory LSH join below 2M documents) and with
   ``--lsh-join store`` (the partitioned key join that takes over above 2M): wall, CPU, peak RSS, pairs;
   both must give the same pairs.
4. rensa: the same texts through rensa as its users run it (bench/quality.py's `run_rensa`: raw character
   bigrams, `RMinHash`, `RMinHashLSH`, verification), in a process of its own: wall, CPU, peak RSS, pairs,
   and `ingest` + `dups` against it (the speed target of the embedded store at 1M documents).
5. Lookups: ``SimilarFinder.find(doc_id=...)`` (what ``esdedup similar --id`` runs) for ``--lookups`` random
   documents, one at a time: latency percentiles, how many found a near-duplicate, how many found one of
   their planted family.
6. Disk, last (so that `dups` and the lookups meet the index as ingest left it): ``_stats`` after a refresh,
   then after ``_forcemerge`` to one segment, and ``_disk_usage`` per field (dedup.* against the rest).

The section printed (and appended to BENCHMARKS.md unless --no-append) ends with the per-document costs a
100M-document estimate needs (those of the phases run).

Every library module the run uses is imported at its start: a run of hours is not broken by an edit of the
tree meanwhile (the CLI phases still start ``python -m esdedup`` from the tree as it is then).
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import math
import os
import platform
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing import Pool
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import corpora  # noqa: E402
import es as es_bench  # noqa: E402  (bench/es.py: the node and CPU helpers every Elasticsearch bench uses)
from elasticsearch import Elasticsearch, helpers  # noqa: E402

import esdedup.fingerprint.jieba_fast  # noqa: E402, F401  (loaded by the first lookup's fingerprint)
import esdedup.store.elastic.store  # noqa: E402, F401  (loaded by open_store when called)
import esdedup.store.local  # noqa: E402, F401  (likewise)
from esdedup.api import SimilarFinder, open_store  # noqa: E402
from esdedup.quality.synth import SynthOptions, make_benchmark  # noqa: E402
from tests.es_node import LocalCluster  # noqa: E402

#: Sources per call of make_benchmark (its cost grows with the square of this).
SLICE_SOURCES = 2500
#: Poems a slice holds at most, for each source it gives: a small run takes a sample of the shuffled collection
#: rather than all of it (1,000 documents read 311,817 poems for 250 sources). The runs BENCHMARKS.md records,
#: 100,000 documents and more, cut narrower slices than this, so their documents stay the same.
SLICE_POEMS_PER_SOURCE = 16
#: Documents of the corpus `recode` repeats past what the poems give (the million of the 1M runs).
RECODE_BASE = 1_000_000
#: Frequency ranks a recoding (`recode`) permutes letters within.
RECODE_BLOCK = 64
#: Poems longer than this are left out (make_benchmark keeps one length class: every source a "short" one).
MAX_CHARS = 2000
#: Seconds between progress lines of a phase.
BEAT = 30.0
#: The phases, in the order they run (``--phases``).
PHASES = ("synth", "ingest", "dups", "store-dups", "rensa", "lookups", "disk")
#: Ids per page when reading an existing index's ids.
PAGE_IDS = 10_000
_VARIANT = re.compile(r"v\d+$")
#: What `shuffled_ids` puts before an id (`family` drops it).
_SHUFFLED = re.compile(r"^[0-9a-f]{10}:")


def log(msg: str) -> None:
    print(f"[scale {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


@contextmanager
def heartbeat(what: str, extra: Callable[[], str] = lambda: "") -> Iterator[None]:
    """A progress line on stderr every `BEAT` seconds while the block runs."""
    done = threading.Event()
    start = time.perf_counter()

    def beat() -> None:
        while not done.wait(BEAT):
            log(f"{what}: {time.perf_counter() - start:.0f} s{extra()}")

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def family(doc_id: str) -> str:
    return _VARIANT.sub("", _SHUFFLED.sub("", doc_id))


# -- 1. documents ------------------------------------------------------------------------------------------
def _synth_slice(job: tuple[int, list[str], int, int, int]) -> tuple[list[tuple[str, str]], float]:
    """One slice through make_benchmark: its (id, text) rows, ids prefixed by the slice, and the CPU seconds."""
    k, texts, sources, variants, seed = job
    cpu = time.process_time()
    opts = SynthOptions(sources=sources, variants=variants, negatives=0, short_max=MAX_CHARS, long_min=MAX_CHARS,
                        seed=seed)
    bench = make_benchmark(texts, opts)
    return [(f"c{k:03d}-{d['id']}", d["text"]) for d in bench.docs], time.process_time() - cpu


@dataclass
class Docs:
    path: Path
    count: int
    sources: int
    mb: float
    wall: float
    cpu: float
    ids: list[str] = field(repr=False, default_factory=list)


def make_docs(n: int, variants: int, workers: int, seed: int, path: Path) -> Docs:
    """``n`` documents into ``path``: sources drawn from the poems, with planted variants. Past what the poems
    give (about 1.1M documents at 3 variants), the corpus of `RECODE_BASE` documents is written as often as
    needed (`recode`)."""
    t, cpu0 = time.perf_counter(), time.process_time()
    poems = [p["text"] for p in corpora.poems() if len(p["text"]) < MAX_CHARS]
    random.Random(seed).shuffle(poems)
    rounds = 1 if _slicing(n, variants, len(poems)) else math.ceil(n / RECODE_BASE)
    if rounds == 1:
        ids, cpu = _synth_docs(n, variants, workers, seed, poems, path)
    else:
        base = path.with_name(f"{path.name}.base")
        try:
            _, cpu = _synth_docs(math.ceil(n / rounds), variants, workers, seed, poems, base)
            ids = recode(base, rounds, n, seed, path)
        finally:
            base.unlink(missing_ok=True)
    if len(ids) < n:
        log(f"warning: the slices gave {len(ids):,} documents, not {n:,} (sources rejected as too alike)")
    return Docs(path, len(ids), len({family(i) for i in ids}), path.stat().st_size / 1e6,
                time.perf_counter() - t, cpu + time.process_time() - cpu0, ids)


def _slicing(n: int, variants: int, poems: int) -> tuple[int, int, int, int] | None:
    """Sources, slices, sources a slice and poems a slice for ``n`` documents; None when the poems are too few."""
    sources = math.ceil(n / (variants + 1))
    slices = math.ceil(sources / SLICE_SOURCES)
    per_slice = math.ceil(sources / slices)
    width = min(poems // slices, SLICE_POEMS_PER_SOURCE * per_slice)
    return None if width < per_slice * 1.1 else (sources, slices, per_slice, width)


def _synth_docs(n: int, variants: int, workers: int, seed: int, poems: list[str],
                path: Path) -> tuple[list[str], float]:
    """Phase 1 for ``n`` documents the poems can give, written to ``path``: their ids, and the CPU seconds of
    the processes that made them."""
    slicing = _slicing(n, variants, len(poems))
    assert slicing is not None
    sources, slices, per_slice, width = slicing
    jobs = [(k, poems[k * width:(k + 1) * width], per_slice, variants, seed + k) for k in range(slices)]
    log(f"documents: {n:,} from {sources:,} sources in {slices} slices of {width:,} poems ({workers} processes)")
    ids: list[str] = []
    cpu, last = 0.0, time.perf_counter()
    with open(path, "w", encoding="utf-8") as fh, Pool(workers) as pool:
        for k, (rows, slice_cpu) in enumerate(pool.imap(_synth_slice, jobs)):
            cpu += slice_cpu
            for doc_id, text in rows[:n - len(ids)]:
                fh.write(json.dumps({"id": doc_id, "text": text}, ensure_ascii=False) + "\n")
                ids.append(doc_id)
            if time.perf_counter() - last >= BEAT:
                last = time.perf_counter()
                log(f"documents: {k + 1}/{slices} slices, {len(ids):,} documents")
    return ids, cpu


def recode(base: Path, rounds: int, n: int, seed: int, path: Path) -> list[str]:
    """The documents of ``base`` written ``rounds`` times into ``path`` (the first ``n``): as they are, then in
    recodings, recoding r with its ids prefixed ``r<r>-`` and every letter of its texts replaced by another of
    about the same frequency in ``base`` (a fixed permutation within each block of `RECODE_BLOCK` frequency
    ranks; punctuation kept). A recoding maps bigrams one to one, so its documents pair among themselves exactly
    as the base's do under the n-gram rule, and share no more n-grams with another round's than unrelated texts
    do: a corpus ``rounds`` times as large with the base's near-duplicate structure, its sources still
    mutually distinct. Returns the ids written."""
    with open(base, encoding="utf-8") as fh:
        docs = [json.loads(line) for line in fh if line.strip()]
    freq: dict[str, int] = {}
    for d in docs:
        for ch in d["text"]:
            if ch.isalnum():
                freq[ch] = freq.get(ch, 0) + 1
    ranked = sorted(freq, key=lambda ch: (-freq[ch], ch))
    ids: list[str] = []
    with open(path, "w", encoding="utf-8") as out:
        for r in range(rounds):
            table: dict[int, str] = {}
            rng = random.Random(f"recode-{seed}-{r}")
            for b in range(0, len(ranked), RECODE_BLOCK) if r else ():
                block = ranked[b:b + RECODE_BLOCK]
                moved = rng.sample(block, len(block))
                table.update((ord(a), z) for a, z in zip(block, moved, strict=True))
            prefix = f"r{r}-" if r else ""
            for d in docs[:n - len(ids)]:
                doc_id = prefix + d["id"]
                out.write(json.dumps({"id": doc_id, "text": d["text"].translate(table)}, ensure_ascii=False) + "\n")
                ids.append(doc_id)
            log(f"documents: round {r + 1}/{rounds}, {len(ids):,} documents")
    return ids


def read_docs(path: Path) -> Docs:
    """A documents file an earlier run wrote (``--docs-file``: the same seed and count give the same file)."""
    with open(path, encoding="utf-8") as fh:
        ids = [json.loads(line)["id"] for line in fh if line.strip()]
    return Docs(path, len(ids), len({family(i) for i in ids}), path.stat().st_size / 1e6, 0.0, 0.0, ids)


def shuffled_ids(docs: Docs, path: Path) -> Docs:
    """``docs`` written to ``path`` in the same order, each id after 10 hex digits of its own hash and a colon
    (``--shuffled-ids``): ids in no relation to the order they come in, as URLs and content hashes are. The
    synthetic ids follow the file's order, which suits the stores' id indexes more than real ids do."""
    ids: list[str] = []
    with open(docs.path, encoding="utf-8") as src, open(path, "w", encoding="utf-8") as out:
        for line in src:
            if line.strip():
                doc = json.loads(line)
                doc["id"] = f"{hashlib.blake2b(doc['id'].encode(), digest_size=5).hexdigest()}:{doc['id']}"
                ids.append(doc["id"])
                out.write(json.dumps(doc, ensure_ascii=False) + "\n")
    return Docs(path, len(ids), docs.sources, path.stat().st_size / 1e6, docs.wall, docs.cpu, ids)


# -- child processes (the CLI) -----------------------------------------------------------------------------
@dataclass
class Run:
    wall: float
    cpu: float  # the CLI process and the children it waited for (fingerprint workers)
    node_cpu: float | None  # None: the embedded store (no node)
    peak_rss_mb: float  # the CLI process itself (polled: a peak in its last 0.2 s is missed)
    out: Path


def _status_mb(pid: int, key: str) -> float | None:
    """``VmRSS`` or ``VmHWM`` (peak RSS since exec) of a live process, in MB; None once it has gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


class PeakRss:
    """A process's peak RSS, read from ``/proc`` every 0.2 s while it lives. Not ``wait4``'s ``ru_maxrss``:
    the kernel carries the forking parent's high-water mark into the child across exec, so a child of
    this (large) process would report at least this process's RSS."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak = pid, 0.0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._done.wait(0.2):
            hwm = _status_mb(self.pid, "VmHWM")
            if hwm is not None:
                self.peak = max(self.peak, hwm)

    def stop(self) -> float:
        self._done.set()
        self._thread.join()
        return self.peak


def run_cli(es: Elasticsearch | None, argv: list[str], what: str, out: Path, run_window: int | None = None) -> Run:
    """``python -m esdedup ARGV``, stdout to ``out``, stderr (its own progress lines) passed through;
    ``run_window``: with `esdedup.ingest.run.RUN_INDEX_MAX_DOCS` set to it (a knob of this bench, not of the CLI)."""
    cmd = [sys.executable, "-m", "esdedup", *argv] if run_window is None else [
        sys.executable, "-c", f"import runpy, esdedup.ingest.run as m; m.RUN_INDEX_MAX_DOCS = {run_window}; "
        "runpy.run_module('esdedup', run_name='__main__')", *argv]
    return run_process(es, cmd, what, out)


#: rensa as its users run it (bench/quality.py's `run_rensa`), in a process of its own: its pairs and clock.
RENSA = ("import json, sys; from pathlib import Path; sys.path.insert(0, 'bench'); from quality import run_rensa; "
         "pairs, stats = run_rensa(Path(sys.argv[1])); print(json.dumps({**stats, 'pairs': len(pairs)}))")


def run_process(es: Elasticsearch | None, cmd: list[str], what: str, out: Path) -> Run:
    """``cmd`` from the repository's root, stdout to ``out``: its wall, CPU (``wait4``), node CPU, peak RSS."""
    log(f"{what}: {' '.join(cmd)}")
    node0, t = node_cpu(es), time.perf_counter()
    with open(out, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, cwd=ROOT)
        peak = PeakRss(proc.pid)
        with heartbeat(what, lambda: f", CLI RSS {_status_mb(proc.pid, 'VmRSS') or 0:,.0f} MB"):
            _, status, usage = os.wait4(proc.pid, 0)
        peak_mb = peak.stop()
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t
    if es is not None:
        time.sleep(1.1)  # the node refreshes its CPU figure about once a second
    if proc.returncode != 0:
        raise SystemExit(f"{what} failed with exit code {proc.returncode}; its output: {out}")
    return Run(wall, usage.ru_utime + usage.ru_stime, None if es is None else node_cpu(es) - node0, peak_mb, out)


def node_cpu(es: Elasticsearch | None) -> float:
    """The node's CPU seconds so far (0 for the embedded store, which has no node; `Run` says None)."""
    return 0.0 if es is None else es_bench.node_cpu_seconds(es)


def node_s(run: Run) -> str:
    """A run's node CPU seconds for a table ("-" without a node)."""
    return "-" if run.node_cpu is None else f"{run.node_cpu:.1f}"


def ingest_summary(out: Path) -> dict[str, int]:
    text = out.read_text("utf-8")
    m = re.search(r"read (\d+) = indexed (\d+) .*\+ skipped (\d+) \+ failed (\d+)", text)
    d = re.search(r"near-duplicates found: (\d+)", text)
    if not m or not d:
        raise SystemExit(f"no ingest summary in {out}:\n{text[-2000:]}")
    return {"read": int(m[1]), "indexed": int(m[2]), "skipped": int(m[3]), "failed": int(m[4]),
            "duplicates": int(d[1])}


def read_pairs(out: Path) -> dict[tuple[str, str], int]:
    """(a, b) -> CRC-32 of the pair's measures, for every pair `dups` printed."""
    pairs = {}
    with open(out, encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("{"):
                p = json.loads(line)
                pairs[(p["a"], p["b"])] = zlib.crc32(line.encode())
    return pairs


# -- Elasticsearch figures ---------------------------------------------------------------------------------
def index_stats(es: Elasticsearch, index: str) -> dict[str, int]:
    s = es.indices.stats(index=index, metric="store,segments,docs")["_all"]["primaries"]
    return {"bytes": s["store"]["size_in_bytes"], "segments": s["segments"]["count"], "docs": s["docs"]["count"],
            "segments_memory": s["segments"].get("memory_in_bytes", 0)}


def node_memory(es: Elasticsearch) -> dict[str, int]:
    nodes = es.nodes.stats(metric="jvm")["nodes"].values()
    return {"heap_used": sum(n["jvm"]["mem"]["heap_used_in_bytes"] for n in nodes),
            "heap_max": sum(n["jvm"]["mem"]["heap_max_in_bytes"] for n in nodes)}


def disk_usage(es: Elasticsearch, index: str) -> dict[str, int]:
    """Bytes on disk by group of fields (`_disk_usage`, every segment read: slow on big indexes)."""
    resp = es.options(request_timeout=7200).indices.disk_usage(index=index, run_expensive_tasks=True)
    fields = resp[index]["fields"]
    groups = {"dedup.*": 0, "_source": 0, "_id": 0, "other fields": 0}
    for name, f in fields.items():
        group = "dedup.*" if name.startswith("dedup.") else name if name in groups else "other fields"
        groups[group] += int(f["total_in_bytes"])
    groups["index total"] = int(resp[index]["store_size_in_bytes"])
    return groups


def dedup_share_of_source(es: Elasticsearch, index: str, n: int = 500) -> float:
    """The share of the JSON of ``_source`` that is the ``dedup`` object (uncompressed, a random sample)."""
    resp = es.search(index=index, size=n, query={"function_score": {"random_score": {"seed": 1, "field": "_seq_no"}}})
    total = dedup = 0
    for h in resp["hits"]["hits"]:
        src = h["_source"]
        total += len(json.dumps(src, ensure_ascii=False).encode())
        dedup += len(json.dumps(src.get("dedup", {}), ensure_ascii=False).encode())
    return dedup / total if total else 0.0


# -- lookups -----------------------------------------------------------------------------------------------
def lookups(where: dict[str, Any], index: str, ids: list[str], n: int, seed: int) -> dict[str, Any]:
    """``where``: `open_store`'s ``es_url`` or ``data_dir``."""
    finder = SimilarFinder(open_store(index, **where))
    # From the ids sorted: the same sample whether they come from synth or from an existing index.
    sample = random.Random(seed).sample(sorted(ids), min(n, len(ids)))
    # Apart: the first fingerprint loads the tokenizer's dictionary, and on the embedded store the first lookup
    # indexes the keys an ingest left to it.
    t0 = time.perf_counter()
    with heartbeat("the first lookup"):
        finder.find(text="床前明月光，疑是地上霜。")
    first = time.perf_counter() - t0
    ms: list[float] = []
    found = in_family = 0
    t = time.perf_counter()
    with heartbeat("lookups", lambda: f", {len(ms)}/{len(sample)} done"):
        for doc_id in sample:
            t0 = time.perf_counter()
            matches = finder.find(doc_id=doc_id).matches
            ms.append((time.perf_counter() - t0) * 1000)
            found += bool(matches)
            in_family += any(family(m["id"]) == family(doc_id) for m in matches)
    return {"n": len(sample), "first": first, "wall": time.perf_counter() - t, "found": found, "in_family": in_family,
            "p50": es_bench.pct(ms, 50), "p95": es_bench.pct(ms, 95), "p99": es_bench.pct(ms, 99),
            "max": max(ms)}


# -- the run -----------------------------------------------------------------------------------------------
def start_node(args: argparse.Namespace):
    """(local cluster or None, URL), as bench/es.py gets them; with --keep a started node outlives the run."""
    if args.heap:
        os.environ["ESDEDUP_ES_HEAP"] = args.heap
    if args.keep and args.es is None:
        cluster = LocalCluster(nodes=1, watch=False)
        cluster.start()
        return cluster, cluster.url
    return es_bench.node(args.es)


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--es", help="a running cluster (default: start a local node with scripts/es-local)")
    ap.add_argument("--local", action="store_true", help="the embedded store (a temporary --data-dir), no node")
    ap.add_argument("--lookups", type=int, default=1000)
    ap.add_argument("--variants", type=int, default=3, help="planted near-duplicates per source")
    ap.add_argument("--workers", type=int, default=0,
                    help="ingest's --workers and the document generator's processes (0: one per CPU)")
    ap.add_argument("--heap", help="heap of the node started here (default 1g, scripts/es-local)")
    ap.add_argument("--index", default="bench-scale")
    ap.add_argument("--phases", default=",".join(PHASES),
                    help=f"the phases to run, comma-separated, of {', '.join(PHASES)} (default all); without "
                    "synth and ingest, on the existing index --index at --es, which is kept")
    ap.add_argument("--skip-store-dups", action="store_true", help="leave out `dups --lsh-join store` (the phase "
                    "store-dups)")
    ap.add_argument("--keep", action="store_true", help="keep the index (and the node started here)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shuffled-ids", action="store_true",
                    help="each id after a hash of itself, so that ids are in no relation to the order written")
    ap.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"))
    ap.add_argument("--no-append", action="store_true")
    ap.add_argument("--docs-file", help="the documents of an earlier run (JSONL) instead of making them: "
                                        "synth is skipped")
    ap.add_argument("--run-window", type=int, help="ingest's run index window (esdedup.ingest.run.RUN_INDEX_MAX_DOCS)")
    args = ap.parse_args()
    asked = [p.strip() for p in args.phases.split(",") if p.strip()]
    unknown = sorted(set(asked) - set(PHASES))
    if unknown or not asked:
        ap.error(f"--phases takes some of {', '.join(PHASES)}, got {args.phases!r}")
    args.phases = [p for p in PHASES if p in asked and not (p == "store-dups" and args.skip_store_dups)]
    if ("synth" in args.phases) != ("ingest" in args.phases):
        ap.error("--phases: synth and ingest go together (a new index), or neither (an existing one)")
    if args.local and args.es:
        ap.error("--local and --es name two stores: give one")
    if args.local:
        if "ingest" not in args.phases:
            ap.error("--local makes a new store: its phases include synth and ingest")
        args.phases = [p for p in args.phases if p != "store-dups"]  # Elasticsearch's join only
    elif "ingest" not in args.phases and args.es is None:
        ap.error("--phases without ingest works on an existing index: name its cluster with --es")
    return args


def index_ids(es: Elasticsearch, index: str) -> list[str]:
    """Every document id of an existing index (for lookups and the planted family counts)."""
    if not es.indices.exists(index=index):
        raise SystemExit(f"index {index!r} does not exist: run the phases synth and ingest first")
    t = time.perf_counter()
    ids: list[str] = []
    with heartbeat("reading the index's ids", lambda: f", {len(ids):,} read"):
        ids += (h["_id"] for h in helpers.scan(es, index=index, query={"query": {"match_all": {}}, "_source": False},
                                               size=PAGE_IDS))
    log(f"ids: {len(ids):,} of index {index!r} in {time.perf_counter() - t:.1f} s")
    return ids


def main() -> None:
    args = parse_args()
    load0, started = os.getloadavg(), datetime.datetime.now(datetime.timezone.utc)
    tmp = Path(tempfile.mkdtemp(prefix="esdedup-scale-"))
    cluster, url = (None, None) if args.local else start_node(args)
    es = None if url is None else Elasticsearch(url, request_timeout=600)
    fresh = "ingest" in args.phases  # else the phases run on the index as it is, and it is kept
    res: dict[str, Any] = {}
    try:
        res["version"] = ("" if es is None else
                          ", ".join(sorted({n["version"] for n in es.nodes.info()["nodes"].values()})))
        if fresh and es is not None:
            es.options(ignore_status=404).indices.delete(index=args.index)
        if fresh and args.docs_file:
            docs = read_docs(Path(args.docs_file))
        elif fresh:
            docs = make_docs(args.docs, args.variants, args.workers or os.cpu_count() or 2, args.seed,
                             tmp / "docs.jsonl")
            log(f"documents: {docs.count:,} ({docs.mb:.1f} MB) in {docs.wall:.1f} s")
        if fresh:
            if args.shuffled_ids:
                docs = shuffled_ids(docs, tmp / "docs-shuffled-ids.jsonl")
            res["docs"], ids = docs, docs.ids
        else:
            assert es is not None
            ids = index_ids(es, args.index)
        res |= measure(es, url, args, ids, res.get("docs"), tmp)
    finally:
        if fresh and not args.keep and es is not None:
            es.options(ignore_status=404).indices.delete(index=args.index)
        if args.local:
            shutil.rmtree(tmp, ignore_errors=True)
        if cluster is not None and not args.keep:
            cluster.stop()
        elif cluster is not None:
            log(f"node kept at {url}: ESDEDUP_ES_STATE={cluster.state_dir} scripts/es-local stop --purge "
                f"--name {cluster.name}")
    res["load"] = (load0, os.getloadavg())
    res["started"] = started
    res["n"] = len(ids)
    section = report(args, res)
    print(section)
    if not args.no_append:
        with open(args.out, "a", encoding="utf-8") as fh:
            fh.write(section)


def measure(es: Elasticsearch | None, url: str | None, args: argparse.Namespace, ids: list[str], docs: Docs | None,
            tmp: Path) -> dict[str, Any]:
    """The phases after synth (``docs``: what it wrote, None when the index exists already); ``es`` None: the
    embedded store in ``tmp/store``."""
    res: dict[str, Any] = {}
    data_dir = tmp / "store"
    where = ["--index", args.index, *(["--data-dir", str(data_dir)] if es is None else ["--es", str(url)])]
    workers = ["--workers", str(args.workers)] if args.workers else []
    if docs is not None:
        ingest = run_cli(es, ["ingest", str(docs.path), *where, "--dead-letter", str(tmp / "dead.jsonl"),
                              "--checkpoint", str(tmp / "checkpoint.json"), *workers], "ingest", tmp / "ingest.out",
                         args.run_window)
        res["ingest"], res["summary"] = ingest, ingest_summary(ingest.out)
        if res["summary"]["indexed"] != docs.count:
            raise SystemExit(f"ingest indexed {res['summary']} of {docs.count}")
    if es is None:
        res["first_stats"] = local_stats(data_dir)
    else:
        es.indices.refresh(index=args.index)
        res["first_stats"], res["heap"] = index_stats(es, args.index), node_memory(es)

    memory_pairs = None
    if "dups" in args.phases:
        res["dups"] = run_cli(es, ["dups", *where], "dups (auto: memory join)", tmp / "dups-memory.jsonl")
        memory_pairs = read_pairs(res["dups"].out)
        res["pairs"] = pair_counts(memory_pairs, ids)
    if "store-dups" in args.phases:
        res["dups_store"] = run_cli(es, ["dups", *where, "--lsh-join", "store"], "dups (store join)",
                                    tmp / "dups-store.jsonl")
        store_pairs = read_pairs(res["dups_store"].out)
        res["store_pairs"] = pair_counts(store_pairs, ids)
        if memory_pairs is not None:
            res["store_diff"] = {"only memory": len(memory_pairs.keys() - store_pairs.keys()),
                                 "only store": len(store_pairs.keys() - memory_pairs.keys()),
                                 "measures differ": sum(1 for k, v in store_pairs.items()
                                                        if k in memory_pairs and memory_pairs[k] != v)}
        del store_pairs
    del memory_pairs
    if "rensa" in args.phases and docs is not None:
        res["rensa"] = run_process(None, [sys.executable, "-c", RENSA, str(docs.path)], "rensa (same texts)",
                                   tmp / "rensa.json")
        res["rensa_result"] = json.loads(res["rensa"].out.read_text())
    if "lookups" in args.phases:
        res["lookups"] = lookups({"data_dir": data_dir} if es is None else {"es_url": url}, args.index, ids,
                                 args.lookups, args.seed)

    if "disk" in args.phases and es is None:
        res["after_lookups"] = local_stats(data_dir)
    elif "disk" in args.phases:
        log("force merge to one segment")
        node0, t = es_bench.node_cpu_seconds(es), time.perf_counter()
        with heartbeat("force merge"):
            es.options(request_timeout=7200).indices.forcemerge(index=args.index, max_num_segments=1)
        es.indices.refresh(index=args.index)
        res["merge"] = (time.perf_counter() - t, es_bench.node_cpu_seconds(es) - node0)
        res["after_merge"], res["heap_merge"] = index_stats(es, args.index), node_memory(es)
        log("disk usage per field")
        t = time.perf_counter()
        with heartbeat("disk usage"):
            res["disk"] = disk_usage(es, args.index)
        res["disk_wall"] = time.perf_counter() - t
        res["source_share"] = dedup_share_of_source(es, args.index)
    return res


def local_stats(data_dir: Path) -> dict[str, int]:
    """The embedded store's files as `index_stats` gives an index's (their bytes; one "segment" a file)."""
    files = [f for f in data_dir.rglob("*") if f.is_file()]
    return {"bytes": sum(f.stat().st_size for f in files), "segments": len(files), "docs": 0, "segments_memory": 0}


def pair_counts(pairs: dict[tuple[str, str], int], ids: list[str]) -> dict[str, int]:
    """Pairs within a planted family (a source and its variants) against the family pairs there are."""
    sizes: dict[str, int] = {}
    for i in ids:
        sizes[family(i)] = sizes.get(family(i), 0) + 1
    planted = sum(s * (s - 1) // 2 for s in sizes.values())
    within = sum(1 for a, b in pairs if family(a) == family(b))
    return {"pairs": len(pairs), "within family": within, "family pairs": planted, "across": len(pairs) - within}


# -- the report --------------------------------------------------------------------------------------------
def machine() -> str:
    mem = next((int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                if line.startswith("MemTotal:")), 0)
    return f"{platform.machine()}, {os.cpu_count()} cores, {mem / 2**20:.0f} GiB, Python {platform.python_version()}"


def report(args: argparse.Namespace, r: dict[str, Any]) -> str:
    """The BENCHMARKS.md section: a row per phase run, the index on disk, the per-document costs."""
    n = r["n"]
    cmd = "python bench/scale.py " + " ".join(sys.argv[1:])
    (l1, l5, l15), (e1, e5, e15) = r["load"]
    heap = r.get("heap")
    store = ("the embedded store (a new folder)" if heap is None else
             f"Elasticsearch {r['version']} {'at --es' if args.es else 'single node started here'} (heap "
             f"{heap['heap_max'] / 2**30:.1f} GiB), index settings as `esdedup ingest` makes them")
    lines = [
        "", "## Scale (bench/scale.py)", "",
        f"`{cmd.strip()}` — {r['started'].strftime('%Y-%m-%d %H:%M UTC')}, {machine()}; {store}, default "
        f"config, label mode. Load average at start {l1:.2f} {l5:.2f} {l15:.2f}, at end {e1:.2f} {e5:.2f} {e15:.2f}."]
    docs: Docs | None = r.get("docs")
    if docs is not None:
        lines.append(
            f"Documents: {n:,} ({docs.mb:.0f} MB JSONL) from {docs.sources:,} poems of chinese-poetry "
            f"{corpora.POETRY_VERSION} under {MAX_CHARS:,} characters and {args.variants} planted variants of each "
            f"(`esdedup.quality.synth.make_benchmark`, slices of {SLICE_SOURCES:,} sources); `dups` and lookups ran on the "
            "index as ingest left it, the force merge last.")
    else:
        lines.append(f"Documents: the {n:,} of the existing index `{args.index}` as found; phases "
                     f"{', '.join(args.phases)} only (no synth, no ingest here).")
    lines += ["", "| phase | wall s | CPU s client | CPU s node | notes |", "| --- | ---: | ---: | ---: | --- |"]
    if docs is not None:
        ing: Run = r["ingest"]
        s = r["summary"]
        made = (f"| documents (synth, not part of ingest) | {docs.wall:.1f} | {docs.cpu:.1f} | - | {n:,} documents |"
                if not args.docs_file else f"| documents (an earlier run's, `--docs-file`) | - | - | - | {n:,} documents |")
        if args.shuffled_ids:
            made = made[:-2] + ", ids shuffled (`--shuffled-ids`) |"
        lines += [
            made,
            f"| `esdedup ingest` | {ing.wall:.1f} | {ing.cpu:.1f} | {node_s(ing)} | {n / ing.wall:,.0f} docs/s; "
            f"{s['duplicates']:,} near-duplicates labelled, {s['skipped']} skipped, {s['failed']} failed; CLI peak "
            f"RSS {ing.peak_rss_mb:,.0f} MB |"]
    if "dups" in r:
        p = r["pairs"]
        dups: Run = r["dups"]
        lines.append(f"| `esdedup dups` (auto: LSH joined in memory) | {dups.wall:.1f} | {dups.cpu:.1f} | "
                     f"{node_s(dups)} | {_pairs_note(p)}; peak RSS {dups.peak_rss_mb:,.0f} MB |")
    if "dups_store" in r:
        st: Run = r["dups_store"]
        same = _pairs_note(r["store_pairs"])
        if "store_diff" in r:
            d = r["store_diff"]
            same += ("; the same pairs and measures as in memory" if not any(d.values())
                     else f"; DIFFERENT: {d['only memory']} only in memory, {d['only store']} only in store, "
                          f"{d['measures differ']} with other measures")
        lines.append(f"| `esdedup dups --lsh-join store` (partitioned terms aggregations) | {st.wall:.1f} | {st.cpu:.1f} | "
                     f"{st.node_cpu:.1f} | {same}; peak RSS {st.peak_rss_mb:,.0f} MB |")
    if "rensa" in r:
        rn: Run = r["rensa"]
        got = r["rensa_result"]
        lines.append(f"| rensa, the same texts as its users run it (bench/quality.py's `run_rensa`) | {rn.wall:.1f} | "
                     f"{rn.cpu:.1f} | - | {got['pairs']:,} pairs; its own clock {got['wall_s']:.1f} s; peak RSS "
                     f"{rn.peak_rss_mb:,.0f} MB |")
        if "ingest" in r and "dups" in r:
            ours = r["ingest"].wall + r["dups"].wall
            lines.append(f"| `esdedup ingest` + `esdedup dups` against rensa | {ours:.1f} | "
                         f"{r['ingest'].cpu + r['dups'].cpu:.1f} | - | {ours / rn.wall:.2f}x rensa's wall, "
                         f"{(r['ingest'].cpu + r['dups'].cpu) / rn.cpu:.2f}x its CPU |")
    if "lookups" in r:
        lk = r["lookups"]
        lines.append(f"| {lk['n']:,} lookups (`SimilarFinder.find(doc_id=)`) | {lk['wall']:.1f} | - | - | "
                     f"p50 {lk['p50']:.1f} ms, p95 {lk['p95']:.1f} ms, p99 {lk['p99']:.1f} ms, max {lk['max']:.0f} ms; "
                     f"{lk['found']:,} found a near-duplicate, {lk['in_family']:,} one of their planted family; "
                     f"the first lookup before them {lk['first']:.1f} s |")
    a = r["first_stats"]
    when = "after ingest + refresh" if docs is not None else "as found + refresh"
    parts = "files" if heap is None else "segments"
    disk_rows = [f"| {when} | {a['bytes'] / 1e6:,.1f} | {a['bytes'] / n:,.0f} | {a['segments']} {parts} |"]
    if "after_lookups" in r:
        b = r["after_lookups"]
        disk_rows.append(f"| after `dups` and the lookups (they index the keys ingest left) | {b['bytes'] / 1e6:,.1f} | "
                         f"{b['bytes'] / n:,.0f} | {b['segments']} files |")
    if "disk" in r:
        mw, mcpu = r["merge"]
        lines.append(f"| `_forcemerge` to 1 segment | {mw:.1f} | - | {mcpu:.1f} | |")
        lines.append(f"| `_disk_usage` (run_expensive_tasks) | {r['disk_wall']:.1f} | - | - | |")
        m, disk = r["after_merge"], r["disk"]
        disk_rows.append(f"| after force merge | {m['bytes'] / 1e6:,.1f} | {m['bytes'] / n:,.0f} | "
                         f"{m['segments']} segment(s) |")
        for group in ("dedup.*", "_source", "_id", "other fields"):
            note = (f"the dedup object is {r['source_share']:.0%} of its JSON (uncompressed, 500 sampled)"
                    if group == "_source" else "indexed terms, doc values, points" if group == "dedup.*" else "")
            disk_rows.append(f"| {group} (`_disk_usage`) | {disk[group] / 1e6:,.1f} | {disk[group] / n:,.0f} | {note} |")
    lines += ["", "| on disk (primaries) | MB | bytes/doc | notes |", "| --- | ---: | ---: | --- |", *disk_rows]
    lines += ["", "Per-document costs (for the 100M estimate):", "",
              "| cost | per document | x 100M |", "| --- | ---: | ---: |"]
    lines += [f"| {what} | {per} | {scaled} |" for what, per, scaled in per_doc(r, n)]
    return "\n".join(lines) + "\n"


def _pairs_note(p: dict[str, int]) -> str:
    return (f"{p['pairs']:,} pairs ({p['within family']:,} of the {p['family pairs']:,} planted family pairs, "
            f"{p['across']:,} across families)")


def per_doc(r: dict[str, Any], n: int) -> list[tuple[str, str, str]]:
    """The costs of the phases run, per document and times 100M."""
    scale = 1e8 / n
    rows = []
    if "ingest" in r:
        ing = r["ingest"]
        rows += [
            ("ingest CPU, client (CLI + workers)", f"{ing.cpu / n * 1e6:,.0f} µs", f"{ing.cpu * scale / 3600:,.0f} CPU h"),
            *([] if ing.node_cpu is None else [
                ("ingest CPU, node", f"{ing.node_cpu / n * 1e6:,.0f} µs", f"{ing.node_cpu * scale / 3600:,.0f} CPU h")]),
            ("ingest wall on this machine", f"{ing.wall / n * 1e6:,.0f} µs", f"{ing.wall * scale / 3600:,.1f} h"),
            # Bounded since the run index is capped (esdedup.ingest.run.RUN_INDEX_MAX_DOCS): the total, not x 100M.
            ("ingest CLI peak RSS (bounded: total, not linear in N)",
             f"{ing.peak_rss_mb * 2**20 / n:,.0f} B", f"{ing.peak_rss_mb:,.0f} MB total at {n:,} docs")]
    if "after_lookups" in r:
        b = r["after_lookups"]
        rows.append(("disk, the store's files", f"{b['bytes'] / n:,.0f} B", f"{b['bytes'] * scale / 1e9:,.0f} GB"))
    if "disk" in r:
        m = r["after_merge"]
        rows += [("disk, one segment (primaries)", f"{m['bytes'] / n:,.0f} B", f"{m['bytes'] * scale / 1e9:,.0f} GB"),
                 ("disk, dedup.* fields", f"{r['disk']['dedup.*'] / n:,.0f} B",
                  f"{r['disk']['dedup.*'] * scale / 1e9:,.0f} GB")]
    if "dups" in r:
        dups = r["dups"]
        rows += [("`dups` memory join: peak RSS", f"{dups.peak_rss_mb * 2**20 / n:,.0f} B",
                  f"{dups.peak_rss_mb * 2**20 * scale / 2**30:,.0f} GiB"),
                 ("`dups` memory join: wall", f"{dups.wall / n * 1e6:,.0f} µs", f"{dups.wall * scale / 3600:,.1f} h")]
    if "dups_store" in r:
        st = r["dups_store"]
        rows += [("`dups` store join: wall", f"{st.wall / n * 1e6:,.0f} µs", f"{st.wall * scale / 3600:,.1f} h"),
                 ("`dups` store join: node CPU", f"{st.node_cpu / n * 1e6:,.0f} µs",
                  f"{st.node_cpu * scale / 3600:,.1f} CPU h"),
                 ("`dups` store join: peak RSS (not linear in N)", f"{st.peak_rss_mb:,.0f} MB total", "")]
    heap = r.get("heap")
    when = "after ingest" if "ingest" in r else "as found"
    if heap is not None:
        rows += [(f"node heap used {when} (of {heap['heap_max'] / 2**20:,.0f} MB; GC-dependent)",
                  f"{heap['heap_used'] / n:,.0f} B", f"{heap['heap_used'] / 2**20:,.0f} MB at {n:,} docs")]
    if "disk" in r and r["after_merge"]["segments_memory"]:
        rows.append(("segments memory (`_stats`)", f"{r['after_merge']['segments_memory'] / n:,.1f} B", ""))
    return rows

if __name__ == "__main__":
    main()
