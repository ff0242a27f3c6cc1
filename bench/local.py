"""Embedded-store benchmark: ingest and all-pairs dedup time and peak memory, no server.

    python bench/local.py short --docs 100000        # 100,000 Tang/Song poems (real short texts)
    python bench/local.py novels --files 100 --mb 5  # 100 novel-sized files, 500 MB in all

Each phase runs the real command line (`esdedup ingest`, `esdedup dups`) as a child process; its wall
time and peak resident memory (``wait4`` rusage: the largest of the process and the worker processes it
waited for) are recorded.

Novel-sized files: there is no corpus of real novels in the reachable registries, so each "novel" is a
distinct slice of real text (People's Daily 1998 paragraphs and Tang/Song poems, bench/corpora.py) whose
paragraphs are shuffled and repeated up to the target size; every fifth file also gets a near-duplicate
(a chapter dropped, an advertisement line inserted every 200 paragraphs, re-encoded in GBK), which is what
`dups` should find. The text is real; the assembly is not.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench")]

import corpora  # noqa: E402

ESDEDUP = [sys.executable, "-m", "esdedup"]


def run(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(seconds, peak RSS in MB, stdout) of one command, run under a fresh Python so that the peak memory
    is this phase's alone."""
    code = ("import json,resource,subprocess,sys,time;t=time.perf_counter();"
            "p=subprocess.run(sys.argv[1:],capture_output=True,text=True);"
            "print(json.dumps({'rc':p.returncode,'s':time.perf_counter()-t,"
            "'kb':resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,'out':p.stdout,'err':p.stderr}))")
    proc = subprocess.run([sys.executable, "-c", code, *argv], env=env, capture_output=True, text=True)
    res = json.loads(proc.stdout)
    if res["rc"] not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed ({res['rc']}):\n{res['err'][-2000:]}")
    return res["s"], res["kb"] / 1024, res["out"]


def short(args: argparse.Namespace, work: Path, env: dict[str, str]) -> list[tuple[str, ...]]:
    path = work / "poems.jsonl"
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for p in corpora.poems(args.docs):
            fh.write(json.dumps(p, ensure_ascii=False) + "\n")
            n += 1
    mb = path.stat().st_size / 1e6
    rows = []
    s, peak, out = run([*ESDEDUP, "ingest", str(path), "--index", "poems", "--tokenizer", args.tokenizer,
                                 "--workers", str(args.workers), "--json", "--quiet"], env)
    summary = json.loads(out.strip().splitlines()[-1])
    rows.append((f"ingest {n:,} poems ({mb:.0f} MB)", f"{s:.1f} s", f"{n / s:,.0f} docs/s", f"{peak:,.0f} MB",
                 f"{summary['duplicates']} labelled near-duplicates, failed {summary['failed']}"))
    s, peak, out = run([*ESDEDUP, "dups", "--index", "poems"], env)
    pairs = sum(1 for ln in out.splitlines() if ln.startswith("{"))
    rows.append(("dups (all pairs)", f"{s:.1f} s", "", f"{peak:,.0f} MB", f"{pairs:,} pairs"))
    # The store indexes band keys when a lookup first needs them: the first `similar` pays for all of
    # them, the next one does not (each run is a whole CLI process, start-up included).
    first_id = json.loads(path.read_text("utf-8").splitlines()[0])["id"]
    for name in ("first `similar` (indexes the deferred keys)", "second `similar`"):
        s, peak, out = run([*ESDEDUP, "similar", "--index", "poems", "--id", first_id, "--json"], env)
        rows.append((name, f"{s:.1f} s", "", f"{peak:,.0f} MB", f"{len(json.loads(out)['matches'])} matches"))
    return rows


