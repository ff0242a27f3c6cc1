"""What the review page's tests share: the README's sample ingested into a store, and a running server."""
from __future__ import annotations

import json
from pathlib import Path

from esdedup.ingest.run import IngestOptions, ingest
from esdedup.store.base import Store

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "examples" / "news.jsonl"
#: A document whose id and title are markup: every page must show them as text.
HOSTILE = {"id": "x<b>1</b>", "title": "<script>alert('title')</script><img src=x onerror=alert(1)>",
           "text": "台湾居民明日起持台胞证可通关，无需另行申请签注。<script>alert('text')</script>相关部门表示手续将进一步简化。",
           "source": "test"}
HOSTILE_TWIN = {**HOSTILE, "id": "x<b>2</b>", "title": "<i>twin</i>",
                "text": "台湾居民明日起持台胞证可通关，无需另行申请签注！<script>alert('text')</script>相关部门表示手续将进一步简化。"}


def sample_file(folder: Path, *, hostile: bool = True) -> Path:
    """The README's sample news (and, with ``hostile``, two near-duplicate documents whose ids, titles and
    texts carry markup) as one JSONL file."""
    path = folder / "news.jsonl"
    lines = SAMPLE.read_text("utf-8").splitlines()
    if hostile:
        lines += [json.dumps(HOSTILE, ensure_ascii=False), json.dumps(HOSTILE_TWIN, ensure_ascii=False)]
    path.write_text("\n".join(lines) + "\n", "utf-8")
    return path


def ingest_sample(store: Store, folder: Path, *, hostile: bool = True) -> None:
    """Ingest the sample into ``store``, then close it (a `Review` uses a store from its own thread, and the
    embedded store's connection belongs to the thread that opened it)."""
    summary = ingest([str(sample_file(folder, hostile=hostile))], store, None, IngestOptions(workers=1))
    assert not summary.error, summary.error
    store.refresh()
    store.close()
