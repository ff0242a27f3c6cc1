"""Bulk requests of the Elasticsearch store: documents indexed with retries (`Bulk.write`), and the one loop
that sends partial updates and deletes (`Bulk.items`).

`Bulk.write` sends the documents as bulk request bodies it encodes itself (each document's JSON, its
``dedup`` fields encoded in advance where ingest's workers did it, spliced behind its action line), chunked by
count and bytes; documents rejected with 429 (write queue full) or a 5xx status, and whole requests throttled
with 429, are re-sent with exponential backoff and counted in `Bulk.retried`. Partial updates and deletes
(small, and built as dicts by the label code) go through `elasticsearch.helpers.streaming_bulk`.
"""
from __future__ import annotations

import functools
import itertools
import logging
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from esdedup.errors import StoreError, WriteRefused
from esdedup.es.answers import api_reason, bulk_reason, refused_by_the_store
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.schema import DEDUP, dedup_source, json_bytes
from esdedup.store.base import NewDoc, WriteResult
from esdedup.store.elastic.index import ElasticIndex
from esdedup.util import native

log = logging.getLogger(__name__)

#: Actions per bulk request of partial updates and deletes (small documents).
UPDATE_CHUNK = 1000
#: What `Bulk.write` reads of a bulk answer (``filter_path``): each item's status, result and error, in the
#: order of the request.
BULK_ANSWER = "items.*.status,items.*.result,items.*.error"

#: A document as `Bulk.write` sends it: its id, and its two lines of the bulk request (action and source).
_Action = tuple[str, bytes]


def document_json(config: FingerprintConfig, d: NewDoc) -> bytes:
    """The JSON of one document as it is written whole: its article fields and its ``dedup`` fields."""
    if d.dedup_json is not None:
        return _spliced(d)
    dedup = {**dedup_source(d.fp, config, d.content_sha1), **_labels(d)}
    # Encoded by esdedup, not by the client: JSON encoding (the vector's floats above all) is the client's
    # largest cost in a bulk load, and orjson does it at a fraction of the standard library's cost.
    return json_bytes({**d.source, DEDUP: dedup})


def bulk_actions(index: str, config: FingerprintConfig, docs: Iterable[NewDoc]) -> Iterator[_Action]:
    """Each document's id and its two lines of a bulk request that writes it whole into ``index`` (the action,
    then `document_json`). The native core writes the lines of a group of documents at once, with the GIL
    released, where it writes the same bytes (``bulk_document_lines``, native/src/esbulk.rs: None for a
    document it leaves to Python); the rest are encoded here."""
    header = b'{"index":{"_index":' + json_bytes(index) + b',"_id":'
    native_lines = native.function("bulk_document_lines")
    it = iter(docs)
    while group := list(itertools.islice(it, _NATIVE_GROUP)):
        made = native_lines(header, group, DEDUP) if native_lines is not None else [None] * len(group)
        for d, lines in zip(group, made, strict=True):
            yield d.id, lines if lines is not None else action_lines(header, config, d)


def action_lines(header: bytes, config: FingerprintConfig, d: NewDoc) -> bytes:
    """One document's two lines of a bulk request: ``header`` (the action up to the id), its id, then its
    JSON (`document_json`)."""
    return b"".join((header, json_bytes(d.id), b"}}\n", document_json(config, d), b"\n"))


#: Documents whose bulk lines the native core writes in one call (`bulk_actions`).
_NATIVE_GROUP = 1000


def index_action(index: str, config: FingerprintConfig, d: NewDoc) -> dict[str, Any]:
    """The action for ``elasticsearch.helpers`` that writes one document whole, its source already encoded."""
    return {"_op_type": "index", "_index": index, "_id": d.id, "_source": document_json(config, d)}


def item_info(item: Mapping[str, Any]) -> dict[str, Any]:
    """The outcome of one bulk item (``{"index": {...}}`` -> ``{...}``)."""
    return next(iter(item.values()))  # type: ignore[no-any-return]


