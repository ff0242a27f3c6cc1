"""Exact copies in a crowd, on both stores: among 2,500 near-identical texts (they differ in punctuation
alone), which share their band keys with one another as exact copies do, a lookup whose candidates are cut (it keeps those sharing the most keys)
still finds a text's exact copies, looked up by their content SHA-1, and ranks them first, whichever path is
asked (bands, kNN, the CLI)."""
from __future__ import annotations

import json
import random
import uuid

import pytest

from esdedup import FingerprintConfig
from esdedup.api import similar_to
from esdedup.ingest import IngestOptions, ingest
from esdedup.match.pairs import find_pairs, scored_pairs
from esdedup.store.base import Store
from esdedup.store.elastic.store import ElasticStore
from esdedup.store.local import LocalStore
from tests.reliability import make_text, run_cli

#: A vector for the kNN path; brute force on the embedded store, int8 on Elasticsearch.
CONFIG = FingerprintConfig(tokenizer="rjieba", vector_index="int8_flat")
#: Ids sorting after every other: a lookup that cuts ties by id would leave them out.
COPIES = ("zz-copy-1", "zz-copy-2")


@pytest.fixture(params=["local", pytest.param("es", marks=pytest.mark.es)])
def crowd(request, tmp_path):
    """A store holding 2,500 texts that differ from one another in their punctuation, and two exact copies of
    one of them (``n01234``), each its own cluster (``index``); with the CLI's options naming it."""
    rng = random.Random(8)
    base = make_text(rng, clauses=(8, 10))
    # Texts that differ in their punctuation alone: other normalised texts (other SHA-1s), the same words, so
    # the same band keys as the copies; a lookup cut among them keeps the first by id or index order.
    punct = "，。！？；、"
    texts: dict[str, None] = {}
    while len(texts) < 2500:  # each text once: the copies of n01234 are the two planted
        texts["".join(rng.choice(punct) if c in punct else c for c in base)] = None
    docs = [{"id": f"n{i:05d}", "text": t} for i, t in enumerate(texts)]
    docs += [{"id": c, "text": docs[1234]["text"]} for c in COPIES]
    path = tmp_path / "crowd.jsonl"
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), "utf-8")
    name = f"esdedup-crowd-{uuid.uuid4().hex[:8]}"
    if request.param == "local":
        store: Store = LocalStore(name, tmp_path / "data")
        where = ["--data-dir", str(tmp_path / "data")]
    else:
        store = ElasticStore(request.getfixturevalue("es_client"), name, replicas=0)
        where = ["--es", request.getfixturevalue("es_url")]
    s = ingest([path], store, CONFIG, IngestOptions(workers=1, on_duplicate="index"))
    assert s.ok and s.indexed == len(docs), s
    store.refresh()
    yield store, where, docs[1234]["text"]
    store.drop()


def test_exact_copies_come_first_however_crowded_the_bands(crowd):
    store, where, text = crowd
    by_id = similar_to(store, doc_id="n01234", top=3)
    assert by_id.truncated  # the band lookup was cut: the copies were found by their SHA-1
    assert [m["id"] for m in by_id.matches[:2]] == list(COPIES)
    assert all(m["hamming"] == 0 for m in by_id.matches[:2])
    by_text = similar_to(store, text=text, top=3)
    assert {m["id"] for m in by_text.matches} == {"n01234", *COPIES}
    by_knn = similar_to(store, doc_id="n01234", top=3, knn=True)
    assert [m["id"] for m in by_knn.matches[:2]] == list(COPIES)
    r = run_cli("similar", "--index", store.name, *where, "--id", "n01234", "--top", "3", "--json")
    assert r.returncode == 0, r.stderr
    assert [m["id"] for m in json.loads(r.stdout)["matches"][:2]] == list(COPIES)


def test_ingest_joins_a_new_text_with_its_exact_copies_however_crowded_the_bands(crowd, tmp_path):
    """A later ingest's lookup is cut as well (it keeps the candidates sharing the most keys): the new text
    joins the clusters of its exact copies all the same."""
    store, _, text = crowd
    path = tmp_path / "new.jsonl"
    path.write_text(json.dumps({"id": "new", "text": text}, ensure_ascii=False) + "\n", "utf-8")
    assert ingest([path], store, CONFIG, IngestOptions(workers=1)).ok
    store.refresh()
    got = store.get(["new", "n01234", *COPIES])
    assert {d.cluster_id for d in got.values()} == {got["new"].cluster_id}, {i: d.cluster_id for i, d in got.items()}


def test_dups_pairs_exact_copies_however_crowded_the_bands(crowd):
    """All-pairs search caps each crowded band value at ``max_bucket`` documents, and every key the copies
    share is crowded: their pairs come from grouping every stored text by its content SHA-1, once each (and
    so do the candidates `eval` sweeps)."""
    store, where, _ = crowd
    copies = {("n01234", COPIES[0]), ("n01234", COPIES[1]), COPIES}
    for in_memory in (True, False):
        pairs = [(p.a, p.b) for p in find_pairs(store, max_bucket=20, in_memory=in_memory)]
        assert copies <= set(pairs), in_memory
        assert len(pairs) == len(set(pairs)), in_memory  # each pair once
        # eval's candidates: the same pairs, measured
        assert copies <= {(p.a, p.b) for p in scored_pairs(store, max_bucket=20, in_memory=in_memory)}, in_memory
    r = run_cli("dups", "--index", store.name, *where, "--max-bucket", "20")
    assert r.returncode == 0, r.stderr
    got = {(p["a"], p["b"]) for p in map(json.loads, r.stdout.splitlines())}
    assert copies <= got
