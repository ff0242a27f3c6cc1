"""What an ingest stores on the embedded store, row for row: the same input gives the same rows whatever
changes how they are computed (labelling, the write, the native core against the Python path). The rows of a
fixed corpus are compared with the digest this test was written with; the write clock's values (``wseq``,
``cluster_seq``: nanoseconds at the run) are compared by their order."""
from __future__ import annotations

import hashlib
import json
import random
import sqlite3

from esdedup.ingest import IngestOptions, ingest
from esdedup.store.local import LocalStore
from tests.corpus import make_corpus, make_variant

#: The digest of `_rows` for `_corpus`: a change that stores other rows for the same input changes it, and
#: says so where it changes it.
ROWS_DIGEST = "23e4b29ed28df29039ba0b4394d8c118daf37823"


def _corpus() -> list[dict]:
    """Long texts with planted variants; short texts (n-grams decide them) with copies and variants, some
    of them in the batch before; an empty text; a repeated id with the same text; fields of the record's own."""
    docs, _ = make_corpus(120, 60, seed=11)
    rng = random.Random(5)
    short = [d["text"][:rng.randint(20, 60)] for d in docs[:80]]
    for k, text in enumerate(short):
        docs.append({"id": f"s{k:03d}", "text": text, "author": f"a{k % 7}"})
        if k % 3 == 0:
            docs.append({"id": f"c{k:03d}", "text": text})  # an exact copy
        if k % 4 == 0:
            docs.append({"id": f"w{k:03d}", "text": make_variant(rng, text), "title": f"t{k}"})
    docs += [{"id": "e1", "text": "，。"}, {"id": "e2", "text": "，。"}, {"id": "s000", "text": short[0]}]
    return docs


def _rows(path) -> list[tuple]:
    db = sqlite3.connect(path)
    try:
        cols = [r[1] for r in db.execute("PRAGMA table_info(docs)")]
        rows = db.execute(f"SELECT {', '.join(cols)} FROM docs ORDER BY seq").fetchall()
    finally:
        db.close()
    w, c = cols.index("wseq"), cols.index("cluster_seq")
    rank = {v: k for k, v in enumerate(sorted({r[w] for r in rows} | {r[c] for r in rows}))}
    return [tuple(rank[v] if k in (w, c) else v for k, v in enumerate(r)) for r in rows]


def test_an_ingest_stores_the_rows_it_always_stored(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in _corpus()), encoding="utf-8")
    store = LocalStore("rows", tmp_path / "data")
    summary = ingest([src], store, None, IngestOptions(batch=50, workers=1, checkpoint=None, dead_letter=None))
    store.close()
    assert (summary.read, summary.indexed, summary.skipped, summary.failed) == (310, 309, 1, 0)
    rows = _rows(store.path)
    assert hashlib.sha1(repr(rows).encode()).hexdigest() == ROWS_DIGEST, summary
