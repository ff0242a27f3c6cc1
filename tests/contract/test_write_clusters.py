"""``dups --write-clusters`` on both stores: it joins the stored clusters of each connected set of pairs the
way concurrent writers join clusters (the earliest-written root represents each, only the labels that change
are written, and a run that changes nothing says 0), also while an ingest writes the same index. And exact
copies are found by their content SHA-1 where a crowd of near-identical texts cuts a lookup's candidates."""
from __future__ import annotations

import hashlib
import json
import random
import subprocess
import sys
import uuid
from collections import defaultdict
from pathlib import Path

import pytest

from esdedup import FingerprintConfig
from esdedup.api import all_pairs
from esdedup.ingest import IngestOptions, ingest
from esdedup.match.clusters import clusters
from esdedup.store.base import Store
from esdedup.store.elastic.store import ElasticStore
from esdedup.store.local import LocalStore
from tests.corpus import make_variant
from tests.reliability import REPO_ROOT, cli_env, last_json, make_text, run_cli
from tests.writers import inconsistencies

CONFIG = FingerprintConfig(tokenizer="rjieba")


@pytest.fixture(params=["local", pytest.param("es", marks=pytest.mark.es)])
def backend(request, tmp_path):
    """(kind, a function that opens the store of a name afresh, the CLI's options naming where it is, and
    the data folder or the server's URL)."""
    made: list[Store] = []
    data = tmp_path / "data"
    es_url = request.getfixturevalue("es_url") if request.param == "es" else None

    def store(name: str) -> Store:
        s: Store = (LocalStore(name, data) if es_url is None
                    else ElasticStore(request.getfixturevalue("es_client"), name, replicas=0))
        made.append(s)
        return s

    where = ["--data-dir", str(data)] if es_url is None else ["--es", es_url]
    yield request.param, store, where, str(data) if es_url is None else es_url
    if made:
        made[-1].drop()


def _groups(n: int, seed: int = 5, size: int = 5) -> tuple[list[dict[str, str]], list[set[str]]]:
    """``n`` groups of near-duplicates (a text and ``size`` - 1 variants), shuffled, with ids that do not
    follow the order they are written in (so the smallest id is seldom the earliest written)."""
    rng = random.Random(seed)
    docs, groups = [], []
    for g in range(n):
        base = make_text(rng)
        ids = [hashlib.sha1(f"{seed}-{g}-{k}".encode()).hexdigest()[:10] for k in range(size)]
        texts = [base] + [make_variant(rng, base) for _ in range(size - 1)]
        docs += [{"id": i, "text": t} for i, t in zip(ids, texts, strict=True)]
        groups.append(set(ids))
    rng.shuffle(docs)
    return docs, groups


def _jsonl(path: Path, docs: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), "utf-8")
    return path


def _labels(store: Store) -> dict[str, dict]:
    store.refresh()
    return {d.id: {"cluster_id": d.cluster_id, "duplicate_of": d.duplicate_of, "seq": d.seq,
                   "cluster_seq": d.cluster_seq} for batch in store.scan() for d in batch}


def _split(store: Store, labels: dict[str, dict]) -> list[set[str]]:
    """The cluster ids of each connected set of pairs that `dups` finds, where there are two or more."""
    ids: dict[str, set[str]] = defaultdict(set)
    for doc, root in clusters(list(all_pairs(store).pairs)).items():
        ids[root].add(labels[doc]["cluster_id"])
    return [v for v in ids.values() if len(v) > 1]


def test_write_clusters_keeps_the_earliest_representative_and_writes_only_what_changes(backend, tmp_path):
    kind, open_store, where, _ = backend
    name = f"esdedup-wc-{uuid.uuid4().hex[:8]}"
    docs, groups = _groups(40)
    store = open_store(name)
    # Every document its own cluster: dups has every group to join.
    s = ingest([_jsonl(tmp_path / "a.jsonl", docs)], store, CONFIG, IngestOptions(workers=1, on_duplicate="index"))
    assert s.ok and s.indexed == len(docs), s
    before = _labels(store)
    report = all_pairs(store, write_clusters=True)
    after = _labels(store)
    assert inconsistencies(after) == []  # the earliest-written member represents its cluster, cluster_seq its
    assert _split(store, after) == []
    for g in groups:
        earliest = min(g, key=lambda i: (before[i]["seq"], i))
        assert {after[i]["cluster_id"] for i in g} == {earliest}
        assert after[earliest] == before[earliest]  # the representative's own labels did not move
    # Each group's members but the earliest changed; nothing else was written.
    assert report.labels_written == sum(len(g) - 1 for g in groups)
    assert all_pairs(store, write_clusters=True).labels_written == 0
    assert _labels(store) == after
    # The CLI says so, 0 included, as text and in JSON.
    r = run_cli("dups", "--index", name, *where, "--write-clusters", "--format", "table")
    assert r.returncode == 0, r.stderr
    assert "cluster labels written: 0" in r.stderr
    r = run_cli("dups", "--index", name, *where, "--write-clusters", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["labels_written"] == 0 and out["clusters"] == len(groups) and len(out["pairs"]) >= len(groups) * 4
    r = run_cli("dups", "--index", name, *where, "--json")
    assert json.loads(r.stdout)["labels_written"] is None


#: One ingest of a file in a process of its own (small batches, so that many batches meet the dups runs).
_WRITER = """
import json, sys
from esdedup.api import open_store
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.ingest import IngestOptions, ingest
where, name, path, mode = sys.argv[1:5]
store = open_store(name, es_url=where) if where.startswith("http") else open_store(name, data_dir=where)
s = ingest([path], store, FingerprintConfig(tokenizer="rjieba"), IngestOptions(workers=1, batch=16, on_duplicate=mode))
print(json.dumps(s.to_dict()))
"""


def test_write_clusters_beside_an_ingest_joins_clusters_as_writers_do(backend, tmp_path):
    """Half the groups stored as clusters of one document each (``index``), the other half ingested (``label``)
    in another process while ``dups --write-clusters`` runs again and again: at the end no connected set of
    pairs has two cluster ids, no document points at a document that no longer represents its cluster, and
    every cluster is represented by its earliest member."""
    kind, open_store, _, where = backend
    name = f"esdedup-wcw-{uuid.uuid4().hex[:8]}"
    docs, _ = _groups(1000 if kind == "local" else 200, seed=9)
    half = len(docs) // 2
    first, second = _jsonl(tmp_path / "a.jsonl", docs[:half]), _jsonl(tmp_path / "b.jsonl", docs[half:])
    store = open_store(name)
    assert ingest([first], store, CONFIG, IngestOptions(workers=1, on_duplicate="index")).ok
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, where, name, str(second), "label"], cwd=REPO_ROOT,
                              env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    runs = written = 0
    try:
        while writer.poll() is None:
            beside = open_store(name)
            written += all_pairs(beside, write_clusters=True).labels_written or 0
            beside.close()
            runs += 1
        out, err = writer.communicate(timeout=600)
    finally:
        if writer.poll() is None:
            writer.kill()
    assert writer.returncode == 0, err[-3000:]
    assert last_json(out)["indexed"] == len(docs) - half
    assert runs >= 2 and written > 0, (runs, written)
    labels = _labels(store)
    assert set(labels) == {d["id"] for d in docs}
    assert _split(store, labels) == []
    assert [i for i, d in labels.items() if labels[d["cluster_id"]]["cluster_id"] != d["cluster_id"]] == []
    assert inconsistencies(labels) == []
