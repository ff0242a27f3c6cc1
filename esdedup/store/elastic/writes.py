"""Bulk requests of the Elasticsearch store: documents indexed with retries (`Bulk.write`), and the one loop
that sends partial updates and deletes (`Bulk.items`).

Writes go through `elasticsearch.helpers.streaming_bulk` (chunked by count and bytes); documents rejected
with 429 (write queue full) or a 5xx status, and whole requests throttled with 429, are re-sent here with
exponential backoff and counted in `Bulk.retried`.
"""
from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from esdedup.errors import WriteRefused
from esdedup.es.answers import api_reason, bulk_reason, refused_by_the_store
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.schema import DEDUP, dedup_source, json_bytes
from esdedup.store.base import NewDoc, WriteResult
from esdedup.store.elastic.index import ElasticIndex

log = logging.getLogger(__name__)

#: Actions per bulk request of partial updates and deletes (small documents).
UPDATE_CHUNK = 1000


def index_action(index: str, config: FingerprintConfig, d: NewDoc) -> dict[str, Any]:
    """The bulk action that writes one document whole, its source already encoded as JSON."""
    if d.dedup_json is not None:
        return {"_op_type": "index", "_index": index, "_id": d.id, "_source": _spliced(d)}
    dedup = {**dedup_source(d.fingerprint, config, d.content_sha1), **_labels(d)}
    # The source goes to the bulk helper already encoded: JSON encoding (the vector's floats above all) is the
    # client's largest cost in a bulk load, and orjson does it at a fraction of the standard library's cost.
    return {"_op_type": "index", "_index": index, "_id": d.id, "_source": json_bytes({**d.source, DEDUP: dedup})}


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
        from elasticsearch import helpers

        index = self.index
        pending: dict[str, dict[str, Any]] = {}

        def actions(source: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
            for a in source:
                pending[a["_id"]] = a
                yield a

        todo: Iterator[dict[str, Any]] = (index_action(index.name, index.config, d) for d in docs)
        last_refusal: Mapping[str, Any] = {}
        for attempt in range(self.max_retries + 1):
            retry: list[dict[str, Any]] = []
            with index.errors("bulk indexing"):
                try:
                    # Retries are done here, not by the helper (max_retries=0), so that every re-sent
                    # document is counted in `retried`: items rejected with 429 (write queue full) or 5xx.
                    for ok, item in helpers.streaming_bulk(
                            index.client, actions(todo), chunk_size=self.chunk_size,
                            max_chunk_bytes=self.max_chunk_bytes, raise_on_error=False, raise_on_exception=True,
                            max_retries=0, yield_ok=True):
                        info = item_info(item)
                        doc_id = str(info.get("_id"))
                        status = int(info.get("status", 0) or 0)
                        action = pending.pop(doc_id, None)
                        if ok:
                            index.own_writes += 1
                            yield WriteResult(doc_id, True, created=info.get("result") == "created", status=status)
                        elif (status == 429 or status >= 500) and action is not None and attempt < self.max_retries:
                            retry.append(action)
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
                except es.ApiError as exc:
                    if exc.meta.status != 429 or attempt >= self.max_retries:
                        raise
                    # The whole request was throttled: re-send what is unconfirmed, then the rest.
                    retry.extend(pending.values())
                    pending.clear()
                    self.retried += len(retry)
                    self._wait(attempt, f"the bulk request was throttled (429: {api_reason(exc)})", len(retry))
                    todo = itertools.chain(retry, todo)
                    continue
            if not retry:
                return
            self.retried += len(retry)
            self._wait(attempt, f"{len(retry)} documents were refused "
                       f"({last_refusal.get('status')}: {bulk_reason(last_refusal)})", len(retry))
            todo = iter(retry)

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

        with self.index.errors(what):
            for ok, item in helpers.streaming_bulk(self.index.client, actions, chunk_size=UPDATE_CHUNK,
                                                   raise_on_error=False, max_retries=self.max_retries,
                                                   initial_backoff=self.initial_backoff):
                yield ok, item_info(item)

    def update_action(self, doc_id: str, dedup: Mapping[str, Any], version: tuple[int, int] | None = None) -> dict[str, Any]:
        """The bulk action of a partial update of a document's ``dedup`` fields, conditional on ``version``
        (``_seq_no``, ``_primary_term``) when given."""
        action: dict[str, Any] = {"_op_type": "update", "_index": self.index.name, "_id": doc_id,
                                  "doc": {DEDUP: dict(dedup)}}
        if version is not None:
            action["if_seq_no"], action["if_primary_term"] = version
        return action


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
