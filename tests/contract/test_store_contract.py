"""One contract, two stores: the embedded SQLite store and a real Elasticsearch node must behave alike.

Every test here runs twice (``local`` and ``es``); `test_same_answers_on_both_backends` also checks that
the two give identical pairs and clusters on the same input.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import uuid

import numpy as np
import pytest

from esdedup import FingerprintConfig
from esdedup.errors import ConfigError, ConfigMismatchError, EsdedupError, IndexNotFound
from esdedup.fingerprint.fingerprinter import Fingerprinter
from esdedup.fingerprint.minhash import lsh_keys
from esdedup.ingest import IngestOptions, ingest
from esdedup.ingest import run as ingest_module
from esdedup.match.clusters import clusters
from esdedup.match.lookup import probe_for, similar, similar_knn
from esdedup.match.measures import minhash_estimates as short_scores
from esdedup.match.pairs import find_pairs
from esdedup.match.rule import is_duplicate
from esdedup.match.thresholds import ThresholdOverrides, Thresholds
from esdedup.schema import META_KEY, content_sha1, dedup_members, meta_for
from esdedup.store.base import NewDoc, Store, shared_keys
from esdedup.store.elastic.store import ElasticStore
from esdedup.store.local import LocalStore
from tests.corpus import make_corpus
from tests.engines import BACKENDS, server_client

CONFIG = FingerprintConfig(tokenizer="rjieba")
#: The default stores no vector (strategy auto: the rule never reads it); kNN lookups need one.
KNN_CONFIG = CONFIG.replace(vector_index="int8_flat")


def _local(tmp_path) -> Store:
    return LocalStore(f"c-{uuid.uuid4().hex[:8]}", tmp_path / "data")


@pytest.fixture(params=BACKENDS)
def new_store(request, tmp_path):
    """A factory of fresh, unopened stores of one backend; everything made is dropped afterwards."""
    made: list[Store] = []

    def make() -> Store:
        if request.param == "local":
            s = _local(tmp_path)
        else:
            client = server_client(request)
            s = ElasticStore(client, f"esdedup-contract-{uuid.uuid4().hex[:10]}", shards=2, replicas=0)
        made.append(s)
        return s

    yield make
    for s in made:
        s.drop()


@pytest.fixture(scope="module")
def corpus():
    docs, planted = make_corpus(300, 60, seed=11)
    fper = Fingerprinter(CONFIG)
    fps = fper.fingerprint_many([d["text"] for d in docs])
    return docs, planted, fps


@pytest.fixture(scope="module")
def knn_fps(corpus):
    """The corpus's fingerprints under `KNN_CONFIG`: with a stored vector every text is segmented."""
    return Fingerprinter(KNN_CONFIG).fingerprint_many([d["text"] for d in corpus[0]])


def _write(store: Store, docs, fps) -> None:
    results = list(store.write(NewDoc(d["id"], fp, {"id": d["id"], "text": d["text"]}, content_sha1(d["text"]))
                               for d, fp in zip(docs, fps)))
    assert all(r.ok for r in results), [r for r in results if not r.ok][:3]
    assert sorted(r.id for r in results) == sorted(d["id"] for d in docs)
    store.refresh()


def test_open_creates_then_checks_config(new_store):
    store = new_store()
    with pytest.raises(IndexNotFound):
        store.open(None, create=False)
    assert store.open(CONFIG).created is True
    assert store.open(CONFIG).created is False
    assert store.open(None).config.identity() == CONFIG.identity()
    with pytest.raises(ConfigMismatchError) as err:
        store.open(CONFIG.replace(hamming_k=5))
    assert "hamming_k" in str(err.value)


def test_write_count_get_and_overwrite(new_store, corpus, knn_fps):
    docs, fps = corpus[0], knn_fps
    store = new_store()
    store.open(KNN_CONFIG)  # with the vector, to check it round-trips
    _write(store, docs[:50], fps[:50])
    assert store.count() == 50
    got = store.get([docs[0]["id"], docs[1]["id"], "missing"])
    assert set(got) == {docs[0]["id"], docs[1]["id"]}
    assert got[docs[0]["id"]].simhash == fps[0].simhash
    assert np.allclose(got[docs[0]["id"]].vector, fps[0].vector, atol=1e-5)
    # Writing the same ids again overwrites: the count does not change and results say "updated".
    again = list(store.write(NewDoc(d["id"], fp, {"text": d["text"]}, "x") for d, fp in zip(docs[:5], fps[:5])))
    assert [r.created for r in again] == [False] * 5
    store.refresh()
    assert store.count() == 50
    assert store.get_source(docs[0]["id"])["text"] == docs[0]["text"]


