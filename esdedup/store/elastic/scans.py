"""Reading a whole Elasticsearch index, or every document a query matches, as it was when the reading began:
pages of hits through a point in time."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
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
    plain_signature_hits,
)
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.schema import CHARS, EMPTY, SHINGLES, SIMHASH
from esdedup.store.base import StoredDoc, holds_band_keys
from esdedup.store.columns import SignatureColumns, in_signature_columns
from esdedup.store.elastic.index import PAGE, ElasticIndex
from esdedup.util.prefetch import ahead_of_all

#: Slices of one point in time the read of every signature takes at once (`hit_pages`). Each page of a chain needs
#: the page before it, so one chain leaves the node and the client taking turns; two keep both busy (both engines
#: slice a point in time, each its own way; BENCHMARKS.md, All pairs). Three or four were no faster on Elasticsearch
#: with node and client on two cores, and held more pages in memory.
SCAN_SLICES = 2


def hit_pages(index: ElasticIndex, what: str, *, query: Mapping[str, Any] | None = None, batch: int = 5000,
              docvalue_fields: Sequence[str] = FINGERPRINT_FIELDS, versions: bool = False,
              keep_alive: str = "2m", source: bool = True, slices: int = 1) -> Iterator[list[dict[str, Any]]]:
    """The raw hits of ``query`` (default: every document) as the index held them when the call started (a
    point in time, sorted by ``_shard_doc``, search_after paging), with the fingerprint's doc values and the
    signature/vector ``_source`` (``source`` False: doc values only); ``versions`` adds each hit's
    ``_seq_no``/``_primary_term``. The next page is asked for while the caller reads this one (`ahead`): the
    nodes' search and the caller's work overlap instead of taking turns (a scan's wall time their sum).

    ``slices``: the point in time read in that many slices at once, each a chain of pages of its own (see
    `SCAN_SLICES`); the pages then come in the order they arrive, not in ``_shard_doc`` order."""
    return _Pages(index, what, query, min(batch, PAGE), docvalue_fields, versions, keep_alive, source).read(slices)


class _Pages:
    """The chains of pages of one point-in-time read (`hit_pages`)."""

    def __init__(self, index: ElasticIndex, what: str, query: Mapping[str, Any] | None, batch: int,
                 docvalue_fields: Sequence[str], versions: bool, keep_alive: str, source: bool) -> None:
        self.index, self.what, self.keep_alive = index, what, keep_alive
        self.body: dict[str, Any] = {"size": batch, "sort": [{"_shard_doc": "asc"}],
                                     "_source": VECTOR_SOURCE if source else False,
                                     "docvalue_fields": list(docvalue_fields), "track_total_hits": False}
        if query is not None:
            self.body["query"] = query
        if versions:
            self.body["seq_no_primary_term"] = True
        self.pit: str | None = None  # the newest id a chain was given (each answer may give a new one)

    def read(self, slices: int) -> Iterator[list[dict[str, Any]]]:
        """The pages of ``slices`` chains, each read ahead in a thread of its own (`ahead_of_all`), the point in time
        closed after."""
        with self._held():
            yield from ahead_of_all([self._chain(i, slices) for i in range(slices)])

    def _chain(self, slice_id: int, slices: int) -> Iterator[list[dict[str, Any]]]:
        """The pages of slice ``slice_id`` of ``slices`` (the whole point in time when there is one)."""
        index = self.index
        assert self.pit is not None
        pit, after = self.pit, None
        while True:
            body = {**self.body, "pit": {"id": pit, "keep_alive": self.keep_alive}}
            if slices > 1:
                body["slice"] = {"id": slice_id, "max": slices}
            if after is not None:
                body["search_after"] = after
            with index.errors(self.what):
                resp = index.client.search(**body)  # a point in time names its index itself
            index.complete(resp, self.what)
            hits = resp["hits"]["hits"]
            if not hits:
                return
            pit = self.pit = resp.get("pit_id", pit)
            after = hits[-1]["sort"]
            yield hits

    @contextlib.contextmanager
    def _held(self) -> Iterator[None]:
        with self.index.errors("opening a point in time"):
            self.pit = self.index.client.open_point_in_time(index=self.index.name, keep_alive=self.keep_alive)["id"]
        try:
            yield
        finally:
            with contextlib.suppress(Exception):  # the point in time expires by itself
                self.index.client.close_point_in_time(id=self.pit)


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


class _SignatureRows:
    """The documents all-pairs search reads, gathered a page at a time: a column each, in the order read."""

    def __init__(self, config: FingerprintConfig, perm: int) -> None:
        self.config, self.perm = config, perm
        self.ids: list[str] = []
        self.simhash: list[int] = []
        self.chars: list[int] = []
        self.shingles: list[int] = []
        self.sigs: list[np.ndarray] = []  # a block of rows a page (uint16 as stored, or uint32)
        self.vectors: dict[int, np.ndarray] = {}  # by row: the documents stored with one
        self.elsewhere = 0  # documents with band keys left out

    def read(self, hits: list[dict[str, Any]]) -> None:
        """A page's hits: those of the plain form in the native core (`signature_hits`), the rest here."""
        plain = plain_signature_hits(hits, self.perm, self.config.bits, self.config.dims)
        if plain is None:
            self._read_in_python(hits)
            return
        keep = in_signature_columns(plain.empty, plain.signed, plain.shingles)
        for empty, chars in zip(plain.empty[~keep].tolist(), plain.chars[~keep].tolist(), strict=True):
            self.elsewhere += holds_band_keys(empty, chars, self.config)
        at = np.flatnonzero(keep)
        first = len(self.ids)
        self.ids += [plain.ids[x] for x in at.tolist()]
        self.simhash += plain.simhash[at].tolist()
        self.chars += plain.chars[at].tolist()
        self.shingles += plain.shingles[at].tolist()
        self.sigs.append(plain.sigs[at])
        vector_at = np.cumsum(plain.has_vector) - 1  # each hit's row of ``plain.vectors``
        for row, x in enumerate(at.tolist(), first):
            if plain.has_vector[x]:
                self.vectors[row] = plain.vectors[vector_at[x]]
        if not plain.read.all():
            self._read_in_python([h for h, r in zip(hits, plain.read.tolist(), strict=True) if not r])

    def _read_in_python(self, hits: list[dict[str, Any]]) -> None:
        """Hits read as `ElasticIndex.doc` reads them (the same values, the same refusals)."""
        config, perm = self.config, self.perm
        parts = [hit_parts(h, _SIGNATURE_PARTS) for h in hits]
        decoded, at = _page_signatures(parts, perm)
        page: list[np.ndarray] = []
        for h, p, x in zip(hits, parts, at, strict=True):
            simhash = parse_simhash(p["simhash"] or "0", config.bits, h)
            sig = parse_minhash(p["minhash"] or None, h) if x < 0 else decoded[x]
            shingles, chars = int(p["shingles"] or 0), int(p["chars"] or 0)
            empty = bool(p["empty"])
            if sig is None or not in_signature_columns(empty, len(sig) == perm, shingles):
                self.elsewhere += holds_band_keys(empty, chars, config)
                continue
            if p["vector"] is not None:
                self.vectors[len(self.ids)] = parse_vector(p["vector"], config.dims)
            self.ids.append(h["_id"])
            self.simhash.append(simhash)
            self.chars.append(chars)
            self.shingles.append(shingles)
            page.append(sig)
        if page:
            self.sigs.append(np.stack(page))

    def columns(self) -> SignatureColumns:
        """The documents read, sorted by id."""
        order = sorted(range(len(self.ids)), key=self.ids.__getitem__)
        sorted_at = np.empty(len(order), dtype=np.int64)
        sorted_at[order] = np.arange(len(order))
        # Each page's rows go straight to their places, the page let go of at once: the pages and a sorted
        # copy of them all never sit in memory together (half a gigabyte each at a million documents).
        sigs = np.empty((len(order), self.perm), dtype=np.uint32)
        start = 0
        self.sigs.reverse()
        while self.sigs:
            block = self.sigs.pop()
            sigs[sorted_at[start:start + len(block)]] = block
            start += len(block)
        dims, vectors = self.config.dims, self.vectors

        def read_vectors() -> np.ndarray:
            out = np.zeros((len(order), dims), dtype=np.float32)
            for row, vector in vectors.items():
                out[sorted_at[row]] = vector
            return out

        return SignatureColumns([self.ids[i] for i in order], [self.simhash[i] for i in order],
                                [self.chars[i] for i in order], [self.shingles[i] for i in order], sigs,
                                self.elsewhere, read_vectors)


def signature_columns(index: ElasticIndex, perm: int) -> SignatureColumns:
    """See `esdedup.store.columns.SignatureColumnsStore`: `SignatureColumns.of` a `scan`, each part read as
    `ElasticIndex.doc` reads it (the same values, the same refusals), without a `StoredDoc` a hit: the hits of
    the plain form in the native core (`plain_signature_hits`), the others in Python."""
    rows = _SignatureRows(index.config, perm)
    for hits in hit_pages(index, "reading signatures", docvalue_fields=_SIGNATURE_DOCVALUES, slices=SCAN_SLICES):
        rows.read(hits)
    return rows.columns()
