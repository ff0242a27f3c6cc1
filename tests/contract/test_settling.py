"""Settling (`esdedup.ingest.settle`) and the label merges under it, tested directly on both stores: documents
written by writers that could not see each other end in one cluster, represented by the earliest; ``skip``
deletes the later one. On Elasticsearch the merges of `esdedup.store.elastic.labels` follow a root that another
writer already merged elsewhere, and leave a document changed since it was read as it is."""
from __future__ import annotations

import uuid

import pytest

from esdedup import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprinter
from esdedup.ingest.labels import NearDuplicates
from esdedup.ingest.runindex import ClusterRoots
from esdedup.ingest.settle import Settler, settle_stored
from esdedup.match.thresholds import Thresholds
from esdedup.schema import content_sha1
from esdedup.store.base import NewDoc
from esdedup.store.elastic import labels as elastic_labels
from esdedup.store.elastic.store import ElasticStore
from esdedup.store.local import LocalStore

CONFIG = FingerprintConfig(tokenizer="rjieba")
BASE = "国家统计局今天发布数据显示，前三季度经济运行总体平稳，消费对增长的贡献率持续提高，就业形势保持稳定。"
TEXTS = {"a": BASE, "b": BASE.replace("今天", "今日"), "c": BASE.replace("持续", "不断"),
         "d": BASE.replace("稳定", "平稳"), "z": "气象台发布暴雨黄色预警，预计未来二十四小时东部地区将出现大到暴雨。"}
SEQ = {doc_id: i for i, doc_id in enumerate(sorted(TEXTS), 1)}


@pytest.fixture(params=["local", pytest.param("es", marks=pytest.mark.es)])
def store(request, tmp_path):
    if request.param == "local":
        s = LocalStore(f"settle-{uuid.uuid4().hex[:8]}", tmp_path / "data")
    else:
        s = ElasticStore(request.getfixturevalue("es_client"), f"esdedup-settle-{uuid.uuid4().hex[:10]}",
                         shards=1, replicas=0)
    s.open(CONFIG)
    yield s
    s.drop()


FPS = dict(zip(TEXTS, Fingerprinter(CONFIG).fingerprint_many(list(TEXTS.values()))))


def _write(store, ids, roots: dict[str, str] | None = None) -> None:
    """Each document its own cluster (as a writer that saw none of the others writes it), unless ``roots``
    names its representative."""
    roots = roots or {}
    docs = []
    for doc_id in ids:
        root = roots.get(doc_id, doc_id)
        docs.append(NewDoc(doc_id, FPS[doc_id], {"id": doc_id, "text": TEXTS[doc_id]}, content_sha1(TEXTS[doc_id]),
                           cluster_id=root, duplicate_of=None if root == doc_id else root, seq=SEQ[doc_id],
                           cluster_seq=SEQ[root]))
    assert all(r.ok for r in store.write(docs))
    store.refresh()


def _labels(store) -> dict[str, tuple[str | None, str | None]]:
    store.refresh()  # Elasticsearch reads by id through a search
    return {d.id: (d.cluster_id, d.duplicate_of) for d in store.get(list(TEXTS)).values()}


def _settler(store) -> Settler:
    return Settler(store, CONFIG, NearDuplicates(CONFIG, Thresholds.from_config(CONFIG)), ClusterRoots())


def test_near_duplicates_written_apart_are_joined_under_the_earliest(store):
    _write(store, "abz")
    settled = _settler(store).settle([("b", FPS["b"]), ("z", FPS["z"])])
    assert settled.relabelled == 1 and not settled.gone
    assert _labels(store) == {"a": ("a", None), "b": ("a", "a"), "z": ("z", None)}
    assert _settler(store).settle([("a", FPS["a"]), ("b", FPS["b"])]).relabelled == 0  # settled: nothing moves


def test_a_later_writers_cluster_joins_whole(store):
    """``c`` and ``d`` were written as one cluster under ``c``; settling ``a`` moves both under ``a``."""
    _write(store, "a")
    _write(store, "cd", roots={"d": "c"})
    roots, relabelled = settle_stored(store, CONFIG, Thresholds.from_config(CONFIG), [("a", SEQ["a"], FPS["a"])])
    assert roots == {"a": (SEQ["a"], "a")} and relabelled == 2
    assert _labels(store) == {"a": ("a", None), "c": ("a", "a"), "d": ("a", "a")}


def test_skip_deletes_the_later_of_two_near_duplicates_whoever_wrote_it(store):
    _write(store, "abz")
    settled = _settler(store).settle([("b", FPS["b"]), ("z", FPS["z"])], skip=True)
    assert settled.deleted == {"b": "a"} and not settled.removed
    assert sorted(_labels(store)) == ["a", "z"]
    _write(store, "c")  # another writer's later near-duplicate of the batch's ``a``
    settled = _settler(store).settle([("a", FPS["a"])], skip=True)
    assert settled.removed == {"c": "a"} and sorted(_labels(store)) == ["a", "z"]


# -- the merges of store/elastic/labels.py -----------------------------------------------------------------------

@pytest.fixture
def es_store(es_client):
    s = ElasticStore(es_client, f"esdedup-merges-{uuid.uuid4().hex[:10]}", shards=1, replicas=0)
    s.open(CONFIG)
    yield s
    s.drop()


@pytest.mark.es
def test_a_merge_follows_a_root_another_writer_merged_elsewhere(es_store):
    """``b`` (with its member ``c``) was merged under ``a`` by another writer, but ``c`` still carries ``b``
    (that writer has not moved it yet); merging ``b`` with ``d`` ends with all four under ``a``."""
    _write(es_store, "abcd", roots={"b": "a", "c": "b"})
    moved = elastic_labels.merge_clusters(es_store.bulk, [[(SEQ["b"], "b"), (SEQ["d"], "d")]])
    assert moved == 2  # c and d
    es_store.refresh()
    assert _labels(es_store) == {"a": ("a", None), "b": ("a", "a"), "c": ("a", "a"), "d": ("a", "a")}
    assert elastic_labels.merge_clusters(es_store.bulk, [[(SEQ["a"], "a"), (SEQ["d"], "d")]]) == 0


@pytest.mark.es
def test_relabel_set_labels_and_members(es_store):
    _write(es_store, "abc")
    assert elastic_labels.relabel(es_store.bulk, {"b": (SEQ["a"], "a"), "a": (SEQ["a"], "a")}) >= 1
    es_store.refresh()
    assert sorted(d.id for d in elastic_labels.members(es_store.bulk, ["a"])) == ["a", "b"]
    assert elastic_labels.set_labels(es_store.bulk, {"c": ("a", "a")}) == 1
    es_store.refresh()
    assert _labels(es_store) == {"a": ("a", None), "b": ("a", "a"), "c": ("a", "a")}


@pytest.mark.es
def test_a_document_changed_since_it_was_read_is_neither_deleted_nor_updated(es_store):
    _write(es_store, "ab")
    read = es_store.get(["a", "b"])
    assert read["a"].version is not None
    _write(es_store, "a")  # written again since it was read
    assert elastic_labels.delete_if_unchanged(es_store.bulk, [read["a"], read["b"]]) == ["b"]
    fresh = es_store.get(["a"])["a"]
    done = elastic_labels.update_dedup_if_unchanged(
        es_store.bulk, {"a": (read["a"], {"cluster_id": "x"})})
    assert done == {}
    done = elastic_labels.update_dedup_if_unchanged(es_store.bulk, {"a": (fresh, {"cluster_id": "x"})})
    assert list(done) == ["a"]
    es_store.refresh()
    assert _labels(es_store) == {"a": ("x", None)}