def test_overwrite_with_new_content_moves_its_keys(new_store, corpus):
    """A document rewritten with other text is found by its new keys only, also when the key index
    was already built before the rewrite (and when it is the newest document)."""
    docs, _, fps = corpus
    store = new_store()
    store.open(CONFIG)
    _write(store, docs[:20], fps[:20])
    store.refresh()
    assert docs[19]["id"] in {h.id for h in store.lookup([probe_for(fps[19], CONFIG)])[0]}
    for victim in (docs[19]["id"], docs[3]["id"]):
        list(store.write([NewDoc(victim, fps[30], {"text": docs[30]["text"]}, "y")]))
        store.refresh()
        old, new = store.lookup([probe_for(fps[19 if victim == docs[19]["id"] else 3], CONFIG),
                                 probe_for(fps[30], CONFIG)])
        assert victim not in {h.id for h in old}
        assert victim in {h.id for h in new}
    assert store.count() == 20


def test_lookup_returns_exactly_the_band_matches(new_store, corpus):
    docs, _, fps = corpus
    store = new_store()
    store.open(CONFIG)
    _write(store, docs, fps)
    probes = [probe_for(fp, CONFIG) for fp in fps[:40]]
    found = store.lookup(probes)
    for i, hits in enumerate(found):
        keys = set(fps[i].bands + fps[i].lsh)
        expected = {d["id"] for d, fp in zip(docs, fps) if keys & set(fp.bands + fp.lsh)}
        assert {h.id for h in hits} == expected
        assert docs[i]["id"] in {h.id for h in hits}


def _bands_shared(probe, fp) -> int:
    """How many bands of ``probe`` match a stored fingerprint (what a band lookup ranks by)."""
    held = {f"band_{i}": {k} for i, k in enumerate(fp.bands)}
    return sum(1 for band, keys in probe.items()
               if set(keys) & (set(fp.lsh) if band.startswith("lsh_") else held.get(band, set())))


def _with_bands_of(fp, donor, bands):
    """``fp`` with the signature rows (hence the LSH keys) of ``donor`` in the LSH ``bands``."""
    rows = CONFIG.minhash_rows
    sig = fp.minhash.copy()
    for b in bands:
        sig[b * rows : (b + 1) * rows] = donor.minhash[b * rows : (b + 1) * rows]
    return dataclasses.replace(fp, minhash=sig, lsh=lsh_keys(sig, CONFIG.minhash_bands, rows))


