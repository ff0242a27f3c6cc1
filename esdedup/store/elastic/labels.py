"""Cluster labels in an Elasticsearch index: written, moved to an earlier representative, merged, and the
updates and deletes conditional on the version read.

Several writers may write one index at once; a document becomes visible to the others' lookups only after a
refresh, so writers settle their labels after writing (`esdedup.ingest.run`), and `merge_clusters` and
`delete_if_unchanged` change other writers' documents only under optimistic concurrency control
(``if_seq_no``/``if_primary_term``): an update based on a stale read is refused and read again.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from esdedup.errors import BulkError, StoreError
from esdedup.es.answers import bulk_reason
from esdedup.es.hits import FINGERPRINT_FIELDS, VECTOR_SOURCE, first
from esdedup.schema import CLUSTER_ID, CLUSTER_SEQ, DEDUP, INPUT_FIELDS, SEQ
from esdedup.store.base import Root, StoredDoc
from esdedup.store.elastic.index import PAGE
from esdedup.store.elastic.scans import hit_pages
from esdedup.store.elastic.writes import Bulk
from esdedup.util.unionfind import union_groups

#: Rounds of `merge_clusters` before it gives up (each round moves clusters to earlier roots, so a handful
#: suffice even with many writers).
MERGE_ROUNDS = 50


def _root_labels(doc_id: str, root: Root) -> dict[str, Any]:
    """The labels of a document in the cluster of ``root``."""
    seq, root_id = root
    return {"cluster_id": root_id, "cluster_seq": seq, "duplicate_of": None if doc_id == root_id else root_id}


def set_labels(bulk: Bulk, labels: Mapping[str, tuple[str, str | None]]) -> int:
    """See `Store.set_labels`; BulkError when any label is refused."""
    actions = (bulk.update_action(i, {"cluster_id": c, "duplicate_of": d}) for i, (c, d) in labels.items())
    updated, errors = 0, []
    for ok, info in bulk.items(actions, "writing cluster labels"):
        if ok:
            updated += 1
            bulk.index.own_writes += info.get("result") == "updated"
        else:
            errors.append(info)
    if errors:
        raise BulkError(f"{len(errors)} cluster labels were rejected, first: {bulk_reason(errors[0])}",
                        [{"update": e} for e in errors])
    return updated


def relabel(bulk: Bulk, labels: Mapping[str, Root]) -> int:
    """See `Store.relabel` (partial updates)."""
    actions = (bulk.update_action(i, _root_labels(i, root)) for i, root in labels.items())
    updated = 0
    for ok, info in bulk.items(actions, "writing cluster labels"):
        if ok and info.get("result") == "updated":
            updated += 1
            bulk.index.own_writes += 1
    return updated


def move_dotted_keys_aside(bulk: Bulk) -> int:
    """See `Store.move_dotted_keys_aside`. Such a document is found by its doc values: a ``dedup`` field the
    store writes once holds two values (one from the store's ``dedup`` object, one from the dotted key). Each
    one found is written again whole, its dotted keys under ``input_fields``, conditional on the version read
    (a document changed since was written by a current writer, which keeps no such keys). Client-side, with
    no script: a cluster may run without the scripting and reindex modules."""
    index = bulk.index
    fields = [f"{DEDUP}.{name}" for name in index.single_valued_fields()]
    found = [h["_id"] for hits in hit_pages(index, "finding documents with dotted dedup keys", docvalue_fields=fields,
                                            source=False)  # their doc values only, not every vector
             for h in hits if any(len(v) > 1 for v in (h.get("fields") or {}).values() if isinstance(v, list))]
    mended = 0
    for start in range(0, len(found), PAGE):
        ids = found[start:start + PAGE]
        resp = index.search("reading documents with dotted dedup keys", size=len(ids), query={"ids": {"values": ids}},
                            seq_no_primary_term=True, track_total_hits=False)
        # A vector kept out of the stored _source (9.2+) comes only when named: read it so, to write it again.
        vectors = index.docs(ids) if index.config.stores_vector else {}
        actions = [a for h in resp["hits"]["hits"] if (a := _mended(index.name, h, vectors.get(h["_id"]))) is not None]
        refused = []
        for ok, info in bulk.items(actions, "moving input keys under dedup aside"):
            if ok:
                mended += 1
                index.own_writes += 1
            elif info.get("status") != 409:  # 409: changed since it was read, by a writer that keeps no such keys
                refused.append(info)
        if refused:
            raise BulkError(f"{len(refused)} documents could not be written again with their dotted dedup keys "
                            f"moved aside, first: {bulk_reason(refused[0])}", [{"index": r} for r in refused])
    return mended


def _mended(name: str, hit: Mapping[str, Any], stored: StoredDoc | None) -> dict[str, Any] | None:
    """The bulk action that writes one document again with its top-level ``dedup.`` keys under
    ``input_fields`` (the keys it holds there already win); None when it has none, or an ``input_fields``
    that is not an object (left as it is)."""
    src = dict(hit.get("_source") or {})
    moved = {k: src.pop(k) for k in list(src) if k.startswith(f"{DEDUP}.")}
    kept = src.get(INPUT_FIELDS)
    if not moved or (kept is not None and not isinstance(kept, Mapping)):
        return None
    src[INPUT_FIELDS] = {**moved, **(kept or {})}
    dedup = src.get(DEDUP)
    # A document stored without a vector (an empty text) has none to put back: a zero vector would be refused.
    if stored is not None and isinstance(dedup, Mapping) and "vector" not in dedup and np.any(stored.vector):
        src[DEDUP] = {**dedup, "vector": np.round(np.asarray(stored.vector, dtype=np.float64), 6).tolist()}
    return {"_op_type": "index", "_index": name, "_id": hit["_id"], "_source": src,
            "if_seq_no": hit["_seq_no"], "if_primary_term": hit["_primary_term"]}


def members(bulk: Bulk, cluster_ids: Sequence[str]) -> list[StoredDoc]:
    """See `Store.members` (at most `PAGE` documents)."""
    if not cluster_ids:
        return []
    index = bulk.index
    resp = index.search("fetching cluster members", size=PAGE, query={"terms": {CLUSTER_ID: list(cluster_ids)}},
                        _source=VECTOR_SOURCE, docvalue_fields=FINGERPRINT_FIELDS, seq_no_primary_term=True,
                        track_total_hits=False)
    return [index.doc(h) for h in resp["hits"]["hits"]]


def merge_clusters(bulk: Bulk, groups: Iterable[Collection[Root]]) -> int:
    """See `Store.merge_clusters`. Each round reads where every root of a group now points (a root merged by
    another writer carries its new root's labels), picks the earliest live root, and moves every document
    labelled with any other id of the group to it with conditional updates; a refused update (someone changed
    the document since it was read) is read again next round. The rounds end when no document is labelled
    with an id that is not its group's live root, and the roots, read again after that search, still lead
    where the round moved documents.

    Why read the roots again: another writer merging a cluster of the group at the same time may move a
    root's documents to a root outside the group between this round's read of the roots and its search. The
    search then finds nothing labelled with that root and, without the second read, the merge would end
    with the group split in two clusters (seen with two writers settling near-duplicates of one document
    at once; tests/integration/test_writers.py)."""
    pending = _with_live_roots(bulk, union_groups(groups))
    relabelled = 0
    for _ in range(MERGE_ROUNDS):
        moved, seen = _move(bulk, {doc_id: min(g) for g in pending for _, doc_id in g if doc_id != min(g)[1]})
        relabelled += moved
        live = _with_live_roots(bulk, pending)
        if not seen and _same_groups(live, pending):
            return relabelled
        pending = live
    raise StoreError(f"cluster labels on {bulk.index.name!r} did not settle after {MERGE_ROUNDS} rounds; "
                     "run the ingest again")


def _with_live_roots(bulk: Bulk, groups: list[set[Root]]) -> list[set[Root]]:
    """The groups with the live root every id of them leads to, joined again where they now meet."""
    live = _live_roots(bulk, {r[1]: r for g in groups for r in g})
    # Live roots first: a document's own seq wins over a stale copy of it carried by a label.
    return union_groups([[live[r[1]] for r in g if r[1] in live] + list(g) for g in groups])


def _same_groups(a: list[set[Root]], b: list[set[Root]]) -> bool:
    """The same groups of roots (in any order): no root of them leads anywhere new."""
    return {frozenset(g) for g in a} == {frozenset(g) for g in b}


def _live_roots(bulk: Bulk, roots: Mapping[str, Root]) -> dict[str, Root]:
    """Each root id -> the live root it leads to: a root document labelled with another cluster id (merged
    into it) points there, and so on. A missing root document stays as it was given."""
    index = bulk.index
    out: dict[str, Root] = {}
    todo = dict(roots)
    for _ in range(64):
        if not todo:
            break
        with index.errors("reading cluster roots"):
            resp = index.client.mget(index=index.name, ids=sorted({r[1] for r in todo.values()}),
                                     source_includes=[CLUSTER_ID, CLUSTER_SEQ, SEQ])
        found = {d["_id"]: (d.get("_source") or {}).get(DEDUP) or {} for d in resp["docs"] if d.get("found")}
        nxt: dict[str, Root] = {}
        for start, at in todo.items():
            dedup = found.get(at[1])
            if dedup is None or dedup.get("cluster_id") in (None, at[1]):
                out[start] = (int(dedup.get("seq", at[0]) or 0), at[1]) if dedup is not None else at
            else:
                nxt[start] = (int(dedup.get("cluster_seq", 0) or 0), dedup["cluster_id"])
        todo = nxt
    out.update(todo)
    return out


def _move(bulk: Bulk, moves: Mapping[str, Root]) -> tuple[int, set[str]]:
    """Move every document labelled with a key of ``moves`` to its root, conditionally; returns how many
    were moved and the ids whose documents were seen still labelled so."""
    if not moves:
        return 0, set()
    index = bulk.index
    index.refresh()
    resp = index.search("finding cluster members", size=PAGE, query={"terms": {CLUSTER_ID: sorted(moves)}},
                        docvalue_fields=[CLUSTER_ID], _source=False, seq_no_primary_term=True,
                        track_total_hits=False)
    actions = []
    seen: set[str] = set()
    for h in resp["hits"]["hits"]:
        old = first(h.get("fields", {}).get(CLUSTER_ID))
        seen.add(old)
        actions.append(bulk.update_action(h["_id"], _root_labels(h["_id"], moves[old]),
                                          (h["_seq_no"], h["_primary_term"])))
    moved = 0
    for ok, info in bulk.items(actions, "moving documents to their cluster's representative"):
        if ok:  # a refused (409) update is read again next round
            moved += 1
            index.own_writes += info.get("result") == "updated"
    return moved, seen


def delete_if_unchanged(bulk: Bulk, docs: Sequence[StoredDoc]) -> list[str]:
    """See `Store.delete_if_unchanged`: bulk deletes conditional on each document's version as read."""
    actions = [{"_op_type": "delete", "_index": bulk.index.name, "_id": d.id,
                **({"if_seq_no": d.version[0], "if_primary_term": d.version[1]} if d.version else {})}
               for d in docs]
    return [str(info.get("_id")) for ok, info in bulk.items(actions, "deleting documents")
            if ok and info.get("result") == "deleted"]


def update_dedup_if_unchanged(bulk: Bulk, changes: Mapping[str, tuple[StoredDoc, dict[str, Any]]]) -> dict[str, StoredDoc]:
    """Partial updates of ``dedup`` fields (id -> (the document as read, its new fields)), each conditional on
    the version read. Returns the documents updated, with their new version and write order; a document
    changed or deleted since it was read (409, 404) is left out. Raises BulkError for any other refusal."""
    actions = [bulk.update_action(doc_id, fields, doc.version) for doc_id, (doc, fields) in changes.items()]
    done: dict[str, StoredDoc] = {}
    refused: list[dict[str, Any]] = []
    for ok, info in bulk.items(actions, "writing labels"):
        doc_id = str(info.get("_id"))
        if ok:
            doc, fields = changes[doc_id]
            version = (int(info["_seq_no"]), int(info["_primary_term"])) if "_seq_no" in info else None
            done[doc_id] = dataclasses.replace(doc, version=version, seq=int(fields.get("seq", doc.seq)))
        elif info.get("status") not in (404, 409):
            refused.append(info)
    if refused:
        raise BulkError(f"{len(refused)} label updates were refused, first: {bulk_reason(refused[0])}",
                        [{"update": r} for r in refused])
    return done
