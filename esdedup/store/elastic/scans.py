"""Reading a whole Elasticsearch index, or every document a query matches, as it was when the reading began:
pages of hits through a point in time."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from operator import itemgetter
from typing import Any

import numpy as np

from esdedup.es.hits import (
    FINGERPRINT_FIELDS,
    VECTOR_SOURCE,
    b64_form,
    decode_signatures,
    hit_parts,
    parse_minhash,
    parse_simhash,
    parse_vector,
)
from esdedup.schema import CHARS, EMPTY, SHINGLES, SIMHASH
from esdedup.store.base import StoredDoc, holds_band_keys
from esdedup.store.columns import SignatureColumns
from esdedup.store.elastic.index import PAGE, ElasticIndex
from esdedup.util.prefetch import ahead


def hit_pages(index: ElasticIndex, what: str, *, query: Mapping[str, Any] | None = None, batch: int = 5000,
              docvalue_fields: Sequence[str] = FINGERPRINT_FIELDS, versions: bool = False,
              keep_alive: str = "2m", source: bool = True) -> Iterator[list[dict[str, Any]]]:
    """The raw hits of ``query`` (default: every document) as the index held them when the call started (a
    point in time, sorted by ``_shard_doc``, search_after paging), with the fingerprint's doc values and the
    signature/vector ``_source`` (``source`` False: doc values only); ``versions`` adds each hit's
    ``_seq_no``/``_primary_term``. The next page is asked for while the caller reads this one (`ahead`): the
    nodes' search and the caller's work overlap instead of taking turns (a scan's wall time their sum)."""
    return ahead(_pages(index, what, query, min(batch, PAGE), docvalue_fields, versions, keep_alive, source))


def _pages(index: ElasticIndex, what: str, query: Mapping[str, Any] | None, batch: int,
           docvalue_fields: Sequence[str], versions: bool, keep_alive: str,
           source: bool) -> Iterator[list[dict[str, Any]]]:
    with index.errors("opening a point in time"):
        pit = index.client.open_point_in_time(index=index.name, keep_alive=keep_alive)["id"]
    try:
        after = None
        while True:
            body: dict[str, Any] = {"size": batch, "pit": {"id": pit, "keep_alive": keep_alive},
                                    "sort": [{"_shard_doc": "asc"}], "_source": VECTOR_SOURCE if source else False,
                                    "docvalue_fields": list(docvalue_fields), "track_total_hits": False}
            if query is not None:
                body["query"] = query
            if versions:
                body["seq_no_primary_term"] = True
            if after is not None:
                body["search_after"] = after
            with index.errors(what):
                resp = index.client.search(**body)  # a point in time names its index itself
            index.complete(resp, what)
            hits = resp["hits"]["hits"]
            if not hits:
                return
            pit = resp.get("pit_id", pit)
            after = hits[-1]["sort"]
            yield hits
    finally:
        with contextlib.suppress(Exception):  # the point in time expires by itself
            index.client.close_point_in_time(id=pit)


def scan(index: ElasticIndex, *, batch: int = 5000) -> Iterator[list[StoredDoc]]:
    """See `Store.scan`: every document, through a point in time."""
    for hits in hit_pages(index, "scanning documents", batch=batch):
        yield [index.doc(h) for h in hits]


def scan_empty(index: ElasticIndex, *, batch: int = 5000) -> Iterator[list[StoredDoc]]:
    """See `Store.scan_empty`: the documents without words, through a point in time."""
    for hits in hit_pages(index, "scanning documents without words", query={"term": {EMPTY: True}}, batch=batch):
        yield [index.doc(h) for h in hits]


#: What all-pairs search reads of each document (`signature_columns`): four doc values of those a `scan` asks
#: the nodes for, the signature and the vector from ``_source``.
_SIGNATURE_DOCVALUES = (SIMHASH, EMPTY, CHARS, SHINGLES)
_SIGNATURE_PARTS = ("simhash", "empty", "chars", "shingles", "minhash", "vector")


def _page_signatures(parts: list[dict[str, Any]], perm: int) -> tuple[np.ndarray, list[int]]:
    """The signatures of a page's hits (their `hit_parts`) of the form ``perm`` values take, decoded at once
    (`decode_signatures`), and where each hit's is among them (-1: a hit without one, or of another form, which
    `parse_minhash` reads alone, refusing what it refuses). A page holding a string of that form that is no
    base64 is read hit by hit, so the refusal names its hit."""
    width, padding = b64_form(perm)
    at: list[int] = []
    encoded: list[str] = []
    for p in parts:
        raw = p["minhash"]
        if type(raw) is str and len(raw) == width and raw.endswith(padding):
            at.append(len(encoded))
            encoded.append(raw)
        else:
            at.append(-1)
    decoded = decode_signatures(encoded, perm)
    if decoded is None:
        return np.zeros((0, perm), dtype=np.uint32), [-1] * len(parts)
    return decoded, at


def signature_columns(index: ElasticIndex, perm: int) -> SignatureColumns:
    """See `esdedup.store.columns.SignatureColumnsStore`: `SignatureColumns.of` a `scan`, each part read as
    `ElasticIndex.doc` reads it (the same values, the same refusals), without a `StoredDoc` a hit; the
    signatures stacked a page at a time."""
    config = index.config
    rows: list[tuple[str, int, int, int, int, np.ndarray]] = []  # id, SimHash, length, n-grams, row, vector
    pages: list[np.ndarray] = []
    elsewhere = 0  # documents with band keys left out
    for hits in hit_pages(index, "reading signatures", docvalue_fields=_SIGNATURE_DOCVALUES):
        parts = [hit_parts(h, _SIGNATURE_PARTS) for h in hits]
        decoded, at = _page_signatures(parts, perm)
        page: list[np.ndarray] = []
        kept: list[int] = []  # their rows of ``decoded`` (-1: read alone)
        for h, p, x in zip(hits, parts, at, strict=True):
            simhash = parse_simhash(p["simhash"] or "0", config.bits, h)
            sig = parse_minhash(p["minhash"] or None, h) if x < 0 else decoded[x]
            shingles, chars = int(p["shingles"] or 0), int(p["chars"] or 0)
            if p["empty"] or sig is None or shingles <= 0 or len(sig) != perm:
                if holds_band_keys(bool(p["empty"]), chars, config):
                    elsewhere += 1
                continue
            rows.append((h["_id"], simhash, chars, shingles, len(rows),
                         parse_vector(p["vector"], config.dims)))
            page.append(sig)
            kept.append(x)
        if page:
            # One copy of the decoded rows (most pages), or the rows stacked where some were read alone.
            pages.append(decoded[kept] if min(kept) >= 0 else np.stack(page))
    rows.sort(key=itemgetter(0))
    sigs = np.concatenate(pages)[[r[4] for r in rows]] if rows else np.zeros((0, perm), dtype=np.uint32)
    vectors = [r[5] for r in rows]
    return SignatureColumns([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], [r[3] for r in rows],
                            sigs, elsewhere, lambda: (np.stack(vectors).astype(np.float32, copy=False) if vectors
                                           else np.zeros((0, config.dims), dtype=np.float32)))