class Bulk:
    """Bulk requests to one index.

    Args:
        index: the index.
        chunk_size / max_chunk_bytes: chunking of `write`.
        max_retries / initial_backoff / max_backoff: re-sends of documents rejected with 429 or 5xx.
    """

    def __init__(self, index: ElasticIndex, *, chunk_size: int = 500, max_chunk_bytes: int = 10 * 2**20,
                 max_retries: int = 8, initial_backoff: float = 0.5, max_backoff: float = 30.0) -> None:
        self.index = index
        self.chunk_size, self.max_chunk_bytes = chunk_size, max_chunk_bytes
        self.max_retries, self.initial_backoff, self.max_backoff = max_retries, initial_backoff, max_backoff
        #: Documents re-sent after a retryable rejection (429 or 5xx), for the ingest summary.
        self.retried = 0

    def write(self, docs: Iterable[NewDoc]) -> Iterator[WriteResult]:
        """Index documents; yields one result per document (order within a chunk may differ on retry)."""
        import elasticsearch as es

        index = self.index
        todo: Iterator[_Action] = bulk_actions(index.name, index.config, docs)
        last_refusal: Mapping[str, Any] = {}
        for attempt in range(self.max_retries + 1):
            # Items rejected with 429 (write queue full) or 5xx, re-sent after this pass and counted in `retried`.
            retry: list[_Action] = []
            chunks = _Chunks(todo, self.chunk_size, self.max_chunk_bytes)
            with index.errors("bulk indexing"):
                for chunk in chunks:
                    try:
                        items = self._send(chunk)
                    except es.ApiError as exc:
                        if exc.meta.status != 429 or attempt >= self.max_retries:
                            raise
                        # The whole request was throttled: re-send what is unconfirmed, then the rest.
                        retry.extend(chunk)
                        self.retried += len(retry)
                        self._wait(attempt, f"the bulk request was throttled (429: {api_reason(exc)})", len(retry))
                        todo = itertools.chain(retry, chunks.rest())
                        break
                    for (doc_id, lines), info in zip(chunk, items, strict=True):
                        status = int(info.get("status", 0) or 0)
                        if 200 <= status < 300:
                            index.own_writes += 1
                            yield WriteResult(doc_id, True, created=info.get("result") == "created", status=status)
                        elif (status == 429 or status >= 500) and attempt < self.max_retries:
                            retry.append((doc_id, lines))
                            last_refusal = info
                        elif refused_by_the_store(info):
                            raise WriteRefused(
                                f"{index.where('bulk indexing')}: the store refused to write document {doc_id!r} "
                                f"({status}: {bulk_reason(info)})"
                                + (f" after {attempt} re-sends" if attempt else "")
                                + "; the documents it did not confirm are left for a resumed run to write once "
                                "the index accepts writes again")
                        else:
                            yield WriteResult(doc_id, False, error=bulk_reason(info), status=status)
                else:
                    if not retry:
                        return
                    self.retried += len(retry)
                    self._wait(attempt, f"{len(retry)} documents were refused "
                               f"({last_refusal.get('status')}: {bulk_reason(last_refusal)})", len(retry))
                    todo = iter(retry)

    def _send(self, chunk: list[_Action]) -> list[dict[str, Any]]:
        """One bulk request of ``chunk``; the outcome of each item, in the order sent. The answer keeps only
        what is read of it (`BULK_ANSWER`): reading it is then a small part of the client's work."""
        resp = self.index.client.bulk(operations=b"".join(lines for _, lines in chunk), filter_path=BULK_ANSWER)
        items = resp.get("items") or []
        if len(items) != len(chunk):
            raise StoreError(f"{self.index.where('bulk indexing')}: the answer to a bulk request of {len(chunk)} "
                             f"documents holds {len(items)} outcomes")
        return [item_info(item) for item in items]

    def _wait(self, attempt: int, why: str, documents: int) -> None:
        """Wait before re-sending, and say what for: a wait of seconds is a warning (a store that refuses
        for long, a full disk or a write block, shows here before the run stops)."""
        pause = min(self.max_backoff, self.initial_backoff * 2**attempt)
        (log.warning if pause >= 2 else log.info)(
            "%s: %s; re-sending %d documents in %.1f s (re-send %d of %d, then the run stops)",
            self.index.where("bulk indexing"), why, documents, pause, attempt + 1, self.max_retries)
        time.sleep(pause)

    def items(self, actions: Iterable[dict[str, Any]], what: str) -> Iterator[tuple[bool, dict[str, Any]]]:
        """Send partial updates or deletes (actions for ``streaming_bulk``; the helper re-sends those rejected
        with 429); yields each item's success and outcome (`item_info`), refusals included."""
        from elasticsearch import helpers

        # An engine adapter brings its own helper (esdedup.es.opensearch); Elasticsearch's client has none.
        stream = getattr(self.index.client, "streaming_bulk", None) or functools.partial(
            helpers.streaming_bulk, self.index.client)
        with self.index.errors(what):
            for ok, item in stream(actions, chunk_size=UPDATE_CHUNK, raise_on_error=False,
                                   max_retries=self.max_retries, initial_backoff=self.initial_backoff):
                yield ok, item_info(item)

    def update_action(self, doc_id: str, dedup: Mapping[str, Any], version: tuple[int, int] | None = None) -> dict[str, Any]:
        """The bulk action of a partial update of a document's ``dedup`` fields, conditional on ``version``
        (``_seq_no``, ``_primary_term``) when given."""
        action: dict[str, Any] = {"_op_type": "update", "_index": self.index.name, "_id": doc_id,
                                  "doc": {DEDUP: dict(dedup)}}
        if version is not None:
            action["if_seq_no"], action["if_primary_term"] = version
        return action


