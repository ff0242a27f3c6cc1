"""An `Ingester.add` that fails leaves nothing behind, in the Ingester's memory or in the store, on the embedded
store and on a real Elasticsearch node alike; and an article no store can carry (a lone surrogate anywhere,
fields that cannot be encoded) is refused with a reason by both, as a reader refuses such a record in a file.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from esdedup.fingerprint.config import FingerprintConfig
from esdedup.ingest import Ingester, IngestOptions, ingest
from esdedup.store.base import Store
from esdedup.store.local import LocalStore

CONFIG = FingerprintConfig(tokenizer="rjieba")
TEXT = "台湾居民明日起持台胞证可通关，无需另行申请签注，出入境手续更加便利，旅客可以直接前往口岸办理。"
NEAR = TEXT + "！"

_circular: dict = {}
_circular["self"] = _circular

#: Articles no store can carry, each with the start of the reason it fails with.
UNCARRIED = {
    "text": ({"text": TEXT + "\ud800"}, "text has an unpaired surrogate"),
    "id": ({"text": TEXT, "id": "a\udc00"}, "id has an unpaired surrogate"),
    "title": ({"text": TEXT, "title": "标题\ud83d"}, "title has an unpaired surrogate"),
    "field": ({"text": TEXT, "url": "https://a.example/\udfff"}, "field 'url' has an unpaired surrogate"),
    "nested": ({"text": TEXT, "meta": {"tags": ["ok", ("x\udc80",)]}}, "field 'meta' has an unpaired surrogate"),
    "field-name": ({"text": TEXT, "k\udc00": 1}, "field name 'k\\udc00' has an unpaired surrogate"),
    "tuple-key": ({"text": TEXT, "m": {(1, 2): 3}}, "the fields cannot be stored as JSON"),
    "circular": ({"text": TEXT, "m": _circular}, "the fields cannot be stored as JSON"),
    "long-id": ({"text": TEXT, "id": "长" * 200}, "id of 600 bytes exceeds 512"),
    # Elasticsearch refuses an integer beyond its signed 64-bit long; the embedded store would keep it.
    "wide-int": ({"text": TEXT, "n": 2**63}, "field 'n' holds the integer 9223372036854775808, beyond a signed"),
    "nested-wide-int": ({"text": TEXT, "meta": {"n": [1, -(2**70)]}},
                        "field 'meta.n[1]' holds the integer -1180591620717411303424, beyond a signed"),
}


def _labels(store: Store, ids: list[str]) -> dict[str, tuple[str | None, str | None]]:
    return {d.id: (d.cluster_id, d.duplicate_of) for d in store.get(ids).values()}


def _stores(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Store, Store]:
    """Two new stores of the backend the test is parametrised with (an Ingester's, and a batch run's)."""
    if request.param == "local":
        return LocalStore("svc", tmp_path / "data"), LocalStore("batch", tmp_path / "data")
    from esdedup.store.elastic.store import ElasticStore

    client, name = request.getfixturevalue("es_client"), request.getfixturevalue("fresh_index")
    request.addfinalizer(lambda: client.options(ignore_status=404).indices.delete(index=name + "-batch"))
    return ElasticStore(client, name, replicas=0), ElasticStore(client, name + "-batch", replicas=0)


@pytest.fixture(params=["local", pytest.param("es", marks=pytest.mark.es)])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Store, Store]:
    return _stores(request, tmp_path)


def test_a_field_named_by_anything_but_a_string_fails_with_its_name(tmp_path):
    """A program's article whose field is named by a number (which no keyword argument can be) is refused with
    the name, not dropped into the store under a name JSON made up, nor raised as an error of the library."""
    ingester = Ingester(LocalStore("svc", tmp_path / "data"), CONFIG, dead_letter=tmp_path / "dl.jsonl")
    got, kept = ingester.add_many([{"text": TEXT, "id": "a", 1: "x"}, {"text": NEAR, "id": "b", "n": 1}])
    assert (got.status, got.reason) == ("failed", "field name 1 is not a string (a JSON object's names are strings): "
                                                  "name it by a string")
    assert (kept.status, kept.cluster_id) == ("indexed", "b")
    ingester.close()


def test_an_article_no_store_can_carry_fails_and_leaves_nothing_behind(stores, tmp_path):
    """Each such article is ``failed`` with its reason (no exception), dead-lettered, not stored, and the
    near-duplicate added next is indexed as its own cluster's representative: no ghost of the failed one."""
    store, _ = stores
    ingester = Ingester(store, CONFIG, dead_letter=tmp_path / "dl.jsonl")
    for n, (name, (doc, reason)) in enumerate(UNCARRIED.items()):
        doc = {"id": f"bad-{name}", **doc}
        got = ingester.add(**{"text": doc.pop("text"), **doc})
        assert got.status == "failed" and got.reason is not None and got.reason.startswith(reason), (name, got)
        near = ingester.add(NEAR, id=f"near-{n}")
        assert (near.status, near.cluster_id, near.duplicate_of) == ("indexed", f"near-{n}", None), (name, near)
        store.delete_if_unchanged(list(store.get([f"near-{n}"]).values()))  # the next case starts empty
    ingester.close()
    store.refresh()
    assert store.count() == 0
    letters = [json.loads(x) for x in (tmp_path / "dl.jsonl").read_text("utf-8").splitlines()]
    assert [d["reason"][:len(r)] for d, (_, r) in zip(letters, UNCARRIED.values(), strict=True)] == [
        r for _, r in UNCARRIED.values()]
    s = ingester.summary
    assert (s.read, s.indexed, s.failed) == (2 * len(UNCARRIED), len(UNCARRIED), len(UNCARRIED))


