"""Values held by several documents of an Elasticsearch index: the shared band keys of each key field with their
members, from terms aggregations (`key_batches`); a partition's share of them, from a scan of every document's
keys (`partition_key_batches`); the crowded keys (`crowded_keys`); and the documents whose content SHA-1 another
holds too (`copy_columns`)."""
from __future__ import annotations

import itertools
import logging
import math
from array import array
from collections.abc import Collection, Iterator, Mapping, Sequence

import numpy as np

from esdedup.errors import StoreError
from esdedup.es import query as q
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.minhash import lsh_keys_many
from esdedup.schema import CONTENT_SHA1, EMPTY
from esdedup.store.base import KeyBatch, StoredDoc, band_keys, lsh_signature
from esdedup.store.elastic import scans
from esdedup.store.elastic.index import PAGE, ElasticIndex
from esdedup.store.partition import Partition, key_share
from esdedup.util.prefetch import ahead

log = logging.getLogger(__name__)

#: Shared values one partition of a key field should return (`shared_values`).
PARTITION_BUCKETS = 20_000
#: Distinct values of a key field one request may count (`shared_values`): each shard holds a bucket for every
#: distinct value it counts (about 50 bytes), whatever ``min_doc_count`` keeps, and a field counted whole at ten
#: million documents tripped a 2 GB node's request circuit breaker; a field with more is counted in parts.
DISTINCT_A_REQUEST = 4_000_000
#: Most partitions of one key field (a partition split past this means the field cannot be cut).
MAX_PARTITIONS = 1 << 20


def key_stats(index: ElasticIndex, field: str) -> tuple[int, int, int]:
    """Distinct values of a key field (HyperLogLog: exact up to 40,000, within a few percent above), values
    in all, and the index's shards."""
    aggs = {"distinct": {"cardinality": {"field": field, "precision_threshold": 40_000}},
            "values": {"value_count": {"field": field}}}
    resp = index.aggregate("band aggregation", size=0, aggs=aggs)
    return (int(resp["aggregations"]["distinct"]["value"]), int(resp["aggregations"]["values"]["value"]),
            int(resp["_shards"]["total"]))


def key_counts(index: ElasticIndex, keys: Sequence[str] | Mapping[str, Sequence[str]], what: str, *,
               min_count: int, size: int, shard_size: int | None = None, partition: tuple[int, int] = (0, 1),
               shard_min_count: int | None = None) -> dict[str, tuple[list[tuple[str, int]], bool]]:
    """For each key field of ``keys``, its values held by ``min_count`` or more documents with their counts
    (`query.key_counts_body`; values as strings: the LSH keys field is numeric), and whether that answer is
    whole: False when it filled its size or a shard had more values than it could send (then some may be
    missing)."""
    body = q.key_counts_body(keys, min_count=min_count, size=size, shard_size=shard_size, partition=partition,
                             shard_min_count=shard_min_count)
    # Named values: the few documents holding them are read; whole fields: every document's values.
    resp = index.search(what, **body) if isinstance(keys, Mapping) else index.aggregate(what, **body)
    out = {}
    for field in keys:
        agg = resp["aggregations"][field]
        found = [(str(b["key"]), int(b["doc_count"])) for b in agg["buckets"]]
        whole = len(found) < body["aggs"][field]["terms"]["size"] and not agg.get("doc_count_error_upper_bound")
        out[field] = (found, whole)
    return out