def test_a_batch_of_probes_gets_what_each_probe_gets_alone(new_store, corpus):
    """One lookup call for many probes (some sharing keys, one whose key a crowd holds, some matching nothing,
    one repeated, one empty) answers each probe as a call for it alone does, on any page of the batched
    search: exactly the documents sharing a band, or the ``limit`` sharing the most bands."""
    docs, _, fps = corpus
    fper = Fingerprinter(CONFIG)
    base = "国务院台办发言人在例行新闻发布会上宣布，台湾居民明日起持台胞证可直接通关，无需另行办理签注。"
    crowd = [{"id": f"crowd{i:02d}", "text": f"{i:02d}号转载：" + base} for i in range(12)]
    # Eight documents sharing two LSH bands each with `tied` (one of them three), no key held by more than two:
    # more candidates than the limit, ranked by the client; written in reverse id order.
    tied = fper.fingerprint("一段只为测试而写的短文，它和别的文字都不一样。")
    others = fper.fingerprint_many([f"第{i}段完全不同的测试文字，编号{i * 7919}。" for i in range(8)])
    picks = [[2 * j, 2 * j + 1] for j in range(7)] + [[14, 15, 0]]
    ties = [({"id": f"tie{j}", "text": f"tie {j}"}, _with_bands_of(o, tied, pick))
            for j, (o, pick) in enumerate(zip(others, picks, strict=True))][::-1]
    stored = docs + crowd + [d for d, _ in ties]
    stored_fps = fps + fper.fingerprint_many([d["text"] for d in crowd]) + [fp for _, fp in ties]
    store = new_store()
    store.open(CONFIG)
    _write(store, stored, stored_fps)
    strangers = fper.fingerprint_many(["完全无关的一句话，谁也不像。", "The quick brown fox jumps over the lazy dog."])
    probe_fps = [*fps[:40], fper.fingerprint(base), *strangers, fps[7], tied]
    probes = [probe_for(fp, CONFIG) for fp in probe_fps] + [{}]
    limit = 5

    def answers() -> list[list[str]]:
        """The ids found for each probe by one call, checked against a call per probe and brute force."""
        ids = [[d.id for d in found] for found in store.lookup(probes, limit=limit)]
        assert ids == [[d.id for d in store.lookup([p], limit=limit)[0]] for p in probes]
        for probe, got in zip(probes, ids, strict=True):
            shared = {d["id"]: n for d, fp in zip(stored, stored_fps, strict=True) if (n := _bands_shared(probe, fp))}
            assert got == sorted(got) and set(got) <= set(shared) and len(got) == min(limit, len(shared))
            assert min((shared[i] for i in got), default=99) >= max((n for i, n in shared.items() if i not in got),
                                                                    default=0)
        return ids

    ids = answers()
    assert len(ids[40]) == limit and all(i.startswith("crowd") for i in ids[40])  # the crowd is cut at the limit
    assert ids[41] == ids[42] == ids[-1] == [] and ids[-3] == ids[7]
    assert ids[-2] == ["tie0", "tie1", "tie2", "tie3", "tie7"]  # tie7 shares 3 bands; ties by id
    assert sum(len(x) > 1 for x in ids[:40]) >= 5  # probes sharing keys with others, not only with themselves
    if isinstance(store, ElasticStore):  # pages smaller than the matches: batches split, crowded probes alone
        for page in (30, 8, 1):
            store.lookup_page = page
            assert [x for x in answers() if len(x) < limit] == [x for x in ids if len(x) < limit]


def test_find_pairs_matches_brute_force(new_store, corpus):
    docs, planted, fps = corpus
    store = new_store()
    store.open(CONFIG)
    _write(store, docs, fps)
    t = Thresholds.from_config(CONFIG)
    got = {(p.a, p.b) for p in find_pairs(store)}
    # Brute force over all pairs that share a band key, with the same rule: band lookups are exact.
    expected = set()
    for (i, a), (j, b) in itertools.combinations(enumerate(fps), 2):
        if set(a.bands + a.lsh) & set(b.bands + b.lsh):
            ham = (a.simhash ^ b.simhash).bit_count()
            cos = float(np.clip(a.vector @ b.vector, 0, 1))
            short = a.lsh != [] and b.lsh != []
            jac = cont = None
            if short:  # the short-text rule: MinHash estimates of n-gram Jaccard and containment
                est_j, est_c = short_scores(a.minhash, a.shingles, b.minhash[None, :], np.array([b.shingles]))
                jac, cont = float(est_j[0]), float(est_c[0])
            if is_duplicate(ham, cos, t, short, jaccard=jac, containment=cont):
                expected.add(tuple(sorted((docs[i]["id"], docs[j]["id"]))))
    assert got == expected
    # And every pair of texts with band keys within Hamming k is among the candidates (the pigeonhole
    # guarantee; texts shorter than short_text_chars have LSH keys only).
    for a, b in itertools.combinations(fps, 2):
        if a.bands and b.bands and (a.simhash ^ b.simhash).bit_count() <= CONFIG.hamming_k:
            assert set(a.bands) & set(b.bands)
    assert {tuple(sorted(p)) for p in planted} & got, "planted variants should be found"


