"""Exact copies of texts without words, on both stores: a text that normalises to nothing, or to only
punctuation, emoji or stopwords, has no fingerprint to measure and no band keys, yet two exact copies of it
(one content SHA-1) are duplicates (rule 0 of esdedup.match.rule), and every path says so alike: ingest
labels (in one run and across runs, ``skip`` too), ``dups``, ``similar`` (any path asked for) and
``diversify``."""
from __future__ import annotations

import json
import uuid

import pytest

from esdedup import FingerprintConfig
from esdedup.api import similar_to
from esdedup.ingest import IngestOptions, ingest
from esdedup.match.pairs import find_pairs
from esdedup.match.rule import EXACT_COPY
from esdedup.search.diversify import diversify
from esdedup.store.base import Store
from esdedup.store.elastic.store import ElasticStore
from esdedup.store.local import LocalStore
from tests.engines import BACKENDS, server_client

CONFIG = FingerprintConfig(tokenizer="rjieba")
WORDS = "台湾居民明日起持台胞证可通关，无需另行申请签注，出入境手续进一步简化。"
#: id -> text. e1/e2 normalise alike (full-width to half-width), e3/e4, e6/e7 (stopwords alone, long enough
#: to be segmented: a short text is not, and its letters are n-grams) and z1/z2 (nothing left once invisible
#: characters are dropped) are exact copies; e5 and e8 are each alone.
EMPTIES = {"e1": "！！！", "e2": "!!!", "e3": "🙂🙂", "e4": "🙂🙂", "e5": "???", "e6": "的" * 200, "e7": "的" * 200,
           "e8": "。。", "z1": "\u200b\u200b", "z2": "\u200c"}
COPIES = {("e1", "e2"), ("e3", "e4"), ("e6", "e7"), ("z1", "z2")}


@pytest.fixture(params=BACKENDS)
def new_store(request, tmp_path):
    made: list[Store] = []

    def make() -> Store:
        if request.param == "local":
            s: Store = LocalStore(f"c-{uuid.uuid4().hex[:8]}", tmp_path / "data")
        else:
            s = ElasticStore(server_client(request), f"esdedup-empty-{uuid.uuid4().hex[:10]}",
                             replicas=0)
        made.append(s)
        return s

    yield make
    for s in made:
        s.drop()


def _jsonl(path, docs: dict[str, str]):
    path.write_text("".join(json.dumps({"id": k, "text": v}, ensure_ascii=False) + "\n" for k, v in docs.items()),
                    "utf-8")
    return path


def _labels(store: Store, ids) -> dict[str, tuple[str | None, str | None]]:
    return {i: (d.cluster_id, d.duplicate_of) for i, d in store.get(sorted(ids)).items()}


def _expected_labels() -> dict[str, tuple[str, str | None]]:
    out: dict[str, tuple[str, str | None]] = {i: (i, None) for i in EMPTIES}
    out.update({"w1": ("w1", None), "w2": ("w1", "w1")})
    for a, b in COPIES:
        out[b] = (a, a)
    return out


def test_exact_copies_without_words_are_duplicates_on_every_path(new_store, tmp_path):
    store = new_store()
    path = _jsonl(tmp_path / "a.jsonl", {**EMPTIES, "w1": WORDS, "w2": WORDS})
    s = ingest([path], store, CONFIG, IngestOptions(workers=1, dead_letter=tmp_path / "dl.jsonl"))
    assert s.ok and s.balanced and s.indexed == len(EMPTIES) + 2 and s.duplicates == len(COPIES) + 1, s
    store.refresh()
    assert _labels(store, [*EMPTIES, "w1", "w2"]) == _expected_labels()

    pairs = list(find_pairs(store))
    assert {(p.a, p.b) for p in pairs} == COPIES | {("w1", "w2")}
    assert all(p.decided_by == EXACT_COPY and p.hamming == 0 and p.cosine is None for p in pairs if p.a != "w1")

    for kwargs in ({}, {"knn": True}):  # the kNN path has no vector for such a text: its copies answer anyway
        got = similar_to(store, text="!!!", **kwargs)
        assert got.query["empty"] and got.query["path"] == "content_sha1"
        assert [m["id"] for m in got.matches] == ["e1", "e2"]
        assert {m["decided_by"] for m in got.matches} == {EXACT_COPY}
    assert [m["id"] for m in similar_to(store, doc_id="e2").matches] == ["e1"]  # never itself
    assert [m["id"] for m in similar_to(store, doc_id="e5").matches] == []
    assert [m["id"] for m in similar_to(store, text="\u2060").matches] == ["z1", "z2"]
    assert similar_to(store, text="？？？").matches[0]["id"] == "e5"

    hits = [{"_id": k, "_source": {"text": v}} for k, v in EMPTIES.items()]
    kept = [h["_id"] for h in diversify(hits, config=CONFIG)]
    assert kept == [i for i in EMPTIES if i not in {b for _, b in COPIES}]
    demoted = {h["_id"]: h.get("_duplicate_of") for h in diversify(hits, config=CONFIG, mode="demote")}
    assert {b: a for a, b in COPIES} == {k: v for k, v in demoted.items() if v}


