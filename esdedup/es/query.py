"""Elasticsearch request bodies for band lookups, kNN and fetching fingerprints. Pure: dicts in, dicts out.

A band lookup is a ``bool`` query whose ``should`` clauses are one ``term`` query per band (a ``terms``
query when the layout probes neighbours), at least one of which must match; filters narrow it. A batched
lookup (`batch_lookup_body`) asks once for every document holding any key of many probes, one ``terms``
query a key field, and returns each hit's key values, so that the client gives each probe its own. SimHash
bands have a field each; the MinHash LSH bands ``lsh_<i>`` all query the one field ``dedup.lsh_keys``
(`esdedup.schema.key_field`), still one clause a band.
Candidates come back with their SimHash and labels as doc values and their vector from ``_source``, never
the article text, and are scored exactly client-side (`esdedup.match.lookup`).
"""
from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from esdedup.es.hits import FINGERPRINT_FIELDS, VECTOR_SOURCE
from esdedup.schema import DEDUP, SHINGLES, VECTOR, key_field


@functools.lru_cache(maxsize=1024)
def stored_key_field(name: str) -> str:
    """The full name (``dedup.<field>``) of the stored field that holds a probe's band ``name``
    (`esdedup.schema.key_field`); kept per name, as a batch of lookups asks it for every band of every probe.

    >>> stored_key_field("band_2"), stored_key_field("lsh_7")
    ('dedup.band_2', 'dedup.lsh_keys')
    """
    return f"{DEDUP}.{key_field(name)}"