def test_similar_and_knn(new_store, corpus, knn_fps):
    (docs, planted, _), fps = corpus, knn_fps
    store = new_store()
    store.open(KNN_CONFIG)
    _write(store, docs, fps)
    idx = {d["id"]: i for i, d in enumerate(docs)}
    a, b = planted[0]
    matches = similar(store, [fps[idx[b]]], exclude=[b])[0]
    assert a in [m.id for m in matches]
    assert np.allclose(store.get([a])[a].vector, fps[idx[a]].vector, atol=1e-6)
    if getattr(getattr(store, "client", None), "engine", None) == "opensearch":
        # OpenSearch keeps the vector in _source only (no k-NN plugin): kNN lookups are refused, not wrong.
        with pytest.raises(ConfigError, match="kNN lookups are not available on OpenSearch"):
            similar_knn(store, fps[idx[b]], k=5, thresholds=ThresholdOverrides(cosine=None), exclude=b)
        return
    near = similar_knn(store, fps[idx[b]], k=5, thresholds=ThresholdOverrides(cosine=None), exclude=b)
    assert near and near[0].cosine >= max(m.cosine for m in near)
    assert b not in [m.id for m in near]
    assert a in [m.id for m in near]


def test_default_config_stores_no_vector_and_refuses_knn(new_store, corpus):
    docs, planted, fps = corpus
    store = new_store()
    store.open(CONFIG)
    _write(store, docs[:20], fps[:20])
    assert not store.get([docs[0]["id"]])[docs[0]["id"]].vector.any()
    with pytest.raises(ConfigError, match="kNN lookups search the TF vector"):
        similar_knn(store, fps[0], k=5)
    with pytest.raises(ConfigError, match="carry none"):
        store.knn(fps[0].vector, 5)
    # A rule told to judge by the cosine alone could match no stored pair: refused, not silently empty.
    with pytest.raises(ConfigError, match="cosine alone decides.*carry no TF vector"):
        similar(store, [fps[0]], thresholds=Thresholds(hamming_k=3, cosine=0.8))
    assert similar(store, [fps[0]], thresholds=ThresholdOverrides(cosine=None))  # an n-gram test stays on
    # A writer that would send vectors into it is refused up front (its documents would not fit the index).
    with pytest.raises(ConfigMismatchError, match="stores_vector"):
        store.open(KNN_CONFIG)


def test_labels_and_crowded_keys(new_store, corpus):
    docs, _, fps = corpus
    store = new_store()
    store.open(CONFIG)
    # Ten copies of one text crowd every band value they hold.
    _write(store, [{"id": f"same{i}", "text": docs[0]["text"]} for i in range(10)], [fps[0]] * 10)
    crowded = store.crowded_keys(min_count=10, limit=100)
    assert {k for k, _ in crowded} == set(fps[0].bands + fps[0].lsh)  # LSH keys as strings on both stores
    assert all(n == 10 for _, n in crowded)
    groups = dict(shared_keys(store, max_bucket=4))
    assert set(groups) == set(fps[0].bands + fps[0].lsh)
    assert all(len(ids) == 4 for ids in groups.values())
    # In batches: each key once, with its full count, and each member's keys less the crowded ones.
    _write(store, [{"id": f"pair{i}", "text": docs[1]["text"]} for i in range(2)], [fps[1]] * 2)
    store.refresh()
    batches = list(store.key_batches(max_bucket=4))
    found = [(key, n) for b in batches for key, n, _ in b.groups]
    assert sorted(found) == sorted([(k, 10) for k in fps[0].bands + fps[0].lsh] + [(k, 2) for k in fps[1].bands + fps[1].lsh])
    members = {i: ks for b in batches for i, ks in b.keys.items()}
    assert members["pair0"] == members["pair1"] == set(fps[1].bands + fps[1].lsh)
    assert members["same0"] == frozenset()
    assert store.set_labels({"same1": ("same0", "same0")}) == 1
    store.refresh()
    got = store.get(["same1"])["same1"]
    assert (got.cluster_id, got.duplicate_of) == ("same0", "same0")


def test_ingest_labels_and_is_idempotent(new_store, tmp_path, corpus):
    docs, planted, _ = corpus
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs[:200]), "utf-8")
    store = new_store()
    opts = IngestOptions(workers=1, dead_letter=tmp_path / "dl.jsonl")
    first = ingest([path], store, CONFIG, opts)
    assert first.ok and first.balanced and first.indexed == 200 and first.created == 200
    store.refresh()
    second = ingest([path], store, CONFIG, opts)
    # The second run sends nothing: every document is stored with its id, text and labels already.
    assert second.ok and second.balanced and (second.indexed, second.created, second.updated, second.unchanged) == (
        200, 0, 0, 200)
    assert second.duplicates == first.duplicates
    store.refresh()
    assert store.count() == 200


