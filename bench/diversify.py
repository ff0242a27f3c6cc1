"""Benchmark of `esdedup.search.diversify.diversify` on a page of 100 search hits.

The hits carry stored fingerprints as a search returns them (``_source.dedup``: the SimHash as hex, the
MinHash signature as base64 and the counts; the default config stores no vector), made by a `Fingerprinter`
from generated Chinese news-like texts; about a fifth of them are near-variants of earlier ones. The last case
gives the same hits in the form a search of a labelled index returns them with doc values (`make_hits`). Each
configuration is timed over many calls; the median per call is reported in microseconds.

    python bench/diversify.py                 # 10,000 repetitions, appends a section to BENCHMARKS.md
    python bench/diversify.py --reps 1000 --no-append
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from esdedup.fingerprint.config import FingerprintConfig  # noqa: E402
from esdedup.fingerprint.fingerprinter import Fingerprinter  # noqa: E402
from esdedup.match.thresholds import Thresholds  # noqa: E402
from esdedup.schema import dedup_source  # noqa: E402
from esdedup.search.diversify import diversify  # noqa: E402

SUBJECTS = ["国家统计局", "市教育局", "气象台", "交通运输部", "省卫生健康委", "区人民法院", "科技创新中心",
            "农业农村局", "足球俱乐部", "博物馆", "铁路公司", "电力公司"]
ACTIONS = ["今天发布通知", "召开新闻发布会", "公布最新数据", "启动专项行动", "发布预警信息", "举行签约仪式",
           "开展安全检查", "推出便民措施"]
DETAILS = ["前三季度经济运行总体平稳", "全市中小学将推迟开学", "未来三天将有明显降雨", "春运期间增开临时列车",
           "流感进入高发季节", "一批重大项目集中开工", "新能源汽车销量持续增长", "粮食产量再创新高",
           "主队在主场逆转取胜", "新展览吸引大量游客", "部分地区将实行错峰用电", "多家企业加大研发投入"]
TAILS = ["专家表示相关政策将继续发力。", "市民可通过官方渠道查询详情。", "有关部门提醒注意出行安全。",
         "记者将持续关注后续进展。", "相关负责人回答了记者提问。", "预计下月底前全部完成。"]


def make_texts(n: int, dup_share: float, rng: random.Random) -> list[str]:
    texts: list[str] = []
    for _ in range(n):
        if texts and rng.random() < dup_share:
            base = rng.choice(texts)
            texts.append(base.replace("。", "！", 1) if "。" in base else base + "。")
        else:
            parts = []
            for _ in range(rng.randint(4, 7)):
                parts.append(f"{rng.choice(SUBJECTS)}{rng.choice(ACTIONS)}，{rng.choice(DETAILS)}，"
                             f"{rng.choice(TAILS)}")
            texts.append("".join(parts))
    return texts


def make_hits(n: int = 100, dup_share: float = 0.2, seed: int = 7, searched: bool = False) -> list[dict]:
    """``searched``: the hits as a search of a labelled index returns them when it asks for doc values (what
    bench/es.py and bench/search.py measure): each with a ``cluster_id`` (ingest labels every document) and the
    SimHash and empty flag again under ``fields``."""
    rng = random.Random(seed)
    config = FingerprintConfig()
    fingerprinter = Fingerprinter(config)
    texts = make_texts(n, dup_share, rng)
    fps = fingerprinter.fingerprint_many(texts)
    hits = [{"_index": "news", "_id": str(i), "_score": float(n - i),
             "_source": {"text": t, "dedup": dedup_source(fp, config)}}
            for i, (t, fp) in enumerate(zip(texts, fps, strict=True))]
    if searched:
        for h in hits:
            d = h["_source"]["dedup"]
            d["cluster_id"] = h["_id"]
            h["fields"] = {"dedup.simhash": [d["simhash"]], "dedup.empty": [d["empty"]]}
    return hits


def median_us(hits: list[dict], reps: int, **kwargs) -> tuple[float, float]:
    """Median wall time and median process CPU time of one call, in microseconds (CPU time is less
    disturbed by other jobs on a shared machine)."""
    diversify(hits, **kwargs)  # warm-up
    wall, cpu = [], []
    for _ in range(reps):
        t0, c0 = time.perf_counter(), time.process_time()
        diversify(hits, **kwargs)
        c1, t1 = time.process_time(), time.perf_counter()
        wall.append(t1 - t0)
        cpu.append(c1 - c0)
    return statistics.median(wall) * 1e6, statistics.median(cpu) * 1e6


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine() or "unknown CPU"


CASES = [
    ("the config's (jaccard 0.5 or containment 0.8)", {}),
    ("hamming_k=3", {"thresholds": Thresholds(3, None)}),
    ("hamming_k=3, cosine=0.9", {"thresholds": Thresholds(3, 0.9)}),
    ("cosine=0.9 only", {"thresholds": Thresholds(None, 0.9)}),
]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hits", type=int, default=100)
    ap.add_argument("--reps", type=int, default=10_000)
    ap.add_argument("--no-append", action="store_true", help="print only; do not append to BENCHMARKS.md")
    args = ap.parse_args(argv)

    hits = make_hits(args.hits)
    lines = []
    for label, kwargs, page in [*((label, kwargs, hits) for label, kwargs in CASES),
                                (CASES[0][0] + ", hits with doc values and cluster ids", {},
                                 make_hits(args.hits, searched=True))]:
        for mode in ("drop", "group"):
            kept = len(diversify(page, mode=mode, **kwargs))
            wall, cpu = median_us(page, args.reps, mode=mode, **kwargs)
            line = f"| {label} | {mode} | {args.hits} | {kept} | {wall:.0f} | {cpu:.0f} |"
            print(line, flush=True)
            lines.append(line)

    if args.no_append:
        return
    cmd = "python bench/diversify.py" + (f" --hits {args.hits}" if args.hits != 100 else "") + \
          (f" --reps {args.reps}" if args.reps != 10_000 else "")
    load = os.getloadavg()
    machine = f"{cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()}, " \
              f"numpy {__import__('numpy').__version__}; 1/5/15-min load average at the end " \
              f"{', '.join(f'{x:.1f}' for x in load)}" + \
              (" (shared with other jobs: expect the numbers to be high)" if load[0] > (os.cpu_count() or 1)
               else "")
    section = [
        "", "## diversify (bench/diversify.py)", "",
        f"Command: `{cmd}`  ",
        f"Machine: {machine}  ",
        f"Date: {dt.date.today().isoformat()}  ",
        f"Median time per call over {args.reps:,} calls (wall clock, and CPU time of the process); each "
        "hit carries its stored `dedup` (default config: SimHash, MinHash signature, counts) in `_source`, "
        "about a fifth are near-variants of earlier hits.", "",
        "| test | mode | hits | returned | median µs (wall) | median µs (CPU) |",
        "|---|---|---:|---:|---:|---:|",
        *lines, "",
    ]
    path = ROOT / "BENCHMARKS.md"
    with open(path, "a", encoding="utf-8") as fh:  # append only: other benchmarks add their own sections
        if not path.exists() or path.stat().st_size == 0:
            fh.write("# Benchmarks\n")
        fh.write("\n".join(section))
    print(f"appended to {path}")


if __name__ == "__main__":
    main()
