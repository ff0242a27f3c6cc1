"""Where the main process's CPU goes in `esdedup ingest` into the embedded store: the run's steps timed one by one.

    python bench/local_phases.py                          # the 100,706 Tang texts (bench/quality.py --corpus tang)
    python bench/local_phases.py --rounds 3 --input F.jsonl
    python bench/local_phases.py --docs 30000             # poems of the generated corpus (bench/corpora.py)

The steps of the run are wrapped (each call's thread CPU time, `time.thread_time`, summed per step; a step
that calls another counts it too, so the rows overlap) and one ingest of the input, with every default (the
CLI's: default config, label mode, one worker a core), runs into a fresh embedded store. Printed: the wall
time, the CPU of the main thread, of this process (its other threads: the worker pool's, which unpickle the
batches, the store's checkpointer and the extension's writer of rows) and of the fingerprint workers, each a
text, then each step's main-thread CPU a text. With ``--rounds`` the round whose main thread took least is printed (the machine may be shared).
"""
from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import corpora  # noqa: E402
from steps import cpu, install, spent  # noqa: E402

import esdedup.ingest.doccolumns as doccolumns  # noqa: E402
import esdedup.ingest.driver as driver  # noqa: E402
import esdedup.ingest.labels as labels  # noqa: E402
import esdedup.ingest.run as run  # noqa: E402
import esdedup.ingest.runindex as runindex  # noqa: E402
import esdedup.ingest.workers as workers  # noqa: E402
import esdedup.store.local.store as local_store  # noqa: E402
from esdedup.ingest import IngestOptions, ingest  # noqa: E402
from esdedup.store.local import LocalStore  # noqa: E402

STEPS = [
    (run, "batches", "reading records into batches", True),
    (workers.Workers, "_submit", "handing batches to the workers", False),
    (workers.Fingerprinted, "fingerprints", "fingerprints unpacked from the workers' columns", False),
    (driver.IngestRun, "_accept", "records accepted (ids, counts)", False),
    (labels, "run_key_lists", "run keys of the batch", False),
    (labels.BatchCandidates, "__init__", "candidates in the run's memory and the rule's verdicts (all)", False),
    (runindex.RunIndex, "lookup_positions", "... run index looked up (positions)", False),
    (runindex.RunIndex, "_hold_queued", "... the batch before added to the run index", False),
    (doccolumns.DocColumns, "_copy_pending", "the run index's new rows copied into its columns", False),
    (labels.NearDuplicates, "many", "... the rule's verdicts", False),
    (labels.NearDuplicates, "in_run", "... of those on the run index's candidates, from its columns", False),
    (labels.Labeller, "_label", "labels record by record (clusters joined)", False),
    (labels.Labeller, "new_docs", "documents to write", False),
    (local_store.LocalStore, "start_write", "the write started (rows built and handed to the extension's writer)",
     False),
    (local_store, "block_params", "... rows built (a tuple a document, the rest from the batch's arrays)",
     False),
    (local_store, "doc_rows", "... rows built (a batch made in this process: every value)", False),
    (driver.IngestRun, "_after_write", "after the write (dead letters, checkpoint)", False),
    (driver.IngestRun, "feed", "every step of a batch after reading (all)", False),
]


def one_round(path: Path) -> tuple[dict[str, float], dict[str, float], int]:
    """One ingest of ``path`` into a fresh store: the times (seconds) and each step's main-thread CPU."""
    spent.clear()
    tmp = Path(tempfile.mkdtemp(prefix="esdedup-local-phases-"))
    try:
        store = LocalStore("phases", data_dir=tmp)
        main0, self0, kids0 = time.thread_time(), cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN)
        wall0 = time.perf_counter()
        summary = ingest([path], store, None, IngestOptions(dead_letter=tmp / "dl.jsonl", checkpoint=tmp / "ckpt"))
        times = {"wall": time.perf_counter() - wall0, "main thread": time.thread_time() - main0,
                 "this process": cpu(resource.RUSAGE_SELF) - self0,
                 "workers": cpu(resource.RUSAGE_CHILDREN) - kids0}
        store.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    assert summary.ok and not summary.failed, summary.to_dict()
    return times, dict(spent), summary.read


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input", type=Path, default=ROOT / "bench" / "data" / "tang" / "docs.jsonl",
                    help="a JSONL file of records (default: the Tang texts bench/quality.py --corpus tang writes)")
    ap.add_argument("--docs", type=int, help="ingest this many poems of bench/corpora.py instead of --input")
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    install(STEPS)
    tmp = Path(tempfile.mkdtemp(prefix="esdedup-local-phases-input-"))
    try:
        path = args.input
        if args.docs is not None:
            path = tmp / "poems.jsonl"
            with open(path, "w", encoding="utf-8") as fh:
                for d in corpora.poems(args.docs):
                    fh.write(json.dumps(d, ensure_ascii=False) + "\n")
        rounds = [one_round(path) for _ in range(args.rounds)]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    times, steps, n = min(rounds, key=lambda r: r[0]["main thread"])
    per = 1e6 / n
    print(f"{n:,} texts, wall {times['wall']:.1f} s; CPU µs a text: main thread {times['main thread'] * per:.1f}, "
          f"this process {times['this process'] * per:.1f}, workers {times['workers'] * per:.1f}")
    print("| step (main thread) | CPU µs a text |\n| --- | ---: |")
    for step, seconds in sorted(steps.items(), key=lambda kv: -kv[1]):
        print(f"| {step} | {seconds * per:.1f} |")


if __name__ == "__main__":
    main()