def test_a_later_run_finds_the_stored_copies_and_skip_skips_them(new_store, tmp_path):
    """The second run finds the first run's texts without words in the store (no keys: by content SHA-1)."""
    store = new_store()
    opts = IngestOptions(workers=1, dead_letter=tmp_path / "dl.jsonl")
    first = {k: v for k, v in EMPTIES.items() if k not in {b for _, b in COPIES}}
    assert ingest([_jsonl(tmp_path / "a.jsonl", first)], store, CONFIG, opts).ok
    store.refresh()
    later = {b: EMPTIES[b] for _, b in COPIES}
    s = ingest([_jsonl(tmp_path / "b.jsonl", later)], store, CONFIG, opts)
    assert s.ok and s.duplicates == len(COPIES), s
    store.refresh()
    assert _labels(store, EMPTIES) == {k: v for k, v in _expected_labels().items() if k in EMPTIES}

    other = new_store()
    s = ingest([_jsonl(tmp_path / "c.jsonl", EMPTIES)], other, CONFIG,
               IngestOptions(workers=1, on_duplicate="skip", dead_letter=tmp_path / "dl2.jsonl"))
    assert s.ok and s.balanced and s.skipped == len(COPIES), s
    other.refresh()
    assert sorted(other.get(sorted(EMPTIES))) == sorted(set(EMPTIES) - {b for _, b in COPIES})


@pytest.mark.es
def test_search_diversified_drops_stored_copies_without_words(es_client, tmp_path):
    """On a real node the hits carry their stored ``dedup.empty`` and ``dedup.content_sha1``: the later copy
    of each text without words is dropped, the texts that are alone are kept."""
    from esdedup.search.paging import search_diversified

    store = ElasticStore(es_client, f"esdedup-empty-{uuid.uuid4().hex[:10]}", replicas=0)
    try:
        assert ingest([_jsonl(tmp_path / "a.jsonl", EMPTIES)], store, CONFIG,
                      IngestOptions(workers=1, on_duplicate="index", dead_letter=tmp_path / "dl.jsonl")).ok
        store.refresh()
        body = {"query": {"match_all": {}}, "sort": [{"dedup.seq": "asc"}]}
        resp = search_diversified(es_client, store.name, body, size=len(EMPTIES))
        assert [h["_id"] for h in resp["hits"]["hits"]] == [i for i in EMPTIES if i not in {b for _, b in COPIES}]
    finally:
        store.drop()


def test_texts_written_without_a_content_sha1_are_not_copies_of_each_other(new_store):
    """A caller of `Store.write` may leave the SHA-1 out (""): such texts without words are unknown, not all one
    text, so `dups` pairs none of them; the two with a SHA-1 are still paired."""
    from esdedup.fingerprint.fingerprinter import Fingerprinter
    from esdedup.schema import content_sha1
    from esdedup.store.base import NewDoc

    store = new_store()
    store.open(CONFIG)
    texts = {"u1": "。", "u2": "。", "u3": "？", "k1": "。", "k2": "。"}
    fps = Fingerprinter(CONFIG).fingerprint_many(list(texts.values()))
    assert all(fp.empty for fp in fps)
    sha1 = {k: content_sha1("。") if k.startswith("k") else "" for k in texts}
    assert all(r.ok for r in store.write(NewDoc(k, fp, {"text": t}, sha1[k]) for (k, t), fp in zip(texts.items(), fps)))
    store.refresh()
    assert {(p.a, p.b) for p in find_pairs(store)} == {("k1", "k2")}
