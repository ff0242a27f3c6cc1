"""jieba against rjieba end to end: the CLI's default path (`esdedup ingest`, then `esdedup dups`) on the
embedded store, over short real texts, once with each tokenizer.

    python bench/tokenizers.py --docs 100000

Texts: Tang and Song poems from chinese-poetry (bench/corpora.py), 100,000 by default (about 60 characters
each). Each command runs as its own process (`python -m esdedup ...`, default options but the tokenizer);
wall seconds and the CPU seconds of the process and its fingerprint workers are reported, with how many
near-duplicate pairs `dups` printed. The plugin's ingest processor reproduces jieba's tokens only, so the
choice between the two is speed against plugin parity (see BENCHMARKS.md and the README's tokenizer
paragraph).
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import corpora  # noqa: E402


def run(args: list[str], out: Path | None = None) -> tuple[float, float]:
    """(wall s, CPU s of the process and its children) of one esdedup command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    with open(out or "/dev/null", "w", encoding="utf-8") as fh:
        subprocess.run([sys.executable, "-m", "esdedup", *args], check=True, stdout=fh)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--tokenizers", default="jieba,rjieba")
    args = ap.parse_args()
    tmp = corpora.scratch_folder("esdedup-tok-")
    path = tmp / "poems.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for d in corpora.poems(args.docs):
            fh.write(json.dumps(d, ensure_ascii=False) + "\n")
    rows = ["| tokenizer | ingest wall s | ingest CPU s | dups wall s | dups CPU s | total wall s | pairs |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for tok in args.tokenizers.split(","):
        data = tmp / f"data-{tok}"
        iw, ic = run(["ingest", str(path), "--index", "bench", "--data-dir", str(data), "--tokenizer", tok, "-q",
                      "--dead-letter", str(tmp / f"dl-{tok}.jsonl")])
        pairs = tmp / f"pairs-{tok}.jsonl"
        dw, dc = run(["dups", "--index", "bench", "--data-dir", str(data)], pairs)
        n = sum(1 for _ in open(pairs, encoding="utf-8"))
        rows.append(f"| {tok} | {iw:.1f} | {ic:.1f} | {dw:.1f} | {dc:.1f} | {iw + dw:.1f} | {n:,} |")
    print(f"`python bench/tokenizers.py {' '.join(sys.argv[1:])}`".strip() + f", {args.docs:,} poems "
          f"(chinese-poetry {corpora.POETRY_VERSION}), embedded store, default config but the tokenizer\n")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
