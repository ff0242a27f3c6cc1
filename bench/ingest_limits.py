"""Ingest at its limits, on the embedded store: one very large document (peak memory and time, measured by
``/usr/bin/time -v`` around the real CLI) and thousands of near-identical documents (CPU seconds of a first
run into an empty index and of a second run into the filled one).

    python bench/ingest_limits.py                                 # this checkout
    python bench/ingest_limits.py --esdedup /path/to/other/checkout --timeout 1200   # e.g. before a change

Documents: generated, deterministic. The large ones: one 62 MB JSONL record of random runs of common Han
characters between Chinese commas, and one of random lowercase "words"; each file also holds one short
record. The near-identical ones: one two-sentence Chinese news text with its number appended, 1,500 /
3,000 / 6,000 times. The CLI runs with ``--workers 1`` and tokenizer rjieba.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import re
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench")]

import corpora  # noqa: E402  (bench/corpora.py: the scratch folder)

_NEAR = textwrap.dedent("""
    import json, shutil, sys, time
    from esdedup import FingerprintConfig
    from esdedup.ingest import IngestOptions, ingest
    from esdedup.store.local import LocalStore
    base = ("国家统计局今天发布了最新的经济数据，第三季度国内生产总值同比增长百分之五点二。"
            "气象台预计未来三天本市将出现持续降雨，局部地区有大到暴雨，请市民注意出行安全。")
    n, folder = int(sys.argv[1]), sys.argv[2]
    path = f"{folder}/near{n}.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps({"id": f"d{i}", "text": base + f"（第{i}号）"}, ensure_ascii=False) + "\\n")
    out = []
    for _ in range(2):
        started = time.process_time()
        ingest([path], LocalStore("near", f"{folder}/data{n}"), FingerprintConfig(tokenizer="rjieba"),
               IngestOptions(workers=1))
        out.append(time.process_time() - started)
    print(json.dumps(out))
""")


def big_files(folder: Path, mb: int) -> dict[str, Path]:
    rng = random.Random(1)
    han = [chr(c) for c in range(0x4E00, 0x4E00 + 3000)]
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9))) for _ in range(50_000)]
    make = {"Chinese": lambda: "".join(rng.choice(han) for _ in range(rng.randint(8, 18))) + "，",
            "English": lambda: " ".join(rng.choice(words) for _ in range(12)) + ". "}
    out = {}
    for name, piece in make.items():
        path = folder / f"big-{name.lower()}.jsonl"
        parts, size = [], 0
        while size < mb * 2**20:
            parts.append(piece())
            size += len(parts[-1].encode("utf-8"))
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(json.dumps({"id": "big", "text": "".join(parts)}, ensure_ascii=False) + "\n")
            fh.write(json.dumps({"id": "small", "text": "今天天气很好，适合出门散步。"}, ensure_ascii=False) + "\n")
        out[name] = path
    return out


def env_for(esdedup: Path) -> dict[str, str]:
    """The measured checkout first on the path (the commands run in a scratch folder, so the current
    directory does not shadow it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ESDEDUP_")}
    env["PYTHONPATH"] = str(esdedup)
    env["ESDEDUP_CONFIG"] = str(esdedup / ".no-esdedup-config.json")
    return env


def measure_big(path: Path, folder: Path, esdedup: Path, timeout: float) -> str:
    cmd = ["/usr/bin/time", "-v", sys.executable, "-m", "esdedup", "ingest", str(path), "--index", "big", "--data-dir",
           str(folder / f"data-{path.stem}"), "--tokenizer", "rjieba", "--workers", "1", "--checkpoint",
           str(folder / f"ck-{path.stem}.json"), "--dead-letter", str(folder / f"dl-{path.stem}.jsonl")]
    try:
        r = subprocess.run(cmd, env=env_for(esdedup), capture_output=True, text=True, timeout=timeout, cwd=folder)
    except subprocess.TimeoutExpired:
        return f"did not finish in {timeout:.0f} s | |"
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1)) / 2**20  # type: ignore[union-attr]
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", r.stderr).group(1)  # type: ignore[union-attr]
    return f"{wall} | {rss:.2f} GB | exit {r.returncode}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--esdedup", type=Path, default=ROOT, help="the checkout to measure (default: this one)")
    ap.add_argument("--mb", type=int, default=62)
    ap.add_argument("--near", default="1500,3000,6000")
    ap.add_argument("--timeout", type=float, default=1200)
    args = ap.parse_args()
    folder = corpora.scratch_folder("esdedup-limits-")
    rev = subprocess.run(["git", "-C", str(args.esdedup), "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True).stdout.strip()
    sizes = f" --mb {args.mb} --near {args.near}"  # the defaults too: the numbers below depend on them
    print(f"`python bench/ingest_limits.py --esdedup <checkout at {rev}>{sizes}` — "
          f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC\n")
    print("| input | wall | peak RSS | |\n| --- | ---: | ---: | --- |")
    for name, path in big_files(folder, args.mb).items():
        print(f"| one {args.mb} MB {name} document | {measure_big(path, folder, args.esdedup, args.timeout)} |",
              flush=True)
    print("\n| near-identical documents | first run, CPU s | second run (index filled), CPU s |\n| ---: | ---: | ---: |")
    for n in map(int, args.near.split(",")):
        try:
            r = subprocess.run([sys.executable, "-c", _NEAR, str(n), str(folder)], env=env_for(args.esdedup),
                               capture_output=True, text=True, timeout=args.timeout, cwd=folder)
            first, second = json.loads(r.stdout.strip().splitlines()[-1])
            print(f"| {n:,} | {first:.1f} | {second:.1f} |", flush=True)
        except subprocess.TimeoutExpired:
            print(f"| {n:,} | did not finish in {args.timeout:.0f} s | |", flush=True)


if __name__ == "__main__":
    main()