def test_a_document_with_its_dedup_fields_encoded_only_is_written_where_the_store_takes_them(new_store, corpus):
    """A store that takes encoded ``dedup`` fields (`Store.takes_dedup_json`) writes a document that has no
    fingerprint beside them; one that encodes the fields itself refuses it, naming why, and writes nothing."""
    docs, _, fps = corpus
    store = new_store()
    store.open(CONFIG)
    sha1 = content_sha1(docs[0]["text"])
    bare = NewDoc(docs[0]["id"], None, {"text": docs[0]["text"]}, sha1, dedup_json=dedup_members(fps[0], CONFIG, sha1))
    with pytest.raises(ValueError, match="neither a fingerprint nor"):
        NewDoc("x", None, {"text": "x"}, sha1)
    if not store.takes_dedup_json:
        with pytest.raises(ValueError, match="encoded only"):
            list(store.write([bare]))
        assert store.count() == 0
        return
    assert [r.ok for r in store.write([bare])] == [True]
    store.refresh()
    got = store.get([docs[0]["id"]])[docs[0]["id"]]
    assert (got.simhash, got.shingles, got.content_sha1) == (fps[0].simhash, fps[0].shingles, sha1)
    assert np.array_equal(got.minhash, fps[0].minhash)


def test_an_index_mode_ingest_reads_fingerprints_only_where_the_store_encodes_them(
        new_store, tmp_path, corpus, monkeypatch):
    """``index`` mode labels nothing: on a store that takes encoded ``dedup`` fields the workers send back
    each record's SimHash and encoded fields, no fingerprint. The documents are those a Fingerprinter gives,
    and a later run still tells an unchanged record from a new text under a stored id."""
    asked: list[bool] = []

    class Workers(ingest_module.Workers):
        def __init__(self, *args, **kwargs) -> None:
            asked.append(kwargs["fingerprints"])
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(ingest_module, "Workers", Workers)
    docs, _, fps = corpus
    docs, fps = docs[:120], fps[:120]

    def jsonl(name, rows):
        path = tmp_path / name
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
        return path

    store = new_store()
    opts = IngestOptions(workers=2, on_duplicate="index", dead_letter=tmp_path / "dl.jsonl")
    first = ingest([jsonl("one.jsonl", docs)], store, CONFIG, opts)
    assert first.ok and first.balanced and first.indexed == 120
    assert asked == [not store.takes_dedup_json]
    store.refresh()
    got = store.get([d["id"] for d in docs])
    fper = Fingerprinter(CONFIG)
    for d, fp in zip(docs, fps, strict=True):
        g = got[d["id"]]
        assert (g.simhash, g.shingles, g.empty, g.cluster_id) == (fp.simhash, fp.shingles, fp.empty, d["id"])
        assert g.content_sha1 == content_sha1(fper.normalize(d["text"])) and np.array_equal(g.minhash, fp.minhash)
    found = store.lookup([probe_for(fp, CONFIG) for fp in fps[:10]])  # the band keys were written too
    assert all(d["id"] in {c.id for c in cands} for d, cands in zip(docs, found, strict=False))
    changed = {"id": docs[3]["id"], "text": docs[3]["text"] + "（转载）"}
    second = ingest([jsonl("two.jsonl", [*docs[:3], changed])], store, CONFIG, opts)
    assert second.ok and (second.unchanged, second.replaced, second.replaced_ids) == (3, 1, [docs[3]["id"]])