def test_a_file_with_the_same_values_is_refused_the_same_way(stores, tmp_path):
    """One rule for both stores and both entry points: the same lone surrogates in a file (JSON escapes) are
    dead-lettered by the reader, and the near-duplicate after them is its own representative."""
    _, store = stores
    lines = ['{"id": "t", "text": "' + TEXT + '\\ud800"}', '{"id": "i\\udc00", "text": "' + TEXT + '"}',
             '{"id": "h", "text": "' + TEXT + '", "title": "\\ud83d"}',
             '{"id": "f", "text": "' + TEXT + '", "meta": {"tags": ["\\udc80"]}}',
             json.dumps({"id": "near", "text": NEAR}, ensure_ascii=False)]
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    s = ingest([tmp_path / "in.jsonl"], store, CONFIG, IngestOptions(workers=1, dead_letter=tmp_path / "dl.jsonl"))
    assert (s.read, s.indexed, s.failed, s.duplicates) == (5, 1, 4, 0), s
    store.refresh()
    assert store.count() == 1 and _labels(store, ["near"]) == {"near": ("near", None)}


@pytest.mark.es
def test_an_add_the_store_refuses_leaves_no_ghost(es_client, fresh_index, tmp_path):
    """A write the node refuses (an index write block) raises a StoreError; the article it was labelling is
    not remembered: once writes are allowed again, its near-duplicate represents its own cluster."""
    from esdedup.errors import StoreError
    from esdedup.store.elastic.store import ElasticStore

    store = ElasticStore(es_client, fresh_index, replicas=0)
    ingester = Ingester(store, CONFIG)
    es_client.indices.put_settings(index=fresh_index, settings={"index.blocks.write": True})
    try:
        with pytest.raises(StoreError):
            ingester.add(TEXT, id="refused")
    finally:
        es_client.indices.put_settings(index=fresh_index, settings={"index.blocks.write": False})
    got = ingester.add(NEAR, id="after")
    assert (got.status, got.cluster_id, got.duplicate_of) == ("indexed", "after", None)
    store.refresh()
    assert store.count() == 1 and _labels(store, ["after", "refused"]) == {"after": ("after", None)}
    ingester.close()


def test_numbers_beyond_elasticsearchs_in_a_file_are_refused_alike(stores, tmp_path):
    """The same file on both stores, the same outcome: a record whose fields hold an integer beyond a signed
    64 bits (Elasticsearch's long) or a float beyond a 32-bit float (a new field's ``float``), at any depth, is
    dead-lettered by the reader with the field's path and the
    fix, where the node used to refuse it with its own reason and the embedded store kept it. An id or title of
    any size is kept, as its digits, and 2**63 - 1 is a field's integer like any other."""
    _, store = stores
    rows = ['"n": 9223372036854775808', '"n": 12345678901234567890123', '"deep": {"x": [1, -9223372036854775809]}',
            '"n": 9223372036854775807, "m": -9223372036854775808', '"f": 1e300']
    lines = ['{"id": "w' + str(i) + '", "text": "' + TEXT[i:] + '", ' + row + "}" for i, row in enumerate(rows)]
    lines.append('{"id": 123456789012345678901234567890, "title": 18446744073709551616, "text": "' + NEAR + '"}')
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    s = ingest([tmp_path / "in.jsonl"], store, CONFIG, IngestOptions(workers=1, dead_letter=tmp_path / "dl.jsonl"))
    assert (s.read, s.indexed, s.failed, s.balanced) == (6, 2, 4, True), s
    letters = [json.loads(x) for x in (tmp_path / "dl.jsonl").read_text("utf-8").splitlines()]
    span = "beyond a signed 64-bit integer (-9223372036854775808 to 9223372036854775807), which Elasticsearch refuses"
    assert [(d["location"], d["reason"]) for d in letters] == [
        ("line 1", f"field 'n' holds the integer 9223372036854775808, {span}: write it as a string (in quotes)"),
        ("line 2", f"field 'n' holds the integer 12345678901234567890123, {span}: write it as a string (in quotes)"),
        ("line 3", f"field 'deep.x[1]' holds the integer -9223372036854775809, {span}: write it as a string "
                   "(in quotes)"),
        ("line 5", "field 'f' holds the number 1e+300, beyond a 32-bit float (-3.4028235e+38 to 3.4028235e+38), which "
                   "Elasticsearch refuses in a new number field: write it as a string (in quotes)")]
    store.refresh()
    big_id = "123456789012345678901234567890"
    assert store.count() == 2
    assert store.get_source("w3")["n"] == 2**63 - 1 and store.get_source("w3")["m"] == -(2**63)
    assert store.get_source(big_id)["title"] == "18446744073709551616"
