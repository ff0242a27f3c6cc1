"""The store protocols one by one, on both stores: the core every store implements, and the cluster labels, key
scans and browsing a store opts into (`esdedup.store.base.Capability`). What each protocol promises beyond its
members' names is tested here for the members no other test calls directly (`retried`, `alone`, `write_lock`,
`move_dotted_keys_aside`, `scan`, `scan_empty`); the rest of each protocol is in test_store_contract.py
(core, labels, scans) and test_store_browse.py (browsing).
"""
from __future__ import annotations

import inspect
import uuid
from typing import Any

import pytest

from esdedup import FingerprintConfig
from esdedup.api import all_pairs
from esdedup.errors import ConfigError, Unsupported
from esdedup.fingerprint.fingerprinter import Fingerprinter
from esdedup.ingest import ingest
from esdedup.schema import INPUT_FIELDS, content_sha1
from esdedup.store.base import (
    Browsing,
    Capability,
    ClusterLabels,
    KeyScans,
    NewDoc,
    Store,
    StoreCore,
    offers,
    require,
)
from esdedup.store.elastic.store import ElasticStore
from esdedup.store.local import LocalStore

CONFIG = FingerprintConfig(tokenizer="rjieba")
PROTOCOLS = {None: StoreCore, Capability.LABELS: ClusterLabels, Capability.KEY_SCANS: KeyScans,
             Capability.BROWSING: Browsing}
TEXTS = {"a": "今天北京的天气很好，阳光明媚，适合出门散步。公园里有很多人在锻炼身体。",
         "b": "上海的地铁线路越来越多，早高峰的时候车厢里依然非常拥挤。",
         "c": "。，！",  # no words: an empty document
         "d": "！？"}


def members(protocol: type) -> set[str]:
    """The public members a protocol class declares itself (methods, properties and annotated attributes)."""
    return ({n for n in vars(protocol) if not n.startswith("_")}
            | {n for n in vars(protocol).get("__annotations__", {}) if not n.startswith("_")})


@pytest.fixture(params=["local", pytest.param("es", marks=pytest.mark.es)])
def new_store(request, tmp_path):
    """A factory of unopened stores of one backend, a second handle on the same collection when named."""
    made: list[Any] = []

    def make(name: str | None = None) -> Any:
        name = name or f"esdedup-protocols-{uuid.uuid4().hex[:10]}"
        if request.param == "local":
            s: Any = LocalStore(name, tmp_path / "data")
        else:
            s = ElasticStore(request.getfixturevalue("es_client"), name, shards=1, replicas=0)
        made.append(s)
        return s

    yield make
    if made:
        made[0].drop()


def _write(store: Store, ids: str) -> None:
    fps = Fingerprinter(CONFIG).fingerprint_many([TEXTS[i] for i in ids])
    results = list(store.write(NewDoc(i, fp, {"id": i, "text": TEXTS[i]}, content_sha1(TEXTS[i]), cluster_id=i)
                               for i, fp in zip(ids, fps)))
    assert all(r.ok for r in results), results
    store.refresh()


# -- the protocols themselves ------------------------------------------------------------------------------------

def test_the_protocols_split_the_store_without_overlap():
    """Each member of `Store` is declared by one protocol, and the core stays small."""
    declared = [members(p) for p in PROTOCOLS.values()]
    every = set().union(*declared)
    assert sum(map(len, declared)) == len(every), "a member declared by two protocols"
    assert not members(Store), "Store adds nothing of its own: it is the sum of the protocols"
    assert len(members(StoreCore)) <= 18


def test_each_store_declares_its_protocols_and_implements_every_member_of_them(new_store):
    store = new_store()
    assert {Capability.LABELS, Capability.KEY_SCANS, Capability.BROWSING} <= store.capabilities
    for capability, protocol in PROTOCOLS.items():
        if capability is None or offers(store, capability):
            for name in members(protocol):
                assert hasattr(type(store), name) or name in vars(store), f"{type(store).__name__} lacks {name}"
                declared = vars(protocol).get(name)
                if inspect.isfunction(declared):  # the same parameters, in the same order, of the same kinds
                    ours = inspect.signature(getattr(type(store), name)).parameters
                    theirs = inspect.signature(declared).parameters
                    assert [(p.name, p.kind) for p in ours.values()] == [(p.name, p.kind) for p in theirs.values()], name
    assert offers(store, Capability.ELASTICSEARCH) == isinstance(store, ElasticStore)
    assert offers(store, Capability.SIGNATURE_COLUMNS)