def test_clusters_are_merged_relabelled_and_documents_deleted_only_as_read(new_store, corpus):
    """The primitives concurrent writers settle labels with (`merge_clusters`, `members`, `relabel`,
    `delete_if_unchanged`), alike on both stores."""
    docs, _, fps = corpus
    store = new_store()
    store.open(CONFIG)
    labels = {"a": (1, "a"), "b": (1, "a"), "c": (3, "c"), "d": (3, "c")}
    seqs = {"a": 1, "b": 2, "c": 3, "d": 4}
    list(store.write(NewDoc(i, fps[k], {"id": i, "text": docs[k]["text"]}, content_sha1(docs[k]["text"]),
                            root, None if root == i else root, seq=seqs[i], cluster_seq=cs)
                     for k, (i, (cs, root)) in enumerate(labels.items())))
    store.refresh()
    assert store.merge_clusters([{(3, "c"), (1, "a")}]) == 2
    store.refresh()
    got = store.get(list(labels))
    assert {i: (d.cluster_id, d.cluster_seq, d.duplicate_of, d.seq) for i, d in got.items()} == {
        "a": ("a", 1, None, 1), "b": ("a", 1, "a", 2), "c": ("a", 1, "a", 3), "d": ("a", 1, "a", 4)}
    assert sorted(d.id for d in store.members(["a"])) == ["a", "b", "c", "d"] and store.members(["c"]) == []
    assert store.relabel({"d": (4, "d")}) == 1
    store.refresh()
    assert (store.get(["d"])["d"].cluster_id, store.get(["d"])["d"].duplicate_of) == ("d", None)
    b = store.get(["b"])["b"]
    assert store.delete_if_unchanged([b]) == ["b"]
    assert store.delete_if_unchanged([b]) == []  # gone (or changed) since it was read: nothing happens
    store.refresh()
    assert store.count() == 3


def _labels(store: Store, ids) -> dict:
    store.refresh()
    return {i: (d.cluster_id, d.duplicate_of) for i, d in store.get(list(ids)).items()}


def test_a_new_text_under_a_stored_id_is_counted_reported_and_labelled_again(new_store, tmp_path):
    """The same id with a new text in a later run replaces the stored document: the summary counts and names
    it, and its former near-duplicates are labelled again, so none stays the duplicate of a text that is gone."""
    docs, planted = make_corpus(4, 2, seed=12)
    by_id = {d["id"]: d for d in docs}
    (a, b), (c, e) = planted  # b duplicates a, e duplicates c

    def jsonl(name, rows):
        path = tmp_path / name
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
        return path

    store = new_store()
    first = ingest([jsonl("one.jsonl", docs)], store, CONFIG, IngestOptions(workers=1))
    assert first.ok and first.replaced == 0
    assert _labels(store, [b])[b] == (a, a)
    # Run two: a now holds the text of c's cluster (a copy of e with a few words changed).
    new_a = {"id": a, "text": by_id[e]["text"] + "（转载）"}
    second = ingest([jsonl("two.jsonl", [new_a, by_id[b]])], store, CONFIG, IngestOptions(workers=1))
    assert second.ok and (second.replaced, second.replaced_ids) == (1, [a])
    assert (second.created, second.updated) == (0, 2)
    labels = _labels(store, by_id)
    assert labels[b] == (b, None)  # no longer a duplicate: a's old text is gone, b represents itself
    root = labels[c][0]
    assert labels[a] == (root, root) and labels[e][0] == root  # a joined c's cluster
    # The same text again changes nothing.
    third = ingest([jsonl("two.jsonl", [new_a])], store, CONFIG, IngestOptions(workers=1))
    assert third.replaced == 0 and _labels(store, by_id) == labels


@pytest.mark.es
def test_same_answers_on_both_backends(tmp_path, es_client, corpus):
    docs, _, _ = corpus
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), "utf-8")
    local = _local(tmp_path)
    es = ElasticStore(es_client, f"esdedup-contract-{uuid.uuid4().hex[:10]}", shards=2, replicas=0)
    try:
        answers = []
        for store in (local, es):
            summary = ingest([path], store, CONFIG, IngestOptions(workers=1, dead_letter=tmp_path / "dl.jsonl"))
            assert summary.ok and summary.balanced
            store.refresh()
            # A pair's cosine is None where the index stores no vectors (the default config here).
            pairs = sorted((p.a, p.b, p.hamming, None if p.cosine is None else round(p.cosine, 4))
                           for p in find_pairs(store))
            labels = {i: (d.cluster_id, d.duplicate_of) for i, d in store.get([d["id"] for d in docs]).items()}
            answers.append((pairs, clusters((a, b) for a, b, _, _ in pairs), labels))
        assert answers[0][0] == answers[1][0]
        assert answers[0][1] == answers[1][1]
        assert answers[0][2] == answers[1][2]
        assert answers[0][0], "the corpus has near-duplicates"
    finally:
        local.drop()
        es.drop()


