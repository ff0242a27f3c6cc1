"""A batch whose keys the run index holds `MAX_PER_KEY` documents under already is still taken whole
(`RunIndex.takes_whole`, `RunIndex.add_all_later`): it holds, crowds out and counts exactly what adding its
documents one at a time (`RunIndex.add_row`) does, with crowded keys of the run's earlier run indexes too, and
its records are not one another's peers through a key they are all crowded out of (`batch_peers`)."""
from __future__ import annotations

import json
import random

import numpy as np
import pytest

from esdedup import FingerprintConfig
from esdedup.ingest import IngestOptions, ingest, run
from esdedup.ingest.doccolumns import DocColumns
from esdedup.ingest.labels import batch_peers
from esdedup.ingest.runindex import MAX_PER_KEY, KeyLists, RunIndex, key_hashes
from esdedup.store.base import StoredDoc
from esdedup.store.local import LocalStore
from tests.corpus import SENTENCES


def _doc(i: int) -> StoredDoc:
    return StoredDoc(f"d{i:05d}", i, np.zeros(4, dtype=np.float32), False, 3, 9, f"d{i:05d}", None, seq=i + 1,
                     cluster_seq=i + 1, content_sha1=f"{i:040x}")


def _batches(seed: int) -> list[list[list[str]]]:
    """Batches of documents' keys: a few keys many documents hold (crowded within a few batches), the rest each
    document's own."""
    rng = np.random.default_rng(seed)
    out, n = [], 0
    for size in rng.integers(5, 40, 30).tolist():
        batch = []
        for _ in range(size):
            common = [f"hot:{k}" for k in rng.choice(6, int(rng.integers(0, 3)), replace=False).tolist()]
            batch.append([*common, f"own:{n}", f"band:{rng.integers(0, 400)}"])
            n += 1
        out.append(batch)
    return out


def _state(index: RunIndex) -> tuple[dict[str, int], list[str], list[tuple[int, int]]]:
    ids, hashes, positions = index.release()
    return dict(index.crowded), ids, sorted(zip(hashes.tolist(), positions.tolist(), strict=True))


@pytest.mark.parametrize("carried", [{}, {"hot:1": 40, "band:7": 35}])
def test_a_batch_taken_whole_holds_and_counts_what_one_document_at_a_time_does(carried) -> None:
    one_by_one, whole = RunIndex(crowded=dict(carried)), RunIndex(crowded=dict(carried))
    taken_crowded = n = 0
    for batch in _batches(3):
        hashes = [key_hashes(keys) for keys in batch]
        rows = [DocColumns._fields(_doc(n + d)) for d in range(len(batch))]
        for row, keys, h in zip(rows, batch, hashes, strict=True):
            one_by_one.add_row(row, h.tolist(), lambda keys=keys: keys)
        crowded_out = whole.takes_whole(np.concatenate(hashes))
        if crowded_out is None:
            for row, keys, h in zip(rows, batch, hashes, strict=True):
                whole.add_row(row, h.tolist(), lambda keys=keys: keys)
        else:
            taken_crowded += bool(len(crowded_out))
            whole.add_all_later(rows, np.concatenate(hashes), [len(h) for h in hashes], crowded_out,
                                batch.__getitem__)
        n += len(batch)
    assert taken_crowded >= 5  # batches with keys crowded before them, taken whole
    assert max(whole.crowded.values()) > 3 * MAX_PER_KEY
    assert _state(whole) == _state(one_by_one)


def test_an_ingest_taking_crowded_batches_whole_labels_as_one_document_at_a_time(tmp_path, monkeypatch) -> None:
    """Boilerplate in many batches and several windows (each window's crowded keys carried to the next): the
    same clusters, duplicates and crowded counts as a run that adds every such batch one record at a time."""
    rng = random.Random(5)
    boilerplate = ["本站所有文章均来自互联网，如有侵权请联系删除。", "点击关注我们，获取更多精彩内容！欢迎转发分享。"]
    records = [{"id": f"r{i:04d}", "text": rng.choice(boilerplate) if rng.random() < 0.4 else
                f"{rng.choice(SENTENCES)}{rng.choice(SENTENCES)}第{i}号"} for i in range(900)]
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), "utf-8")
    monkeypatch.setattr(run, "RUN_INDEX_MAX_DOCS", 300)
    taken = []
    takes_whole = RunIndex.takes_whole

    def spied(index: RunIndex, hashes: np.ndarray) -> np.ndarray | None:
        crowded_out = takes_whole(index, hashes)
        taken.append(crowded_out is not None and len(crowded_out) > 0)
        return crowded_out

    def labelled(name: str) -> tuple:
        store = LocalStore(name, tmp_path / "data")
        summary = ingest([path], store, FingerprintConfig(tokenizer="rjieba"), IngestOptions(workers=1, batch=40))
        labels = store.labels()
        store.close()
        return labels, summary.duplicates, summary.crowded_keys

    monkeypatch.setattr(RunIndex, "takes_whole", spied)
    whole = labelled("whole")
    assert sum(taken) >= 10
    monkeypatch.setattr(RunIndex, "takes_whole", lambda index, hashes: None)
    assert whole == labelled("one-by-one")
    assert whole[1] > 300 and whole[2][0][1] > 150  # the run crowds keys and labels duplicates


def test_no_record_is_a_peer_through_a_key_it_is_crowded_out_of() -> None:
    keys = KeyLists([["k", "own:0"], ["k", "x"], ["k", "x", "own:2"], ["k", "own:3"]])
    assert batch_peers(keys, keys)[0] == [[], [0], [0, 1], [0, 1, 2]]
    assert batch_peers(keys, keys, key_hashes(["k"]))[0] == [[], [], [1], []]
