"""Reading documents of an Elasticsearch index by band key, vector or id: the lookup planner.

Lookups of many probes share one search (one ``terms`` query a key field, `esdedup.es.query.batch_lookup_body`)
and the client gives each probe the hits sharing its keys; probes holding crowded keys are ranked by the node,
one band query each in ``_msearch`` batches.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from esdedup.errors import IndexNotFound, StoreError
from esdedup.es import query as q
from esdedup.es.answers import error_reason
from esdedup.es.serializer import ndjson
from esdedup.schema import CONTENT_SHA1, VECTOR
from esdedup.store.base import Probe, StoredDoc
from esdedup.store.elastic.index import PAGE, ElasticIndex
from esdedup.store.elastic.keys import key_counts
from esdedup.util.redact import redact

#: Probes per `_msearch` request (probes the node ranks one by one).
MSEARCH_BATCH = 100
#: Probes per batched lookup search (an ingest batch's: each search has a cost on the node, and round trip,
#: beyond that of its keys), and band keys per key field in it (a `terms` query takes at most 65,536 by
#: default, ``index.max_terms_count``).
LOOKUP_PROBES = 1000
LOOKUP_TERMS = 30_000


def lookup(index: ElasticIndex, probes: Sequence[Probe], *, limit: int, page: int) -> list[list[StoredDoc]]:
    """See `Store.lookup`. Up to `LOOKUP_PROBES` probes share one search, which returns every document holding
    any of their keys with its key values; each probe then takes the hits sharing its keys, the ``limit``
    sharing the most bands when more do (ties by id). A probe holding a crowded key (one held by more than
    ``limit`` documents), or matching more than ``page`` documents alone, is looked up by itself and ranked by
    the node (ties in index order). Either way a probe's answer does not depend on the other probes of the
    call."""
    plan = _Plan(index, probes, limit, page)
    alone: list[int] = []
    for chunk in _lookup_chunks(probes):
        alone += plan.together(chunk, crowds_known=False)
    plan.each(sorted(alone))
    return plan.out


class _Plan:
    """One `lookup` call: its probes, and each probe's answer as it is found."""

    def __init__(self, index: ElasticIndex, probes: Sequence[Probe], limit: int, page: int) -> None:
        self.index, self.probes, self.limit, self.page = index, probes, limit, page
        self.out: list[list[StoredDoc]] = [[] for _ in probes]

    def together(self, idx: list[int], *, crowds_known: bool) -> list[int]:
        """Answer the probes ``idx`` from one search, split in halves while it would return more than ``page``
        documents; returns the probes to look up one by one."""
        keys = q.keys_by_field([self.probes[i] for i in idx])
        resp = self.index.search("band lookup", **q.batch_lookup_body(keys, size=self.page + 1))
        hits = resp["hits"]["hits"]
        if len(hits) <= self.page:  # every holder of every key: the counts of holders are exact
            return self._assign(idx, hits, _holders(hits, keys))
        if len(idx) == 1:
            return idx
        # Keys held by thousands of documents fill the page: their probes go alone, the rest together again.
        alone = [] if crowds_known else self._crowded_holders(idx, keys)
        gone = set(alone)
        rest = [i for i in idx if i not in gone]
        halves = [rest] if alone else [rest[: len(rest) // 2], rest[len(rest) // 2 :]]
        for part in halves:
            if part:
                alone += self.together(part, crowds_known=True)
        return alone

    def _assign(self, idx: list[int], hits: list[dict[str, Any]], holders: _Holders) -> list[int]:
        """Give each probe of ``idx`` the hits sharing its keys (`_shared_hits`); returns the probes holding a
        crowded key."""
        docs: dict[int, StoredDoc] = {}
        alone = []
        for i in idx:
            chosen = _shared_hits(self.probes[i], holders, hits, self.limit)
            if chosen is None:
                alone.append(i)
                continue
            for pos in chosen:
                if pos not in docs:
                    docs[pos] = self.index.doc(hits[pos])
            self.out[i] = [docs[pos] for pos in chosen]
        return alone

    def _crowded_holders(self, idx: list[int], keys: Mapping[str, Sequence[str]]) -> list[int]:
        """The probes of ``idx`` holding a key that more than ``limit`` documents hold (a count per key)."""
        counts = key_counts(self.index, keys, "band lookup", min_count=self.limit + 1, size=1000)
        crowded = {(field, k) for field, (found, _) in counts.items() for k, _ in found}
        return [i for i in idx if any((q.stored_key_field(name), k) in crowded
                                      for name, band_keys in self.probes[i].items() for k in band_keys)]

    def each(self, idx: list[int]) -> None:
        """One ranked search per probe (``_msearch``): the node keeps the ``limit`` documents sharing the most
        bands."""
        index = self.index
        for start in range(0, len(idx), MSEARCH_BATCH):
            batch = idx[start : start + MSEARCH_BATCH]
            with index.errors("band lookup"):
                resp = index.client.msearch(searches=ndjson(q.msearch_body(index.name, [self.probes[i] for i in batch],
                                                                           size=self.limit)))
            for i, r in zip(batch, resp["responses"], strict=False):
                if "error" in r:
                    raise StoreError(f"band lookup on {index.name!r} failed: "
                                     f"{redact(error_reason(r['error']), index.secrets)}")
                index.complete(r, "band lookup")
                self.out[i] = sorted((index.doc(h) for h in r["hits"]["hits"]), key=lambda d: d.id)


def _lookup_chunks(probes: Sequence[Probe]) -> Iterator[list[int]]:
    """The probes with keys, in groups of at most `LOOKUP_PROBES` and `LOOKUP_TERMS` keys a field."""
    chunk: list[int] = []
    terms: dict[str, int] = {}
    for i, probe in enumerate(probes):
        need: dict[str, int] = {}
        for name, keys in probe.items():
            if keys:
                field = q.stored_key_field(name)
                need[field] = need.get(field, 0) + len(keys)
        if not need:
            continue
        if chunk and (len(chunk) >= LOOKUP_PROBES or any(terms.get(f, 0) + n > LOOKUP_TERMS for f, n in need.items())):
            yield chunk
            chunk, terms = [], {}
        chunk.append(i)
        for f, n in need.items():
            terms[f] = terms.get(f, 0) + n
    if chunk:
        yield chunk


#: Key field -> key -> positions of the hits holding it (`_holders`).
_Holders = dict[str, dict[str, list[int]]]


def _holders(hits: Sequence[Mapping[str, Any]], fields: Iterable[str]) -> _Holders:
    """Key field -> key -> positions of the hits holding it, from the hits' doc values of ``fields`` (numbers
    for the LSH keys field: read as strings, as probes hold them)."""
    holders: _Holders = {field: {} for field in fields}
    for pos, hit in enumerate(hits):
        values_of = hit.get("fields", {})
        for field, held in holders.items():
            for v in {str(x) for x in values_of.get(field, ())}:  # a document may hold one LSH key in two bands
                held.setdefault(v, []).append(pos)
    return holders


def _shared_hits(probe: Probe, holders: _Holders, hits: Sequence[Mapping[str, Any]], limit: int) -> list[int] | None:
    """The positions of the hits sharing a key with ``probe``, in id order: the ``limit`` sharing the most
    bands (ties by id) when more do, as a band lookup scores them (a band counts once, however many of its
    keys match). None when one of its keys is held by more than ``limit`` documents (the node ranks those)."""
    shared: dict[int, int] = {}
    for name, keys in probe.items():
        held_by = holders.get(q.stored_key_field(name))
        if not held_by:
            continue
        band: set[int] = set()
        for k in keys:
            held = held_by.get(k)
            if held is not None:
                if len(held) > limit:
                    return None
                band.update(held)
        for pos in band:
            shared[pos] = shared.get(pos, 0) + 1
    if not shared:
        return []
    chosen = sorted(shared, key=lambda pos: (-shared[pos], hits[pos]["_id"]))[:limit]
    return sorted(chosen, key=lambda pos: hits[pos]["_id"])


def verified_on_node(index: ElasticIndex, probe: Probe, params: Mapping[str, Any], *, size: int) -> list[dict[str, Any]]:
    """The hits the node itself verifies as near-duplicates of one probe (`query.node_verified_body`; needs
    the esdedup plugin), nearest first, each with its measures in ``fields``."""
    if not any(probe.values()):
        return []
    try:
        resp = index.search("node-side lookup", **q.node_verified_body(probe, params, size=size))
    except StoreError as exc:
        if "esdedup" in str(exc) and "not supported" in str(exc):
            raise StoreError(f"the node has no 'esdedup' script language: install the esdedup plugin on every "
                             f"node (plugin/README.md) ({exc})") from None
        raise
    return list(resp["hits"]["hits"])


def knn(index: ElasticIndex, vector: np.ndarray, k: int = 10) -> list[StoredDoc]:
    """See `Store.knn`."""
    index.config.require_vector(index.name)
    resp = index.search("kNN search", **q.knn_body(vector, k=k))
    return [index.doc(h) for h in resp["hits"]["hits"]]


def copies(index: ElasticIndex, sha1s: Sequence[str], *, limit: int) -> list[list[StoredDoc]]:
    """See `Store.copies`: one search for all the SHA-1s, split in halves while it would return more than
    a page (a SHA-1 held by more than a page of documents gets the first page, in index order)."""
    found: dict[str, list[StoredDoc]] = {}

    def fetch(part: list[str]) -> None:
        body = {**q.ids_body([]), "size": PAGE, "query": {"bool": {"filter": [{"terms": {CONTENT_SHA1: part}}]}}}
        hits = index.search("looking up exact copies", **body)["hits"]["hits"]
        if len(hits) >= PAGE and len(part) > 1:
            fetch(part[: len(part) // 2])
            fetch(part[len(part) // 2 :])
            return
        for h in hits:
            d = index.doc(h)
            found.setdefault(d.content_sha1 or "", []).append(d)

    unique = sorted(set(sha1s))
    for start in range(0, len(unique), LOOKUP_TERMS):
        fetch(unique[start : start + LOOKUP_TERMS])
    return [sorted(found.get(s, []), key=lambda d: d.id)[:limit] for s in sha1s]


def get_source(index: ElasticIndex, doc_id: str) -> dict[str, Any] | None:
    """See `Store.get_source`."""
    try:
        with index.errors("fetching document"):
            resp = index.client.get(index=index.name, id=doc_id, source_excludes=[VECTOR])
    except IndexNotFound:
        return None
    return resp.get("_source")  # type: ignore[no-any-return]