def test_local_store_of_an_older_schema_is_refused_clearly(tmp_path):
    """A collection written by the first esdedup (no docs.seq column, MinHash v1 keys) is not read as if its
    fingerprints were comparable: opening it names the cause and the way out."""
    import sqlite3

    from esdedup.errors import StoreError

    data = tmp_path / "data"
    data.mkdir()
    db = sqlite3.connect(data / "old.sqlite")
    db.execute("CREATE TABLE docs (id TEXT PRIMARY KEY, simhash TEXT NOT NULL, vector BLOB, tokens INTEGER, "
               "chars INTEGER, empty INTEGER NOT NULL, content_sha1 TEXT, cluster_id TEXT, duplicate_of TEXT, "
               "source TEXT) WITHOUT ROWID")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="older esdedup .*ingest the documents again"):
        LocalStore("old", data).open(None, create=False)


def _store_config_dict(store: Store, config: dict) -> None:
    """Overwrite the config a store recorded when it was created (as an older esdedup would have left it)."""
    meta = {**meta_for(CONFIG)[META_KEY], "config": config}
    if isinstance(store, LocalStore):
        import sqlite3

        with sqlite3.connect(store.path) as db:
            db.execute("UPDATE meta SET value = ? WHERE key = ?", (json.dumps(meta), META_KEY))
    else:
        store.client.indices.put_mapping(index=store.name, meta={META_KEY: meta})


def test_a_schema_3_index_is_refused_clearly(new_store):
    """An index written under schema 3 (32-bit MinHash values, LSH keys as keyword strings in 32 fields, a
    vector in every document) is not read or written as if its fields meant what schema 4's do."""
    store = new_store()
    store.open(CONFIG)
    _store_config_dict(store, {**CONFIG.to_dict(), "schema": 3, "vector_index": "int8_flat"})
    for config in (None, CONFIG):
        with pytest.raises(EsdedupError, match=r"config schema 3 is not supported .*ingest the documents .*again"):
            store.open(config, create=False)


def test_a_schema_4_index_is_refused_clearly(new_store):
    """An index written under schema 4 (every text segmented: a short text's SimHash, term count and empty flag
    came from its terms) is not read or written as if its fields meant what schema 5's do."""
    store = new_store()
    store.open(CONFIG)
    _store_config_dict(store, {**CONFIG.to_dict(), "schema": 4})
    for config in (None, CONFIG):
        with pytest.raises(EsdedupError, match=r"config schema 4 is not supported .*ingest the documents .*again"):
            store.open(config, create=False)


def test_crowded_lookups_keep_the_nearest_candidates_and_say_they_were_cut(new_store):
    """Among 60 near-identical texts, a lookup cut at 10 candidates keeps the exact copy of the probe (it
    shares every key), and `similar` says the candidates were cut (issue: the exact copy was lost when the
    cut was in id order)."""
    fper = Fingerprinter(CONFIG)
    base = "国务院台办发言人在例行新闻发布会上宣布，台湾居民明日起持台胞证可直接通关，无需另行办理签注。"
    texts = [f"{i:03d}号转载：" + base for i in range(60)]
    texts.append(base)  # the exact copy of the probe, with the largest id
    ids = [f"a{i:03d}" for i in range(60)] + ["z-copy"]
    store = new_store()
    store.open(CONFIG)
    fps = fper.fingerprint_many(texts)
    assert all(r.ok for r in store.write(NewDoc(i, fp, {"text": t}, content_sha1(t))
                                         for i, t, fp in zip(ids, texts, fps)))
    store.refresh()
    probe_fp = fper.fingerprint(base)
    found = store.lookup([probe_for(probe_fp, CONFIG)], limit=10)[0]
    assert len(found) == 10 and "z-copy" in {d.id for d in found}
    answer = similar(store, [probe_fp], top=5, limit=10)[0]
    assert answer.truncated and answer[0].id == "z-copy" and answer[0].jaccard == 1.0
    complete = similar(store, [probe_fp], top=5, limit=1000)[0]
    assert not complete.truncated and complete[0].id == "z-copy"