def make_novels(work: Path, files: int, mb: float, seed: int = 3) -> tuple[Path, list[tuple[str, str]]]:
    rng = random.Random(seed)
    paras = corpora.peoples_daily_paragraphs() + [p["text"] for p in corpora.poems()]
    slice_len = len(paras) // files
    folder = work / "novels"
    folder.mkdir(parents=True, exist_ok=True)
    planted = []
    target = int(mb * 1e6)
    for i in range(files):
        own = paras[i * slice_len : (i + 1) * slice_len]
        body: list[str] = []
        size = 0
        while size < target:
            chunk = own[:]
            rng.shuffle(chunk)
            for p in chunk:
                body.append(p)
                size += len(p.encode("utf-8")) + 1
                if size >= target:
                    break
        name = f"novel-{i:04d}.txt"
        (folder / name).write_text("\n".join(body), "utf-8")
        if i % 5 == 0:
            cut = rng.randrange(len(body) // 2)
            copy = body[:cut] + body[cut + len(body) // 40 :]  # one "chapter" (2.5%) dropped
            copy = [p if k % 200 else "本书由某某小说网整理，更多精彩请访问本站。\n" + p for k, p in enumerate(copy)]
            twin = f"novel-{i:04d}-reprint.txt"
            (folder / twin).write_bytes("\n".join(copy).encode("gb18030"))
            planted.append((name, twin))
    return folder, planted


def novels(args: argparse.Namespace, work: Path, env: dict[str, str]) -> list[tuple[str, ...]]:
    folder, planted = make_novels(work, args.files, args.mb)
    total = sum(p.stat().st_size for p in folder.iterdir()) / 1e6
    n = sum(1 for _ in folder.iterdir())
    rows = []
    s, peak, out = run([*ESDEDUP, "ingest", str(folder), "--index", "novels", "--tokenizer",
                                 args.tokenizer, "--weighting", "tf_length", "--workers", str(args.workers),
                                 "--json", "--quiet"], env)
    summary = json.loads(out.strip().splitlines()[-1])
    rows.append((f"ingest {n} novel-sized files ({total:,.0f} MB, UTF-8 and GBK)", f"{s:.1f} s",
                 f"{total / s:.1f} MB/s", f"{peak:,.0f} MB",
                 f"{summary['duplicates']} labelled near-duplicates, failed {summary['failed']}"))
    s, peak, out = run([*ESDEDUP, "dups", "--index", "novels"], env)
    found = {tuple(sorted((Path(json.loads(ln)["a"]).name, Path(json.loads(ln)["b"]).name)))
             for ln in out.splitlines() if ln.startswith("{")}
    hit = sum(1 for a, b in planted if tuple(sorted((a, b))) in found)
    rows.append(("dups (all pairs)", f"{s:.1f} s", "", f"{peak:,.0f} MB",
                 f"{len(found)} pairs; {hit}/{len(planted)} planted reprints found"))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["short", "novels"])
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--files", type=int, default=100)
    ap.add_argument("--mb", type=float, default=5.0)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--tokenizer", default="rjieba")
    ap.add_argument("--work", help="folder for data and the store (default: a temporary one)")
    ap.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"))
    ap.add_argument("--no-append", action="store_true")
    args = ap.parse_args()
    work = Path(args.work) if args.work else corpora.scratch_folder("esdedup-local-")
    env = {**os.environ, "ESDEDUP_DATA_DIR": str(work / "store")}
    env.pop("ESDEDUP_ES_URL", None)
    rows = short(args, work, env) if args.what == "short" else novels(args, work, env)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    cmd = "python bench/local.py " + " ".join(sys.argv[1:])
    table = ["| phase | wall time | rate | peak RSS | result |", "| --- | --- | --- | --- | --- |"]
    table += ["| " + " | ".join(r) + " |" for r in rows]
    section = (f"\n## Embedded store, {args.what} (bench/local.py)\n\n`{cmd}` — {when}, this machine (2 cores, "
               f"24 GiB), tokenizer {args.tokenizer}, {args.workers} workers. Peak RSS: the largest process of "
               "the phase (workers included).\n\n" + "\n".join(table) + "\n")
    print(section)
    if not args.no_append:
        with open(args.out, "a", encoding="utf-8") as fh:
            fh.write(section)


if __name__ == "__main__":
    main()