def shared_values(index: ElasticIndex, field: str, min_count: int) -> Iterator[list[tuple[str, int]]]:
    """Every value of a key field held by ``min_count`` or more documents, with its count, one partition of
    the field's values at a time: the node reads the field once a partition and sends only those values, not
    the singletons. The partitions are as many as make each answer about `PARTITION_BUCKETS` values (values
    held ``min_count`` times or more are at most the field's value count less its distinct values, over
    ``min_count - 1``) and each count at most `DISTINCT_A_REQUEST` distinct values; a partition whose answer
    may be cut is asked again as two (values fall in partition ``hash % n``, so partition p of n is
    partitions p and p + n of 2n).

    A value held ``min_count`` times is held ``ceil(min_count / shards)`` times by one shard at least: where
    that is more than once on an index of several shards, each shard sends only such values of its own (few,
    for a crowded count), whose counts are then taken exactly (`key_counts` of the values); else each shard
    sends all of its values in the partition, for the counts to add up. An index of one shard is never asked
    for its own minimum (``shard_min_doc_count``), which ``min_doc_count`` makes of no use there: on a field few
    documents hold, spread over several segments, Elasticsearch 8.19 then counted a value's holders short and
    left out values held twice (817 of 1,342 at 120,000 documents, 6,000 of them holding it)."""
    distinct, values, shards = key_stats(index, field)
    answer = min(distinct, (values - distinct) // max(min_count - 1, 1))
    parts = max(math.ceil(answer / PARTITION_BUCKETS), memory_parts(distinct))
    log.debug("%s: %d distinct values, %d in all: %d partitions", field, distinct, values, parts)
    size = 2 * PARTITION_BUCKETS
    shard_min = -(-min_count // shards)
    some = shard_min > 1 and shards > 1  # the shards send candidates, counted exactly afterwards
    shard_size = size if shard_min > 1 else max(size, math.ceil(1.5 * distinct / parts))
    todo = [(p, parts) for p in reversed(range(parts))]
    while todo:
        part = todo.pop()
        found, whole = key_counts(index, [field], "band aggregation", min_count=shard_min if some else min_count,
                                  size=size, shard_size=shard_size, partition=part,
                                  shard_min_count=shard_min if some else None)[field]
        if whole and some and found:
            found = key_counts(index, {field: [v for v, _ in found]}, "band aggregation", min_count=min_count,
                               size=len(found))[field][0]
        if whole:
            yield found
        elif part[1] >= MAX_PARTITIONS:
            raise StoreError(f"band aggregation on {index.name!r}: {field} does not fit {MAX_PARTITIONS} "
                             "partitions")
        else:
            log.debug("partition %d of %d of %s may hold more than %d shared values: split", *part, field, size)
            todo += [(part[0] + part[1], 2 * part[1]), (part[0], 2 * part[1])]


def memory_parts(distinct: int) -> int:
    """The parts a key field of ``distinct`` values is counted in, for each request's buckets to fit a node's
    memory (`DISTINCT_A_REQUEST` distinct values a part)."""
    return max(1, math.ceil(distinct / DISTINCT_A_REQUEST))


def most_held(index: ElasticIndex, fields: Sequence[str], limit: int, what: str, *,
              min_count: int = 2) -> list[tuple[str, int]]:
    """The ``limit`` values of ``fields`` held by the most documents (``min_count`` or more), with their counts,
    most held first: the most held of each part of each field's values (`memory_parts`), merged."""
    found = []
    for field in fields:
        parts = memory_parts(key_stats(index, field)[0])
        found += [kn for p in range(parts) for kn in key_counts(index, [field], what, min_count=min_count,
                                                                size=limit, partition=(p, parts))[field][0]]
    return sorted(found, key=lambda kn: (-kn[1], kn[0]))[:limit]


#: Content SHA-1s a search for their documents asks for (a `terms` query takes at most 65,536 by default,
#: ``index.max_terms_count``).
COPY_TERMS = 10_000


def copy_columns(index: ElasticIndex) -> list[tuple[str, str, bool]]:
    """See `esdedup.store.columns.CopyColumnsStore`: the rows of the documents whose content SHA-1 another holds
    too, their content SHA-1 and ``empty`` doc values. The node finds those SHA-1s (`shared_values`), so the
    client holds the copies only, not a row a document (at a million documents most of a partition's fixed
    memory); their documents are read a page of SHA-1s at a time, through a point in time."""
    out: list[tuple[str, str, bool]] = []
    shared = [v for found in shared_values(index, CONTENT_SHA1, 2) for v, _ in found]
    for start in range(0, len(shared), COPY_TERMS):
        query = {"terms": {CONTENT_SHA1: shared[start:start + COPY_TERMS]}}
        for hits in scans.hit_pages(index, "reading content SHA-1s", query=query,
                                    docvalue_fields=[CONTENT_SHA1, EMPTY], source=False):
            for h in hits:
                got = h.get("fields", {})
                sha1 = (got.get(CONTENT_SHA1) or [None])[0]
                if sha1:
                    out.append((h["_id"], sha1, bool((got.get(EMPTY) or [False])[0])))
    return out


def _crowded_set(index: ElasticIndex, fields: Sequence[str], max_bucket: int) -> frozenset[str]:
    """The values of ``fields`` held by more than ``max_bucket`` documents (`_crowded_values`)."""
    return frozenset(v for found in _crowded_values(index, fields, max_bucket).values() for v, _ in found)


def _crowded_values(index: ElasticIndex, fields: Sequence[str], max_bucket: int
                    ) -> dict[str, list[tuple[str, int]]]:
    """Per field, its values held by more than ``max_bucket`` documents with their counts (few: one field at a
    time, in as many parts as its distinct values need, `shared_values`)."""
    return {field: [v for part in shared_values(index, field, max_bucket + 1) for v in part] for field in fields}


def key_batches(index: ElasticIndex, *, max_bucket: int = 1000, lsh: bool = True) -> Iterator[KeyBatch]:
    """See `Store.key_batches`: shared keys field by field, partition by partition (`shared_values`); their
    members found for a page of members at a time, and every member's keys (doc values) read once
    (`MemberKeys`). The next batch is fetched while the caller works on this one (`ahead`): the node's
    aggregations and searches overlap the caller's pair work instead of taking turns with it."""
    return ahead(_key_batches(index, max_bucket, lsh))


def partition_key_batches(index: ElasticIndex, partition: Partition, *, max_bucket: int = 1000,
                          lsh: bool = True) -> Iterator[KeyBatch]:
    """See `esdedup.store.partition.PartitionedKeys`: the crowded values first (`_crowded_values`, every
    partition reads them, their members' keys from doc values), then the partition's share of the others from
    one point-in-time scan of every document's keys (`ShareTable`), in batches whose members are read whole
    once a batch and their keys computed from their fingerprints (`_share_batches`). Fetched ``ahead``."""
    return ahead(_partition_key_batches(index, partition, max_bucket, lsh))


def _partition_key_batches(index: ElasticIndex, partition: Partition, max_bucket: int,
                           lsh: bool) -> Iterator[KeyBatch]:
    fields = index.key_fields(lsh=lsh)
    by_field = _crowded_values(index, fields, max_bucket)
    crowded = frozenset(v for found in by_field.values() for v, _ in found)
    member_keys = MemberKeys(index, fields, crowded)
    for field, held in by_field.items():
        for v, n in held:
            yield _members(index, field, [(v, n)], member_keys, max_bucket)
    table = ShareTable(partition, crowded)
    for hits in scans.hit_pages(index, "reading band keys", docvalue_fields=fields, batch=PAGE, source=False):
        for h in hits:
            got = h.get("fields")
            if got:
                table.add(h["_id"], [str(v) for f in fields for v in got.get(f, ())])
        yield KeyBatch([], {}, held=table.held)  # the scan's progress
    yield from _share_batches(index, table, crowded, lsh)


class ShareTable:
    """The keys of one partition's share (`key_share`) held by the documents of a scan, less the crowded: the
    only keys a partition holds in memory (a 64-bit hash and a document number each, ~1/P of the index's
    keys), grouped once the scan is over (`groups`). The hash only groups: the keys themselves are computed
    again from the members' fingerprints, which tells keys that share a hash apart."""

    def __init__(self, partition: Partition, crowded: frozenset[str]) -> None:
        self.partition, self.crowded = partition, crowded
        # The ids of the documents holding a key of the share, one after the other in UTF-8 (one Python string
        # each would be some 60 bytes a document of every partition, whatever its share).
        self._ids = bytearray()
        self._ends = array("q")
        self._hashes = array("q")
        self._rows = array("i")

    @property
    def held(self) -> int:
        return len(self._hashes)

    def add(self, doc_id: str, keys: Sequence[str]) -> None:
        p = self.partition
        mine = [k for k in keys if (p.whole or key_share(k, p.count) == p.index) and k not in self.crowded]
        if mine:
            row = len(self._ends)
            self._ids += doc_id.encode()
            self._ends.append(len(self._ids))
            self._hashes.extend(map(hash, mine))
            self._rows.extend([row] * len(mine))

    def _id(self, row: int) -> str:
        return self._ids[self._ends[row - 1] if row else 0:self._ends[row]].decode()

    def groups(self) -> Iterator[tuple[int, list[str]]]:
        """Each hash held by two documents or more, with their ids; ordered by their first document in the
        scan, so that the groups of one document come close together (each read once a batch, not once a
        group). The table is let go as it is read."""
        # The table is the partition's largest memory: at most one sorted copy of its rows is made beside it (the
        # hashes are sorted where they are: a sort's values do not depend on its order among equals), and the
        # keys no other document holds are let go before the groups are read.
        hashes = np.frombuffer(self._hashes, dtype=np.int64)
        order = np.argsort(hashes, kind="stable")
        rows = np.frombuffer(self._rows, dtype=np.dtype(f"i{self._rows.itemsize}"))[order]
        self._rows = array("i")
        del order
        hashes.sort()
        self._hashes = array("q")
        if not len(hashes):
            return
        starts = np.flatnonzero(np.r_[True, hashes[1:] != hashes[:-1]])
        sizes = np.diff(np.r_[starts, len(hashes)])
        shared = np.repeat(sizes > 1, sizes)
        hashes, rows = hashes[shared], rows[shared]
        del shared
        sizes = sizes[sizes > 1]
        if not len(sizes):
            return
        starts = np.r_[0, np.cumsum(sizes)[:-1]]
        # A document holds a key once, and rows were added in scan order: a group's first row is its smallest.
        for g in np.argsort(rows[starts], kind="stable").tolist():
            lo, n = int(starts[g]), int(sizes[g])
            yield int(hashes[lo]), [self._id(r) for r in rows[lo:lo + n].tolist()]


#: Members read whole (their fingerprints) a batch of `_share_batches`.
SHARE_BATCH = 4000


def _share_batches(index: ElasticIndex, table: ShareTable, crowded: frozenset[str], lsh: bool) -> Iterator[KeyBatch]:
    """The key groups of ``table`` in batches of about `SHARE_BATCH` members: the members read whole (their
    fingerprints), their keys computed from them (`doc_keys`: what ingest stored), each group split by the
    keys of its hash (a hash two keys share is one group in the table). A member read for the last batch is
    not read again."""
    config = index.config
    pending: list[tuple[int, list[str]]] = []
    last: Mapping[str, StoredDoc] = {}

    def batch() -> KeyBatch:
        nonlocal last
        ids = {i for _, members in pending for i in members}
        need = sorted(i for i in ids if i not in last)
        docs = {**{i: last[i] for i in ids if i in last}, **index.docs(need, "fetching band members' fingerprints")}
        keys = {i: frozenset(k) - crowded for i, k in doc_keys(docs, config, lsh=lsh).items()}
        groups: dict[str, list[str]] = {}
        for h, members in pending:
            found = 0
            for m in members:
                for k in keys.get(m, ()):
                    if hash(k) == h:
                        groups.setdefault(k, []).append(m)
                        found += 1
            if found < sum(1 for m in members if m in docs):
                # Its keys changed since the scan (written again) or were stored by another rule: its pairs
                # could not be given to one partition each.
                raise StoreError(f"band keys of {index.name!r}: a document's stored keys are not those of its "
                                 "fingerprint (written again during the run? run the partition again)")
        last = docs
        return KeyBatch([(k, len(m), sorted(m)) for k, m in groups.items() if len(m) > 1], keys, len(need), docs,
                        held=table.held)

    size = 0
    for h, members in table.groups():
        pending.append((h, members))
        size += len(members)
        if size >= SHARE_BATCH:
            yield batch()
            pending, size = [], 0
    if pending:
        yield batch()


def doc_keys(docs: Mapping[str, StoredDoc], config: FingerprintConfig, *, lsh: bool = True) -> dict[str, list[str]]:
    """The band and LSH keys the index holds for each of ``docs``, from their fingerprints (what ingest stored):
    the SimHash band keys of a text long enough for them, and the LSH keys of a signature of the config's
    length (``lsh``), computed for all the signatures at once."""
    out = {i: band_keys(d, config) for i, d in docs.items()}
    if lsh and config.gets_signatures:
        signed = [(i, sig) for i, d in docs.items() if (sig := lsh_signature(d, config)) is not None]
        if signed:
            sigs = np.stack([sig for _, sig in signed])
            for (i, _), keys in zip(signed, lsh_keys_many(sigs, config.minhash_bands, config.minhash_rows),
                                    strict=True):
                out[i] += keys
    return out


def _key_batches(index: ElasticIndex, max_bucket: int, lsh: bool) -> Iterator[KeyBatch]:
    fields = index.key_fields(lsh=lsh)
    member_keys = MemberKeys(index, fields, _crowded_set(index, fields, max_bucket))
    for field in fields:
        for found in shared_values(index, field, 2):
            batch: list[tuple[str, int]] = []
            total = 0
            for value, n in found:
                if batch and total + min(n, max_bucket) > PAGE:
                    yield _members(index, field, batch, member_keys, max_bucket)
                    batch, total = [], 0
                batch.append((value, n))
                total += min(n, max_bucket)
            if batch:
                yield _members(index, field, batch, member_keys, max_bucket)


#: Most documents whose keys `MemberKeys` keeps (some 500 bytes each): past it the oldest half is let go, and a
#: document let go is read again if a later group holds it.
MEMBER_KEYS = 200_000


class MemberKeys:
    """Every key (of ``fields``, less the ``crowded``) of the documents of the key groups read so far, each
    document's read from the store once: a member of a near-duplicate pair is in some 15 groups, one a key
    field it shares, and reading its keys with each was most of a partition's time. At most ``limit``
    documents are kept, the oldest let go first, so that the memory is bounded whatever the index's size; each
    as one string of its keys, a quarter of the memory of a set of them (a set is made for a batch only)."""

    def __init__(self, index: ElasticIndex, fields: Sequence[str], crowded: frozenset[str],
                 limit: int = MEMBER_KEYS) -> None:
        self.index, self.fields, self.crowded, self.limit = index, list(fields), crowded, limit
        self.keys: dict[str, str] = {}
        #: Documents read since the last `take_fetched`.
        self.fetched = 0

    def of(self, ids: Collection[str]) -> dict[str, frozenset[str]]:
        """The keys of ``ids`` (a document gone from the index has none), read for those not kept."""
        missing = sorted({i for i in ids if i not in self.keys})
        if len(self.keys) + len(missing) > self.limit:
            wanted = set(ids)
            drop = len(self.keys) - self.limit // 2
            for doc_id in [d for d in self.keys if d not in wanted][:drop]:
                del self.keys[doc_id]
        for start in range(0, len(missing), PAGE):
            chunk = missing[start:start + PAGE]
            resp = self.index.search("fetching band members' keys", size=len(chunk),
                                     query={"ids": {"values": chunk}}, docvalue_fields=self.fields, _source=False,
                                     track_total_hits=False, filter_path=["_shards", "hits.hits._id",
                                                                          "hits.hits.fields"])
            self.fetched += len(chunk)
            # Every member brings all its keys (16 or more): turned into strings once, in C (map, set
            # operations), the join's largest client cost after reading the responses.
            for h in (resp.get("hits") or {}).get("hits", []):
                got = h.get("fields", {})
                held = frozenset(map(str, itertools.chain.from_iterable(got.get(f, ()) for f in self.fields)))
                # No key holds a space: band keys are "<table>:<hex>", LSH keys decimal integers.
                self.keys[h["_id"]] = " ".join(held - self.crowded if self.crowded else held)
        none: frozenset[str] = frozenset()
        return {i: frozenset(self.keys[i].split(" ")) if self.keys[i] else none for i in ids if i in self.keys}

    def take_fetched(self) -> int:
        """The documents read since the last call."""
        n, self.fetched = self.fetched, 0
        return n


def _members(index: ElasticIndex, field: str, values: list[tuple[str, int]], member_keys: MemberKeys,
             max_bucket: int) -> KeyBatch:
    """The `KeyBatch` of some values of ``field``: one search for the members of the values held by at most
    ``max_bucket`` documents (their ids and their values of ``field`` only), one a crowded value (its first
    ``max_bucket`` documents); the members' keys from ``member_keys``."""
    groups: dict[str, list[str]] = {v: [] for v, _ in values}
    normal = [(v, n) for v, n in values if n <= max_bucket]
    for v, n in values:
        if n > max_bucket:
            groups[v] = _first_members(index, field, v, max_bucket)
    if normal:
        vals = [v for v, _ in normal]
        resp = index.search("fetching band members", size=sum(n for _, n in normal), query={"terms": {field: vals}},
                            docvalue_fields=[field], _source=False, track_total_hits=False, sort=["_doc"],
                            filter_path=["_shards", "hits.hits._id", "hits.hits.fields"])
        asked = set(vals)  # a hit may hold several values of the field (the LSH keys field holds many)
        for h in (resp.get("hits") or {}).get("hits", []):
            doc_id = h["_id"]
            for v in asked.intersection(map(str, h.get("fields", {}).get(field, ()))):
                if len(groups[v]) < max_bucket:
                    groups[v].append(doc_id)
    kept = [(v, n, sorted(groups[v])) for v, n in values if len(groups[v]) > 1]
    keys = member_keys.of({doc_id for _, _, ids in kept for doc_id in ids})
    return KeyBatch(kept, keys, member_keys.take_fetched())


def _first_members(index: ElasticIndex, field: str, value: str, max_bucket: int) -> list[str]:
    """The ``max_bucket`` smallest ids among the documents holding a crowded value: the members the in-memory
    LSH join and the embedded store take, so that every join, and every partition, compares the same
    documents of a crowd. Every holder's id is read (a point in time) to find them: the index cannot sort on
    ``_id``; ids only (a crowd of thousands read with its vectors took half a second a value)."""
    first: list[str] = []
    for hits in scans.hit_pages(index, "fetching band members", query={"term": {field: value}}, docvalue_fields=(),
                                source=False):
        first += (h["_id"] for h in hits)
        if len(first) > 4 * max_bucket:  # only the smallest are kept
            first = sorted(first)[:max_bucket]
    return sorted(first)[:max_bucket]


def crowded_keys(index: ElasticIndex, *, min_count: int, limit: int = 20, lsh: bool = True) -> list[tuple[str, int]]:
    """See `Store.crowded_keys`."""
    return most_held(index, index.key_fields(lsh=lsh), limit, "crowded band values", min_count=min_count)