class _Chunks:
    """Actions in bulk requests of at most ``count`` documents and ``size`` bytes (a larger document goes
    alone). A chunk is known to be full only once the action after it is read: `rest` gives that one back
    with those not read yet, for a caller that stops after a chunk."""

    def __init__(self, actions: Iterator[_Action], count: int, size: int) -> None:
        self.actions, self.count, self.size = actions, count, size
        self._next: _Action | None = None

    def __iter__(self) -> Iterator[list[_Action]]:
        chunk: list[_Action] = []
        size = 0
        for action in self.actions:
            if chunk and (len(chunk) >= self.count or size + len(action[1]) > self.size):
                self._next = action
                yield chunk
                self._next = None
                chunk, size = [], 0
            chunk.append(action)
            size += len(action[1])
        if chunk:
            yield chunk

    def rest(self) -> Iterator[_Action]:
        """The actions not given in a chunk yet."""
        return itertools.chain([] if self._next is None else [self._next], self.actions)


def _labels(d: NewDoc) -> dict[str, Any]:
    """The ``dedup`` fields a writer adds to a document's fingerprint: its cluster and write order."""
    labels: dict[str, Any] = {}
    if d.cluster_id is not None:
        labels["cluster_id"] = d.cluster_id
    if d.duplicate_of is not None:
        labels["duplicate_of"] = d.duplicate_of
    if d.seq:
        labels["seq"], labels["cluster_seq"] = d.seq, d.cluster_seq
    return labels


def _spliced(d: NewDoc) -> bytes:
    """A document's JSON from its article fields, its ``dedup`` fields encoded in advance and its labels."""
    head = json_bytes({k: v for k, v in d.source.items() if k != DEDUP})[:-1]
    tail = json_bytes(_labels(d))[1:-1]
    return b"".join((head, b"," if len(head) > 1 else b"", b'"' + DEDUP.encode() + b'":{', d.dedup_json or b"",
                     b"," if tail and d.dedup_json else b"", tail, b"}}"))
