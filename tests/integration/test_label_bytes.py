"""What `label` mode writes to Elasticsearch, byte for byte: every document's bulk lines and every partial update
of two runs into one index (the first into a new index, labelled from the run's memory; the second into the
index the first wrote, labelled from the store's lookups too), on a corpus of long and short texts with planted
near-duplicates, exact copies, one text copied past the run index's `MAX_PER_KEY`, texts without words,
repeated ids and a text replaced under its id. The write clock is made deterministic, so the bytes are the
same on every run: their SHA-256 is the one the labelling of this corpus has always written, natively and
in Python alike (a faster labelling path must write exactly these documents).
"""
from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from esdedup import FingerprintConfig
from esdedup.ingest import IngestOptions, clock, ingest
from esdedup.ingest.runindex import MAX_PER_KEY
from esdedup.store.elastic import writes
from esdedup.store.elastic.store import ElasticStore
from esdedup.store.elastic.writes import Bulk
from esdedup.util import native
from tests.corpus import SENTENCES, make_corpus, make_variant

#: The SHA-256 of everything the two runs write and their summaries (`_written`), and how many bulk requests
#: and update calls that is.
EXPECTED = ("a24ba1526f2f7b7340fbd2b66fb534c2b6dd806c842ad9a37bd41448600745af", 13, 18)


def _corpus() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Two input files: the first run's records, and the second's (over the index the first wrote)."""
    rng = random.Random(11)
    long_docs, _ = make_corpus(120, 60, seed=5)
    short = [{"id": f"s{i:04d}", "text": rng.choice(SENTENCES)[: rng.randint(12, 40)]} for i in range(150)]
    short += [{"id": f"sv{i:04d}", "text": make_variant(rng, short[rng.randrange(150)]["text"])} for i in range(60)]
    crowd = [{"id": f"c{i:04d}", "text": "白日依山尽，黄河入海流。欲穷千里目，更上一层楼。"} for i in range(MAX_PER_KEY + 9)]
    wordless = [{"id": f"w{i:03d}", "text": "！？……" * (1 + i % 3)} for i in range(8)]
    first = long_docs + short + crowd + wordless
    rng.shuffle(first)
    first.insert(70, {"id": first[3]["id"], "text": first[3]["text"]})  # the same record again
    first.insert(90, {"id": first[5]["id"], "text": "另一个文本用了同一个编号。"})  # a repeated id, another text
    second = first[:40]  # stored already, unchanged
    second += [{"id": f"n{i:04d}", "text": make_variant(rng, d["text"])} for i, d in enumerate(first[40:160])]
    second.append({"id": first[200]["id"], "text": make_variant(rng, first[201]["text"])})  # replaced under its id
    second += [{"id": f"x{i:04d}", "text": rng.choice(SENTENCES)} for i in range(30)]
    return first, second


def _written(es_client: Any, index: str, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, int, int]:
    """The two runs into ``index``: the SHA-256 of every bulk body and update sent, and their counts."""
    sent: list[bytes] = []
    actions, items = writes.bulk_actions, Bulk.items

    def recording_actions(*args: Any) -> Any:
        # Each document's bulk lines as they are made (a document re-sent after a 429 is made once).
        made = list(actions(*args))
        sent.append(b"".join(lines for _, lines in made))
        return iter(made)

    def recording_items(self: Bulk, actions: Any, what: str) -> Any:
        actions = list(actions)
        # The node's own numbers (``if_seq_no``: a write it re-took after a 429 counts too) are left out, the
        # condition kept; in the order of their ids (a set of clusters gives them in an order of its own).
        kept = [{k: (k in a) if k in ("if_seq_no", "if_primary_term") else v for k, v in a.items()} for a in actions]
        sent.append(json.dumps(sorted(kept, key=lambda a: json.dumps(a, sort_keys=True)), sort_keys=True,
                               ensure_ascii=False).encode())
        return items(self, actions, what)

    monkeypatch.setattr(writes, "bulk_actions", recording_actions)
    monkeypatch.setattr(Bulk, "items", recording_items)
    # The write clock from a fixed start, one tick a seq: the same seq values on every run.
    monkeypatch.setattr(clock, "time", SimpleNamespace(time_ns=lambda: 0))
    monkeypatch.setattr(clock.WRITE_CLOCK, "_last", 1_700_000_000_000_000_000)
    for n, records in enumerate(_corpus()):
        path = tmp / f"part{n}.jsonl"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
        summary = ingest([path], ElasticStore(es_client, index, replicas=0), FingerprintConfig(),
                         IngestOptions(workers=1, batch=50, on_duplicate="label", dead_letter=tmp / f"dl{n}.jsonl"))
        assert summary.error is None and summary.failed == (1 if n == 0 else 0), summary.to_dict()
        counts = {k: v for k, v in summary.to_dict().items() if k not in ("seconds", "dead_letter", "docs_per_s", "mb_per_s", "retried")}
        sent.append(json.dumps(counts, sort_keys=True).encode())
    updates = sum(1 for body in sent if body.startswith(b"["))
    # The index's name is the test's own: the bytes are hashed as if it were "INDEX".
    body = b"\x00".join(sent).replace(json.dumps(index).encode(), b'"INDEX"')
    return hashlib.sha256(body).hexdigest(), len(sent) - updates - 2, updates


@pytest.mark.parametrize("path", ["native", "python"])
def test_label_mode_writes_the_same_bytes(path: str, es_client: Any, fresh_index: str, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    if path == "native":
        if native.extension_missing():
            pytest.skip(native.extension_missing())
        monkeypatch.delenv(native.ENV_SWITCH, raising=False)
    else:
        monkeypatch.setenv(native.ENV_SWITCH, "0")
    assert _written(es_client, fresh_index, tmp_path, monkeypatch) == EXPECTED