def band_query(probe: Mapping[str, Sequence[str]], *, filters: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """The query part of a band lookup.

    >>> band_query({"band_0": ["0:ab"], "band_1": ["1:cd", "1:ce"], "lsh_0": ["12"]})["bool"]["should"]
    ... # doctest: +NORMALIZE_WHITESPACE
    [{'constant_score': {'filter': {'term': {'dedup.band_0': '0:ab'}}}},
     {'constant_score': {'filter': {'terms': {'dedup.band_1': ['1:cd', '1:ce']}}}},
     {'constant_score': {'filter': {'term': {'dedup.lsh_keys': '12'}}}}]
    """
    should: list[dict[str, Any]] = []
    for name, keys in probe.items():
        field = stored_key_field(name)
        # Each band a document shares scores 1, so a lookup's score is its number of shared bands (what
        # `Store.lookup` ranks candidates by), not a relevance guess.
        if len(keys) == 1:
            should.append({"constant_score": {"filter": {"term": {field: keys[0]}}}})
        elif keys:
            should.append({"constant_score": {"filter": {"terms": {field: list(keys)}}}})
    query: dict[str, Any] = {"bool": {"should": should, "minimum_should_match": 1}}
    if filters:
        query["bool"]["filter"] = list(filters)
    return query


def lookup_body(probe: Mapping[str, Sequence[str]], *, size: int = 1000,
                filters: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """A full ``_search`` body for one band lookup (also one entry of an ``_msearch``)."""
    return {"size": size, "query": band_query(probe, filters=filters), "_source": VECTOR_SOURCE,
            "docvalue_fields": FINGERPRINT_FIELDS, "track_total_hits": False,
            "sort": [{"_score": "desc"}, "_doc"], "seq_no_primary_term": True}


def msearch_body(index: str, probes: Sequence[Mapping[str, Sequence[str]]], *, size: int = 1000,
                 filters: Sequence[dict[str, Any]] = ()) -> list[dict[str, Any]]:
    """Header/body pairs for ``_msearch``: one band lookup per probe."""
    out: list[dict[str, Any]] = []
    for probe in probes:
        out.append({"index": index})
        out.append(lookup_body(probe, size=size, filters=filters))
    return out


def keys_by_field(probes: Iterable[Mapping[str, Sequence[str]]]) -> dict[str, list[str]]:
    """The band keys of several probes by stored field (``dedup.<field>``), each key once, in first-seen order.

    >>> keys_by_field([{"band_0": ["0:ab"], "lsh_0": ["12"], "lsh_1": ["7"]}, {"band_0": ["0:ab", "0:cd"]}])
    {'dedup.band_0': ['0:ab', '0:cd'], 'dedup.lsh_keys': ['12', '7']}
    """
    out: dict[str, dict[str, None]] = {}
    for probe in probes:
        for name, keys in probe.items():
            if keys:
                field = stored_key_field(name)
                seen = out.get(field)
                if seen is None:
                    seen = out[field] = {}
                for k in keys:
                    seen[k] = None
    return {field: list(keys) for field, keys in out.items()}


def _any_key(keys: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    return {"bool": {"should": [{"terms": {field: list(values)}} for field, values in keys.items()],
                     "minimum_should_match": 1}}


def batch_lookup_body(keys: Mapping[str, Sequence[str]], *, size: int) -> dict[str, Any]:
    """One ``_search`` for the band lookups of many probes: every document holding any of ``keys`` (by stored
    field, `keys_by_field`), unscored in index order, with its fingerprint and its own key values (doc values
    of the key fields), from which the client tells which probe it answers."""
    return {"size": size, "query": {"bool": {"filter": [_any_key(keys)]}}, "_source": VECTOR_SOURCE,
            "docvalue_fields": FINGERPRINT_FIELDS + list(keys), "track_total_hits": False, "sort": ["_doc"],
            "seq_no_primary_term": True}


def key_counts_body(keys: Sequence[str] | Mapping[str, Sequence[str]], *, min_count: int, size: int,
                    shard_size: int | None = None, partition: tuple[int, int] = (0, 1),
                    shard_min_count: int | None = None) -> dict[str, Any]:
    """A count-only ``_search`` whose aggregation ``<field>`` lists, for each key field of ``keys``, the values
    held by at least ``min_count`` documents with their counts, most held first, at most ``size`` a field.

    ``keys`` names the fields (every value counts), or maps them to the values to count (only the documents
    holding one are read). ``partition`` (p, of n), with named fields: only the values in the p-th of n
    partitions of each field's values. ``shard_size``: how many values each shard sends (None: the node's
    default). ``shard_min_count``: a shard sends only the values it holds that many times or more.

    >>> key_counts_body({"dedup.band_0": ["0:ab", "0:cd"]}, min_count=3, size=1000)["aggs"]
    ... # doctest: +NORMALIZE_WHITESPACE
    {'dedup.band_0': {'terms': {'field': 'dedup.band_0', 'min_doc_count': 3, 'size': 2,
                                'include': ['0:ab', '0:cd'], 'execution_hint': 'map'}}}
    >>> key_counts_body(["dedup.lsh_keys"], min_count=2, size=10, partition=(1, 4))["aggs"]["dedup.lsh_keys"]
    {'terms': {'field': 'dedup.lsh_keys', 'min_doc_count': 2, 'size': 10, 'include': {'partition': 1, 'num_partitions': 4}}}
    """
    aggs: dict[str, Any] = {}
    for field in keys:
        terms: dict[str, Any] = {"field": field, "min_doc_count": min_count, "size": size}
        if shard_size is not None:
            terms["shard_size"] = shard_size
        if shard_min_count is not None:
            terms["shard_min_doc_count"] = shard_min_count
        if isinstance(keys, Mapping):
            # "map": count the few matching documents' values, not the field's global ordinals (rebuilt after
            # each refresh of an index being written).
            terms.update(size=min(size, len(keys[field])), include=list(keys[field]), execution_hint="map")
        elif partition[1] > 1:
            terms["include"] = {"partition": partition[0], "num_partitions": partition[1]}
        aggs[field] = {"terms": terms}
    body: dict[str, Any] = {"size": 0, "aggs": aggs, "track_total_hits": False}
    if isinstance(keys, Mapping):
        body["query"] = {"bool": {"filter": [_any_key(keys)]}}
    return body


#: The measures the esdedup plugin's script language computes on the node.
NODE_MEASURES = ("hamming", "cosine", "jaccard", "containment")


def node_verified_body(probe: Mapping[str, Sequence[str]], params: Mapping[str, Any], *, size: int) -> dict[str, Any]:
    """A band lookup whose candidates the node verifies itself (the esdedup plugin's ``near_duplicate``
    script: 0 unless the rule says near-duplicate, so ``min_score`` drops the rest), nearest first, with the
    measures as script fields."""
    def script(source: str) -> dict[str, Any]:
        return {"lang": "esdedup", "source": source, "params": dict(params)}

    return {"size": size, "_source": False, "track_total_hits": False, "docvalue_fields": [SHINGLES],
            "query": {"script_score": {"query": band_query(probe), "script": script("near_duplicate"),
                                       "min_score": 1.0}},
            "script_fields": {m: {"script": script(m)} for m in NODE_MEASURES}}


def knn_body(vector: Iterable[float], *, k: int = 10, num_candidates: int | None = None,
             filters: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """Top-level ``knn`` on the TF vector (the short-text path), returning fingerprints only."""
    knn: dict[str, Any] = {"field": VECTOR, "query_vector": [float(x) for x in vector], "k": k,
                           "num_candidates": num_candidates or max(100, 4 * k)}
    if filters:
        knn["filter"] = list(filters)
    return {"knn": knn, "size": k, "_source": VECTOR_SOURCE, "docvalue_fields": FINGERPRINT_FIELDS}


def ids_body(ids: Sequence[str]) -> dict[str, Any]:
    """Fetch the fingerprints of documents by id."""
    return {"size": len(ids), "query": {"ids": {"values": list(ids)}}, "_source": VECTOR_SOURCE,
            "docvalue_fields": FINGERPRINT_FIELDS, "track_total_hits": False, "seq_no_primary_term": True}