class _CoreOnly:
    """A store that implements the core alone (as a new engine may at first): a real store behind it, every
    other protocol left undeclared."""

    capabilities: frozenset[Capability] = frozenset()

    def __init__(self, store: Store) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        if name not in members(StoreCore):
            raise AttributeError(name)
        return getattr(self._store, name)


def test_a_task_on_a_store_without_its_protocol_is_refused_before_it_starts(new_store, tmp_path):
    inner = new_store()
    inner.open(CONFIG)
    store = _CoreOnly(inner)
    path = tmp_path / "in.jsonl"
    path.write_text('{"id": "a", "text": "x"}\n', encoding="utf-8")
    # Refused by the protocol the argument is typed with (the API checks its arguments: a ConfigError), or by
    # the capability the task requires (`Unsupported`, a ConfigError too), before anything is written.
    with pytest.raises(ConfigError, match="LabelledStore|cluster labels"):
        ingest([path], store)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="Store|key scans"):
        all_pairs(store)  # type: ignore[arg-type]
    with pytest.raises(Unsupported, match="cluster labels"):
        require(store, Capability.LABELS, "ingesting")  # type: ignore[arg-type]
    assert inner.count() == 0


# -- the core ----------------------------------------------------------------------------------------------------

def test_retried_counts_no_resend_when_nothing_was_refused(new_store):
    store = new_store()
    store.open(CONFIG)
    assert store.retried == 0
    _write(store, "ab")
    assert store.retried == 0 and store.count() == 2


# -- cluster labels ----------------------------------------------------------------------------------------------

def test_a_writer_learns_of_another_writer_as_its_store_promises(new_store):
    """A store that ``settles`` says it is no longer `alone` once another writer wrote; one that does not
    serialises writers with `write_lock`, whose next hold says the collection changed (once)."""
    store = new_store()
    store.open(CONFIG)
    _write(store, "a")
    other = new_store(store.name)
    other.open(None, create=False)
    if store.settles:
        assert store.alone()
        _write(other, "b")
        assert not store.alone()
        with store.write_lock() as changed:  # nothing to lock
            assert changed is False
    else:
        with store.write_lock() as changed:
            assert changed is False  # the first hold: nothing known to compare with
        with store.write_lock() as changed:
            assert changed is False  # nobody else wrote
        with other.write_lock():
            _write(other, "b")
        with store.write_lock() as changed:
            assert changed is True
        with store.write_lock() as changed:
            assert changed is False
    assert store.count() == 2


def test_dotted_dedup_keys_are_moved_under_input_fields(new_store):
    """An older esdedup stored a record's own ``dedup.*`` keys beside the store's fields; mending moves them
    under ``input_fields`` once (a document that carries a second cluster id so is found by its doc values).
    The embedded store keeps labels in columns no input key reaches."""
    store = new_store()
    store.open(CONFIG)
    _write(store, "ab")
    if not offers(store, Capability.ELASTICSEARCH):
        assert store.move_dotted_keys_aside() == 0
        return
    client = store.client
    source = client.get(index=store.name, id="a")["_source"]
    client.index(index=store.name, id="a", document={**source, "dedup.cluster_id": "theirs"}, refresh=True)
    assert store.move_dotted_keys_aside() == 1
    store.refresh()
    mended = client.get(index=store.name, id="a")["_source"]
    assert "dedup.cluster_id" not in mended and mended[INPUT_FIELDS] == {"dedup.cluster_id": "theirs"}
    assert mended["dedup"] == source["dedup"]
    assert store.move_dotted_keys_aside() == 0


# -- key scans ---------------------------------------------------------------------------------------------------

def test_scans_read_every_document_once_in_bounded_batches(new_store):
    store = new_store()
    store.open(CONFIG)
    _write(store, "abcd")
    batches = list(store.scan(batch=3))
    assert all(1 <= len(b) <= 3 for b in batches)
    assert sorted(d.id for b in batches for d in b) == ["a", "b", "c", "d"]
    empty = list(store.scan_empty(batch=1))
    assert all(len(b) == 1 for b in empty)
    assert sorted(d.id for b in empty for d in b) == ["c", "d"] and all(d.empty for b in empty for d in b)
