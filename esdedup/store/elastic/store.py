"""The Elasticsearch store: band keys as keyword fields, LSH keys as one long field, the TF vector (when the
config stores one) as a dense_vector, config in `_meta`.

Writes go through `elasticsearch.helpers.streaming_bulk` (chunked by count and bytes); documents rejected
with 429 (write queue full) or a 5xx status, and whole requests throttled with 429, are re-sent here with
exponential backoff and counted in `ElasticStore.retried`. Lookups of many probes share one search (one `terms`
query a key field, `esdedup.es.query.batch_lookup_body`) and the client gives each probe the hits sharing its keys;
probes holding crowded keys are ranked by the node, one band query each in `_msearch` batches.

Several writers may write one index at once; a document becomes visible to the others' lookups only after
a refresh, so writers settle their labels after writing (`esdedup.ingest.run`), and `merge_clusters` and
`delete_if_unchanged` change other writers' documents only under optimistic concurrency control
(``if_seq_no``/``if_primary_term``): an update based on a stale read is refused and read again.
"""
from __future__ import annotations

import contextlib
import dataclasses
import itertools
import logging
import math
import re
import time
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from esdedup.errors import (
    BulkError,
    CertificateError,
    ConfigError,
    ConnectionFailed,
    IndexNotFound,
    StoreError,
)
from esdedup.es import query as q
from esdedup.es import versions as versions
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.simhash import from_hex
from esdedup.schema import (
    DEDUP,
    config_from_meta,
    decode_minhash,
    dedup_source,
    json_bytes,
    key_field,
    key_fields,
    mapping_for,
)
from esdedup.store.base import (
    KeyBatch,
    NewDoc,
    OpenResult,
    Probe,
    Root,
    StoredDoc,
    WriteResult,
    mismatch_error,
    union_groups,
    validate_name,
)
from esdedup.util.prefetch import ahead
from esdedup.util.redact import redact

log = logging.getLogger(__name__)

#: Probes per `_msearch` request (probes the node ranks one by one).
MSEARCH_BATCH = 100
#: Probes per batched lookup search, and band keys per key field in it (a `terms` query takes at most
#: 65,536 by default, ``index.max_terms_count``).
LOOKUP_PROBES = 250
LOOKUP_TERMS = 30_000
#: Largest page of ids/values per request (below Elasticsearch's default max_result_window of 10,000).
PAGE = 5000
#: Shared values one partition of a key field should return (`ElasticStore.key_batches`).
PARTITION_BUCKETS = 20_000
#: Most partitions of one key field (a partition split past this means the field cannot be cut).
MAX_PARTITIONS = 1 << 20
#: Rounds of `ElasticStore.merge_clusters` before it gives up (each round moves clusters to earlier roots,
#: so a handful suffice even with many writers).
MERGE_ROUNDS = 50


@contextlib.contextmanager
def es_errors(where: str, secrets: Sequence[str | None] = ()) -> Iterator[None]:
    """Turn client exceptions into esdedup's typed errors, with secrets removed from the message."""
    import elasticsearch as es

    try:
        yield
    except es.AuthenticationException:
        raise ConnectionFailed(f"{where}: Elasticsearch refused the credentials (401)") from None
    except es.AuthorizationException as exc:
        raise ConnectionFailed(f"{where}: not allowed (403): {redact(str(exc.message), secrets)}") from None
    except es.NotFoundError as exc:
        raise IndexNotFound(f"{where}: not found: {redact(str(exc.message), secrets)}") from None
    except es.ApiError as exc:
        major = versions.refused_major(exc)
        if major is not None:  # the server refuses this client's major (e.g. a 9.x client, an 8.x server)
            raise versions.mismatch_error(where, f"{major}.x") from None
        reason = redact(_api_reason(exc), secrets)
        if "SSL certificate" in reason:  # a TLS-terminating proxy asks for the client's certificate
            raise CertificateError(f"{where}: Elasticsearch answered {exc.meta.status}: {reason} (the server "
                                   "requires a client certificate)", needs="client_cert") from None
        raise StoreError(f"{where}: Elasticsearch answered {exc.meta.status}: {reason}") from None
    except es.SerializationError as exc:
        raise StoreError(f"{where}: could not encode or decode a request: {redact(str(exc), secrets)}") from None
    except es.TransportError as exc:
        # ConnectionError, ConnectionTimeout, TLS errors: the cause is what matters, not the stack.
        reason = redact(str(exc.message if hasattr(exc, "message") else exc), secrets)
        if "CERTIFICATE_VERIFY_FAILED" in reason:
            raise CertificateError(f"{where}: TLS certificate verification failed ({reason})", needs="ca") from None
        raise ConnectionFailed(f"{where}: cannot reach Elasticsearch: {reason}") from None


_HTML_TITLE = re.compile(r"(?is)<title>(.*?)</title>")


def _api_reason(exc: Any) -> str:
    """The reason of an error answer; for a non-JSON answer (a proxy's HTML page) its title or first
    characters."""
    body = getattr(exc, "body", None)
    if isinstance(body, (str, bytes)) and body:
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        m = _HTML_TITLE.search(text)
        return " ".join((m.group(1) if m else re.sub(r"<[^>]+>", " ", text)).split())[:200]
    return str(exc.message)


def _first(fields: Mapping[str, Any], name: str, default: Any = None) -> Any:
    vals = fields.get(name)
    return vals[0] if vals else default


def hit_to_doc(hit: Mapping[str, Any], dims: int) -> StoredDoc:
    """A search hit (docvalue fields + vector in _source) as a `StoredDoc`."""
    f = hit.get("fields", {})
    src = hit.get("_source") or {}
    dedup = src.get(DEDUP) or {}
    vec = dedup.get("vector")
    vector = np.asarray(vec, dtype=np.float32) if vec is not None else np.zeros(dims, dtype=np.float32)
    version = (int(hit["_seq_no"]), int(hit["_primary_term"])) if "_seq_no" in hit else None
    return StoredDoc(hit["_id"], from_hex(_first(f, "dedup.simhash", "0")), vector,
                     bool(_first(f, "dedup.empty", False)), int(_first(f, "dedup.tokens", 0)),
                     int(_first(f, "dedup.chars", 0)), _first(f, "dedup.cluster_id"), _first(f, "dedup.duplicate_of"),
                     minhash=decode_minhash(dedup.get("minhash")), shingles=int(_first(f, "dedup.shingles", 0)),
                     seq=int(_first(f, "dedup.seq", 0)), cluster_seq=int(_first(f, "dedup.cluster_seq", 0)),
                     version=version, content_sha1=_first(f, "dedup.content_sha1"))


class ElasticStore:
    """An Elasticsearch index as a `Store`.

    Args:
        client: an ``elasticsearch.Elasticsearch`` client (the caller owns it).
        name: the index name.
        shards / replicas: used when the index is created.
        chunk_size / max_chunk_bytes: bulk chunking.
        max_retries / initial_backoff: bulk re-sends of documents rejected with 429 or 5xx (counted in
            ``retried``).
        secrets: strings to keep out of error messages (API key, password).
    """

    def __init__(self, client: Any, name: str, *, shards: int = 1, replicas: int | None = None,
                 chunk_size: int = 500, max_chunk_bytes: int = 10 * 2**20, max_retries: int = 8,
                 initial_backoff: float = 0.5, max_backoff: float = 30.0, display_url: str = "Elasticsearch",
                 secrets: Sequence[str | None] = ()) -> None:
        self.client = client
        self.name = validate_name(name)
        self.shards, self.replicas = shards, replicas
        self.chunk_size, self.max_chunk_bytes = chunk_size, max_chunk_bytes
        self.max_retries, self.initial_backoff, self.max_backoff = max_retries, initial_backoff, max_backoff
        self.display_url, self.secrets = display_url, list(secrets)
        self._config: FingerprintConfig | None = None
        #: Documents re-sent after a retryable rejection (429 or 5xx), for the ingest summary.
        self.retried = 0
        #: Other writers' documents become visible only after a refresh: writers settle labels afterwards.
        self.settles = True
        #: Documents go out as JSON: ingest's workers encode the ``dedup`` fields (`NewDoc.dedup_json`).
        self.takes_dedup_json = True
        #: The index's count of indexing operations when it was opened, and this store's own since.
        self._baseline: int | None = None
        self._own_writes = 0

    def _where(self, what: str) -> str:
        return f"{what} ({self.display_url}, index {self.name!r})"

    def _errors(self, what: str):
        return es_errors(self._where(what), self.secrets)

    # -- lifecycle -------------------------------------------------------------------------------
    def open(self, config: FingerprintConfig | None = None, *, create: bool = True) -> OpenResult:
        with self._errors("opening index"):
            versions.check_server(self.client, self._where("opening index"))
            mapping = self._get_mapping()
            if mapping is None:
                if config is None or not create:
                    raise IndexNotFound(f"index {self.name!r} does not exist at {self.display_url}", index=self.name)
                settings: dict[str, Any] = {"number_of_shards": self.shards}
                if self.replicas is not None:
                    settings["number_of_replicas"] = self.replicas
                import elasticsearch as es

                try:
                    self.client.indices.create(index=self.name, settings=settings, mappings=mapping_for(config))
                except es.BadRequestError as exc:
                    if exc.error != "resource_already_exists_exception":
                        raise
                    return self.open(config, create=False)  # lost a creation race: check it instead
                self._config = config
                self._baseline = 0  # every write to a new index after this one's is another writer's
                return OpenResult(config, True)
        mappings = next(iter(mapping.body.values()))["mappings"]
        stored = config_from_meta(mappings.get("_meta"))
        if stored is None:
            raise ConfigError(f"index {self.name!r} exists but was not created by esdedup (no _meta.esdedup); "
                              "choose another index name")
        if config is not None and not stored.compatible_with(config):
            raise mismatch_error(self.name, stored, config)
        self._add_missing_fields(mappings, stored)
        self._config = config if config is not None else stored
        self._baseline = self.indexed_total()
        return OpenResult(self._config, False)

    def _get_mapping(self) -> Any:
        """The index's mapping, None when it does not exist. A GET rather than a HEAD (indices.exists), so
        that an error answer carries its reason (a TLS proxy's "No required SSL certificate" page too)."""
        import elasticsearch as es

        try:
            return self.client.indices.get_mapping(index=self.name)
        except es.NotFoundError:
            return None

    def _add_missing_fields(self, mappings: Mapping[str, Any], config: FingerprintConfig) -> None:
        """Add ``dedup`` fields that newer esdedup versions write (an additive mapping update) to an index
        created before them, so its strict ``dedup`` object accepts them."""
        have = ((mappings.get("properties") or {}).get(DEDUP) or {}).get("properties") or {}
        want = mapping_for(config)["properties"][DEDUP]["properties"]
        missing = {k: v for k, v in want.items() if k not in have}
        if missing and have:
            with self._errors("updating the mapping"):
                self.client.indices.put_mapping(index=self.name, properties={DEDUP: {"properties": missing}})

    @property
    def config(self) -> FingerprintConfig:
        if self._config is None:
            raise StoreError("store is not open: call open() first")
        return self._config

    def close(self) -> None:
        """The client belongs to the caller; nothing to release here."""

    def drop(self) -> None:
        with self._errors("deleting index"):
            self.client.indices.delete(index=self.name, ignore_unavailable=True)

    def refresh(self) -> None:
        with self._errors("refreshing index"):
            self.client.indices.refresh(index=self.name)

    def count(self) -> int:
        with self._errors("counting documents"):
            return int(self.client.count(index=self.name)["count"])

    # -- writing ---------------------------------------------------------------------------------
    def _action(self, d: NewDoc) -> dict[str, Any]:
        if d.dedup_json is not None:
            return {"_op_type": "index", "_index": self.name, "_id": d.id, "_source": _spliced(d)}
        dedup = {**dedup_source(d.fingerprint, self.config, d.content_sha1), **_labels(d)}
        # The source goes to the bulk helper already encoded: JSON encoding (256 vector floats a document)
        # is the client's largest cost in a bulk load, and orjson does it several times faster.
        return {"_op_type": "index", "_index": self.name, "_id": d.id, "_source": json_bytes({**d.source, DEDUP: dedup})}

    def write(self, docs: Iterable[NewDoc]) -> Iterator[WriteResult]:
        """Index documents; yields one result per document (order within a chunk may differ on retry)."""
        from elasticsearch import helpers

        pending: dict[str, dict[str, Any]] = {}

        def actions(source: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
            for a in source:
                pending[a["_id"]] = a
                yield a

        import elasticsearch as es

        todo: Iterator[dict[str, Any]] = (self._action(d) for d in docs)
        for attempt in range(self.max_retries + 1):
            retry: list[dict[str, Any]] = []
            with self._errors("bulk indexing"):
                try:
                    # Retries are done here, not by the helper (max_retries=0), so that every re-sent
                    # document is counted in `retried`: items rejected with 429 (write queue full) or 5xx.
                    for ok, item in helpers.streaming_bulk(
                            self.client, actions(todo), chunk_size=self.chunk_size,
                            max_chunk_bytes=self.max_chunk_bytes, raise_on_error=False, raise_on_exception=True,
                            max_retries=0, yield_ok=True):
                        info = next(iter(item.values()))
                        doc_id = str(info.get("_id"))
                        status = int(info.get("status", 0) or 0)
                        action = pending.pop(doc_id, None)
                        if ok:
                            self._own_writes += 1
                            yield WriteResult(doc_id, True, created=info.get("result") == "created", status=status)
                        elif (status == 429 or status >= 500) and action is not None and attempt < self.max_retries:
                            retry.append(action)
                        else:
                            yield WriteResult(doc_id, False, error=_bulk_reason(info), status=status)
                except es.ApiError as exc:
                    if exc.meta.status != 429 or attempt >= self.max_retries:
                        raise
                    # The whole request was throttled: re-send what is unconfirmed, then the rest.
                    retry.extend(pending.values())
                    pending.clear()
                    self.retried += len(retry)
                    log.info("bulk request throttled (429); re-sending %d documents", len(retry))
                    time.sleep(min(self.max_backoff, self.initial_backoff * 2**attempt))
                    todo = itertools.chain(retry, todo)
                    continue
            if not retry:
                return
            self.retried += len(retry)
            log.info("%d documents rejected with 429/5xx; re-sending (attempt %d)", len(retry), attempt + 1)
            time.sleep(min(self.max_backoff, self.initial_backoff * 2**attempt))
            todo = iter(retry)

    def set_labels(self, labels: Mapping[str, tuple[str, str | None]]) -> int:
        from elasticsearch import helpers

        actions = ({"_op_type": "update", "_index": self.name, "_id": i,
                    "doc": {DEDUP: {"cluster_id": c, "duplicate_of": d}}} for i, (c, d) in labels.items())
        updated, errors = 0, []
        with self._errors("writing cluster labels"):
            for ok, item in helpers.streaming_bulk(self.client, actions, chunk_size=1000, raise_on_error=False,
                                                   max_retries=self.max_retries,
                                                   initial_backoff=self.initial_backoff):
                if ok:
                    updated += 1
                    self._own_writes += next(iter(item.values())).get("result") == "updated"
                else:
                    errors.append(item)
        if errors:
            raise BulkError(f"{len(errors)} cluster labels were rejected, first: "
                            f"{_bulk_reason(next(iter(errors[0].values())))}", errors)
        return updated

    def write_lock(self) -> contextlib.AbstractContextManager[bool]:
        """Nothing to lock: writers settle their labels after writing instead (``settles``)."""
        return contextlib.nullcontext(False)

    def alone(self) -> bool:
        """Whether every indexing operation on the index since `open` was this store's own: the index's
        ``indexing.index_total`` over its primaries (a counter of successful operations, updated as each one
        completes) grew by no more than this store's confirmed writes and updates. Unknown (the statistics
        cannot be read, for one) counts as not alone."""
        if self._baseline is None:
            return False
        total = self.indexed_total()
        return total is not None and total - self._baseline <= self._own_writes

    def indexed_total(self) -> int | None:
        """The index's count of indexing operations on its primaries (each write and partial update is one),
        None when the statistics cannot be read."""
        import elasticsearch as es

        try:
            stats = self.client.indices.stats(index=self.name, metric="indexing")
            return int(stats["_all"]["primaries"]["indexing"]["index_total"])
        except (es.ApiError, es.TransportError, KeyError, TypeError, ValueError):
            return None

    def merge_clusters(self, groups: Iterable[Collection[Root]]) -> int:
        """See `Store.merge_clusters`. Each round reads where every root of a group now points (a root
        merged by another writer carries its new root's labels), picks the earliest live root, and moves
        every document labelled with any other id of the group to it with conditional updates; a refused
        update (someone changed the document since it was read) is read again next round. The rounds end
        when no document is labelled with an id that is not its group's live root."""
        pending = union_groups(groups)
        relabelled = 0
        for _ in range(MERGE_ROUNDS):
            pending = self._with_live_roots(pending)
            moved, seen = self._relabel({doc_id: min(g) for g in pending for _, doc_id in g if doc_id != min(g)[1]})
            relabelled += moved
            if not seen:
                return relabelled
        raise StoreError(f"cluster labels on {self.name!r} did not settle after {MERGE_ROUNDS} rounds; "
                         "run the ingest again")

    def _with_live_roots(self, groups: list[set[Root]]) -> list[set[Root]]:
        """The groups with the live root every id of them leads to, joined again where they now meet."""
        live = self._live_roots({r[1]: r for g in groups for r in g})
        # Live roots first: a document's own seq wins over a stale copy of it carried by a label.
        return union_groups([[live[r[1]] for r in g if r[1] in live] + list(g) for g in groups])

    def _live_roots(self, roots: Mapping[str, Root]) -> dict[str, Root]:
        """Each root id -> the live root it leads to: a root document labelled with another cluster id
        (merged into it) points there, and so on. A missing root document stays as it was given."""
        out: dict[str, Root] = {}
        todo = dict(roots)
        for _ in range(64):
            if not todo:
                break
            with self._errors("reading cluster roots"):
                resp = self.client.mget(index=self.name, ids=sorted({r[1] for r in todo.values()}),
                                        source_includes=["dedup.cluster_id", "dedup.cluster_seq", "dedup.seq"])
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

    def _relabel(self, moves: Mapping[str, Root]) -> tuple[int, set[str]]:
        """Move every document labelled with a key of ``moves`` to its root, conditionally; returns how
        many were moved and the ids whose documents were seen still labelled so."""
        if not moves:
            return 0, set()
        from elasticsearch import helpers

        self.refresh()
        with self._errors("finding cluster members"):
            resp = self.client.search(index=self.name, size=PAGE, query={"terms": {"dedup.cluster_id": sorted(moves)}},
                                      docvalue_fields=["dedup.cluster_id"], _source=False, seq_no_primary_term=True,
                                      track_total_hits=False)
        self._complete(resp, "finding cluster members")
        hits = resp["hits"]["hits"]
        actions = []
        seen: set[str] = set()
        for h in hits:
            old = _first(h.get("fields", {}), "dedup.cluster_id")
            seen.add(old)
            seq, root = moves[old]
            actions.append({"_op_type": "update", "_index": self.name, "_id": h["_id"], "if_seq_no": h["_seq_no"],
                            "if_primary_term": h["_primary_term"], "doc": {DEDUP: {
                                "cluster_id": root, "cluster_seq": seq,
                                "duplicate_of": None if h["_id"] == root else root}}})
        moved = 0
        with self._errors("moving documents to their cluster's representative"):
            for ok, item in helpers.streaming_bulk(self.client, actions, chunk_size=1000, raise_on_error=False,
                                                   max_retries=self.max_retries,
                                                   initial_backoff=self.initial_backoff):
                if ok:  # a refused (409) update is read again next round
                    moved += 1
                    self._own_writes += next(iter(item.values())).get("result") == "updated"
        return moved, seen

    def members(self, cluster_ids: Sequence[str]) -> list[StoredDoc]:
        """See `Store.members` (at most `PAGE` documents)."""
        if not cluster_ids:
            return []
        with self._errors("fetching cluster members"):
            resp = self.client.search(index=self.name, size=PAGE, query={"terms": {"dedup.cluster_id": list(cluster_ids)}},
                                      _source=q.VECTOR_SOURCE, docvalue_fields=q.FINGERPRINT_FIELDS,
                                      seq_no_primary_term=True, track_total_hits=False)
        self._complete(resp, "fetching cluster members")
        return [hit_to_doc(h, self.config.dims) for h in resp["hits"]["hits"]]

    def relabel(self, labels: Mapping[str, Root]) -> int:
        """See `Store.relabel` (partial updates)."""
        from elasticsearch import helpers

        actions = ({"_op_type": "update", "_index": self.name, "_id": i, "doc": {DEDUP: {
            "cluster_id": root, "cluster_seq": seq, "duplicate_of": None if i == root else root}}}
            for i, (seq, root) in labels.items())
        updated = 0
        with self._errors("writing cluster labels"):
            for ok, item in helpers.streaming_bulk(self.client, actions, chunk_size=1000, raise_on_error=False,
                                                   max_retries=self.max_retries, initial_backoff=self.initial_backoff):
                if ok and next(iter(item.values())).get("result") == "updated":
                    updated += 1
                    self._own_writes += 1
        return updated

    def delete_if_unchanged(self, docs: Sequence[StoredDoc]) -> list[str]:
        """See `Store.delete_if_unchanged`: bulk deletes conditional on each document's version as read."""
        from elasticsearch import helpers

        actions = [{"_op_type": "delete", "_index": self.name, "_id": d.id,
                    **({"if_seq_no": d.version[0], "if_primary_term": d.version[1]} if d.version else {})}
                   for d in docs]
        deleted: list[str] = []
        with self._errors("deleting documents"):
            for ok, item in helpers.streaming_bulk(self.client, actions, chunk_size=1000, raise_on_error=False,
                                                   max_retries=self.max_retries, initial_backoff=self.initial_backoff):
                info = next(iter(item.values()))
                if ok and info.get("result") == "deleted":
                    deleted.append(str(info.get("_id")))
        return deleted

    def update_dedup_if_unchanged(self, changes: Mapping[str, tuple[StoredDoc, dict[str, Any]]]) -> dict[str, StoredDoc]:
        """Partial updates of ``dedup`` fields (id -> (the document as read, its new fields)), each conditional
        on the version read. Returns the documents updated, with their new version and write order; a document
        changed or deleted since it was read (409, 404) is left out. Raises BulkError for any other refusal."""
        from elasticsearch import helpers

        actions = [{"_op_type": "update", "_index": self.name, "_id": doc_id, "doc": {DEDUP: fields},
                    **({"if_seq_no": doc.version[0], "if_primary_term": doc.version[1]} if doc.version else {})}
                   for doc_id, (doc, fields) in changes.items()]
        done: dict[str, StoredDoc] = {}
        refused: list[dict[str, Any]] = []
        with self._errors("writing labels"):
            for ok, item in helpers.streaming_bulk(self.client, actions, chunk_size=1000, raise_on_error=False,
                                                   max_retries=self.max_retries, initial_backoff=self.initial_backoff):
                info = next(iter(item.values()))
                doc_id = str(info.get("_id"))
                if ok:
                    doc, fields = changes[doc_id]
                    version = (int(info["_seq_no"]), int(info["_primary_term"])) if "_seq_no" in info else None
                    done[doc_id] = dataclasses.replace(doc, version=version, seq=int(fields.get("seq", doc.seq)))
                elif info.get("status") not in (404, 409):
                    refused.append(item)
        if refused:
            first = next(iter(refused[0].values()))
            raise BulkError(f"{len(refused)} label updates were refused, first: {first.get('error')}", refused)
        return done

    # -- reading ---------------------------------------------------------------------------------
    #: Documents one batched lookup search may return: a batch of probes whose keys match more is split, down
    #: to single probes, which the node then ranks one by one (`_lookup_each`).
    lookup_page = PAGE

    def lookup(self, probes: Sequence[Probe], *, limit: int = 1000) -> list[list[StoredDoc]]:
        """See `Store.lookup`. Up to `LOOKUP_PROBES` probes share one search, which returns every document
        holding any of their keys with its key values; each probe then takes the hits sharing its keys, the
        ``limit`` sharing the most bands when more do (ties by id). A probe holding a crowded key (one held by
        more than ``limit`` documents), or matching more than `lookup_page` documents alone, is looked up by
        itself and ranked by the node (ties in index order). Either way a probe's answer does not depend on the
        other probes of the call."""
        out: list[list[StoredDoc]] = [[] for _ in probes]
        alone: list[int] = []
        for chunk in _lookup_chunks(probes):
            alone += self._lookup_together(probes, chunk, limit, out, crowds_known=False)
        self._lookup_each(probes, sorted(alone), limit, out)
        return out

    def _lookup_together(self, probes: Sequence[Probe], idx: list[int], limit: int, out: list[list[StoredDoc]],
                         *, crowds_known: bool) -> list[int]:
        """Fill ``out`` for the probes ``idx`` from one search, split in halves while it would return more than
        `lookup_page` documents; returns the probes to look up one by one."""
        keys = q.keys_by_field([probes[i] for i in idx])
        with self._errors("band lookup"):
            resp = self.client.search(index=self.name, **q.batch_lookup_body(keys, size=self.lookup_page + 1))
        self._complete(resp, "band lookup")
        hits = resp["hits"]["hits"]
        if len(hits) <= self.lookup_page:  # every holder of every key: the counts of holders are exact
            return self._assign(probes, idx, hits, _holders(hits, keys), limit, out)
        if len(idx) == 1:
            return idx
        # Keys held by thousands of documents fill the page: their probes go alone, the rest together again.
        alone = [] if crowds_known else self._crowded_holders(probes, idx, keys, limit)
        gone = set(alone)
        rest = [i for i in idx if i not in gone]
        halves = [rest] if alone else [rest[: len(rest) // 2], rest[len(rest) // 2 :]]
        for part in halves:
            if part:
                alone += self._lookup_together(probes, part, limit, out, crowds_known=True)
        return alone

    def _assign(self, probes: Sequence[Probe], idx: list[int], hits: list[dict[str, Any]],
                holders: Mapping[tuple[str, str], Sequence[int]], limit: int, out: list[list[StoredDoc]]) -> list[int]:
        """Give each probe of ``idx`` the hits sharing its keys (`_shared_hits`); returns the probes holding a
        crowded key."""
        docs: dict[int, StoredDoc] = {}
        alone = []
        for i in idx:
            chosen = _shared_hits(probes[i], holders, hits, limit)
            if chosen is None:
                alone.append(i)
                continue
            for pos in chosen:
                if pos not in docs:
                    docs[pos] = hit_to_doc(hits[pos], self.config.dims)
            out[i] = [docs[pos] for pos in chosen]
        return alone

    def _crowded_holders(self, probes: Sequence[Probe], idx: list[int], keys: Mapping[str, Sequence[str]],
                         limit: int) -> list[int]:
        """The probes of ``idx`` holding a key that more than ``limit`` documents hold (a count per key)."""
        counts = self._key_counts(keys, "band lookup", min_count=limit + 1, size=1000)
        crowded = {(field, k) for field, (found, _) in counts.items() for k, _ in found}
        return [i for i in idx if any((f"{DEDUP}.{key_field(name)}", k) in crowded
                                      for name, band_keys in probes[i].items() for k in band_keys)]

    def _lookup_each(self, probes: Sequence[Probe], idx: list[int], limit: int, out: list[list[StoredDoc]]) -> None:
        """One ranked search per probe (`_msearch`): the node keeps the ``limit`` documents sharing the most bands."""
        dims = self.config.dims
        for start in range(0, len(idx), MSEARCH_BATCH):
            batch = idx[start : start + MSEARCH_BATCH]
            with self._errors("band lookup"):
                resp = self.client.msearch(searches=q.msearch_body(self.name, [probes[i] for i in batch],
                                                                  size=limit))
            for i, r in zip(batch, resp["responses"], strict=False):
                if "error" in r:
                    err = r["error"]
                    reason = err.get("reason", err) if isinstance(err, dict) else err
                    raise StoreError(f"band lookup on {self.name!r} failed: {redact(str(reason), self.secrets)}")
                self._complete(r, "band lookup")
                out[i] = sorted((hit_to_doc(h, dims) for h in r["hits"]["hits"]), key=lambda d: d.id)

    def verified_on_node(self, probe: Probe, params: Mapping[str, Any], *, size: int) -> list[dict[str, Any]]:
        """The hits the node itself verifies as near-duplicates of one probe (`query.node_verified_body`;
        needs the esdedup plugin), nearest first, each with its measures in ``fields``."""
        if not any(probe.values()):
            return []
        try:
            with self._errors("node-side lookup"):
                resp = self.client.search(index=self.name, **q.node_verified_body(probe, params, size=size))
        except StoreError as exc:
            if "esdedup" in str(exc) and "not supported" in str(exc):
                raise StoreError(f"the node has no 'esdedup' script language: install the esdedup plugin on every "
                                 f"node (plugin/README.md) ({exc})") from None
            raise
        self._complete(resp, "node-side lookup")
        return list(resp["hits"]["hits"])

    def knn(self, vector: np.ndarray, k: int = 10) -> list[StoredDoc]:
        self.config.require_vector(self.name)
        with self._errors("kNN search"):
            resp = self.client.search(index=self.name, **q.knn_body(vector, k=k))
        self._complete(resp, "kNN search")
        return [hit_to_doc(h, self.config.dims) for h in resp["hits"]["hits"]]

    def get(self, ids: Sequence[str]) -> dict[str, StoredDoc]:
        out: dict[str, StoredDoc] = {}
        ids = list(dict.fromkeys(ids))
        for start in range(0, len(ids), PAGE):
            with self._errors("fetching fingerprints"):
                resp = self.client.search(index=self.name, **q.ids_body(ids[start : start + PAGE]))
            self._complete(resp, "fetching fingerprints")
            out.update((h["_id"], hit_to_doc(h, self.config.dims)) for h in resp["hits"]["hits"])
        return out

    def get_source(self, doc_id: str) -> dict[str, Any] | None:
        import elasticsearch as es

        try:
            with self._errors("fetching document"):
                resp = self.client.get(index=self.name, id=doc_id, source_excludes=["dedup.vector"])
        except IndexNotFound:
            return None
        except es.NotFoundError:  # pragma: no cover - mapped above
            return None
        return resp.get("_source")

    def scan(self, *, batch: int = 5000) -> Iterator[list[StoredDoc]]:
        """Every document, through a point in time sorted by ``_shard_doc`` (search_after paging)."""
        for hits in self.hit_pages("scanning documents", batch=batch):
            yield [hit_to_doc(h, self.config.dims) for h in hits]

    def hit_pages(self, what: str, *, query: Mapping[str, Any] | None = None, batch: int = 5000,
                  docvalue_fields: Sequence[str] = q.FINGERPRINT_FIELDS, versions: bool = False,
                  keep_alive: str = "2m") -> Iterator[list[dict[str, Any]]]:
        """The raw hits of ``query`` (default: every document) as the index held them when the call started (a
        point in time, sorted by ``_shard_doc``, search_after paging), with the fingerprint's doc values and
        the signature/vector `_source`; ``versions`` adds each hit's ``_seq_no``/``_primary_term``."""
        batch = min(batch, PAGE)
        with self._errors("opening a point in time"):
            pit = self.client.open_point_in_time(index=self.name, keep_alive=keep_alive)["id"]
        try:
            after = None
            while True:
                body: dict[str, Any] = {"size": batch, "pit": {"id": pit, "keep_alive": keep_alive},
                                        "sort": [{"_shard_doc": "asc"}], "_source": q.VECTOR_SOURCE,
                                        "docvalue_fields": list(docvalue_fields), "track_total_hits": False}
                if query is not None:
                    body["query"] = query
                if versions:
                    body["seq_no_primary_term"] = True
                if after is not None:
                    body["search_after"] = after
                with self._errors(what):
                    resp = self.client.search(**body)
                self._complete(resp, what)
                hits = resp["hits"]["hits"]
                if not hits:
                    return
                pit = resp.get("pit_id", pit)
                after = hits[-1]["sort"]
                yield hits
        finally:
            with contextlib.suppress(Exception):  # the point in time expires by itself
                self.client.close_point_in_time(id=pit)

    def _complete(self, resp: Mapping[str, Any], what: str) -> None:
        """Refuse partial results: a search that some shards could not answer (a node down, a shard not
        allocated) would silently miss candidates, and a missed candidate is a missed duplicate."""
        shards = resp.get("_shards") or {}
        failed = int(shards.get("failed", 0) or 0)
        if failed:
            reasons = {str((f.get("reason") or {}).get("type") or f.get("reason"))
                       for f in shards.get("failures", []) if isinstance(f, Mapping)}
            raise StoreError(f"{what} on {self.name!r}: {failed} of {shards.get('total', '?')} shards failed "
                             f"({redact(', '.join(sorted(reasons)) or 'no reason given', self.secrets)}); the "
                             "results would be incomplete")

    def _fields(self, *, lsh: bool = True) -> list[str]:
        return [f"{DEDUP}.{n}" for n in key_fields(self.config, lsh=lsh)]

    def _key_stats(self, field: str) -> tuple[int, int]:
        """Distinct values of a key field (HyperLogLog: exact up to 40,000, within a few percent above) and
        values in all."""
        aggs = {"distinct": {"cardinality": {"field": field, "precision_threshold": 40_000}},
                "values": {"value_count": {"field": field}}}
        with self._errors("band aggregation"):
            resp = self.client.search(index=self.name, size=0, aggs=aggs)
        self._complete(resp, "band aggregation")
        return int(resp["aggregations"]["distinct"]["value"]), int(resp["aggregations"]["values"]["value"])

    def _key_counts(self, keys: Sequence[str] | Mapping[str, Sequence[str]], what: str, *, min_count: int,
                    size: int, shard_size: int | None = None,
                    partition: tuple[int, int] = (0, 1)) -> dict[str, tuple[list[tuple[str, int]], bool]]:
        """For each key field of ``keys``, its values held by ``min_count`` or more documents with their counts
        (`query.key_counts_body`; values as strings: the LSH keys field is numeric), and whether that answer
        is whole: False when it filled its size or a shard had more values than it could send (then some may
        be missing)."""
        body = q.key_counts_body(keys, min_count=min_count, size=size, shard_size=shard_size, partition=partition)
        with self._errors(what):
            resp = self.client.search(index=self.name, **body)
        self._complete(resp, what)
        out = {}
        for field in keys:
            agg = resp["aggregations"][field]
            found = [(str(b["key"]), int(b["doc_count"])) for b in agg["buckets"]]
            whole = len(found) < body["aggs"][field]["terms"]["size"] and not agg.get("doc_count_error_upper_bound")
            out[field] = (found, whole)
        return out

    def _shared_values(self, field: str, min_count: int) -> Iterator[list[tuple[str, int]]]:
        """Every value of a key field held by ``min_count`` or more documents, with its count, one partition
        of the field's values at a time: the node reads the field once a partition and sends only those
        values, not the singletons. The partitions are as many as make each answer about
        `PARTITION_BUCKETS` values (the field's value count less its distinct values bounds the values
        held twice or more); a partition whose answer may be cut is asked again as two (values fall in
        partition ``hash % n``, so partition p of n is partitions p and p + n of 2n)."""
        distinct, values = self._key_stats(field)
        parts = max(1, math.ceil(min(distinct, values - distinct) / PARTITION_BUCKETS))
        log.debug("%s: %d distinct values, %d in all: %d partitions", field, distinct, values, parts)
        size = 2 * PARTITION_BUCKETS
        # With several shards each must send all of its values in the partition for the counts to add up.
        shard_size = max(size, math.ceil(1.5 * distinct / parts))
        todo = [(p, parts) for p in reversed(range(parts))]
        while todo:
            part = todo.pop()
            found, whole = self._key_counts([field], "band aggregation", min_count=min_count, size=size,
                                            shard_size=shard_size, partition=part)[field]
            if whole:
                yield found
            elif part[1] >= MAX_PARTITIONS:
                raise StoreError(f"band aggregation on {self.name!r}: {field} does not fit {MAX_PARTITIONS} "
                                 "partitions")
            else:
                log.debug("partition %d of %d of %s may hold more than %d shared values: split", *part, field, size)
                todo += [(part[0] + part[1], 2 * part[1]), (part[0], 2 * part[1])]

    def _crowded_set(self, fields: Sequence[str], max_bucket: int) -> frozenset[str]:
        """The values of ``fields`` held by more than ``max_bucket`` documents (few: one request a field,
        unless there are more than a page of them or several shards leave the answer uncertain)."""
        out: set[str] = set()
        for field in fields:
            # One field a request: a page of values from each of many fields could pass the node's
            # search.max_buckets (65,536 by default).
            found, whole = self._key_counts([field], "band aggregation", min_count=max_bucket + 1, size=PAGE,
                                            shard_size=PAGE)[field]
            if not whole:
                found = [v for part in self._shared_values(field, max_bucket + 1) for v in part]
            out.update(v for v, _ in found)
        return frozenset(out)

    def key_batches(self, *, max_bucket: int = 1000, lsh: bool = True) -> Iterator[KeyBatch]:
        """Shared keys field by field, partition by partition (`_shared_values`); their members fetched
        for a page of members at a time, with every member's keys (doc values). The next batch is fetched
        while the caller works on this one (`ahead`): the node's aggregations and searches overlap the
        caller's pair work instead of taking turns with it."""
        return ahead(self._key_batches(max_bucket, lsh))

    def _key_batches(self, max_bucket: int, lsh: bool) -> Iterator[KeyBatch]:
        fields = self._fields(lsh=lsh)
        crowded = self._crowded_set(fields, max_bucket)
        for field in fields:
            for found in self._shared_values(field, 2):
                batch: list[tuple[str, int]] = []
                total = 0
                for value, n in found:
                    if batch and total + min(n, max_bucket) > PAGE:
                        yield self._members(field, batch, fields, crowded, max_bucket)
                        batch, total = [], 0
                    batch.append((value, n))
                    total += min(n, max_bucket)
                if batch:
                    yield self._members(field, batch, fields, crowded, max_bucket)

    def _members(self, field: str, values: list[tuple[str, int]], fields: Sequence[str], crowded: frozenset[str],
                 max_bucket: int) -> KeyBatch:
        """The `KeyBatch` of some values of ``field``: one search for the values held by at most
        ``max_bucket`` documents, one a crowded value (its first ``max_bucket`` documents)."""
        groups: dict[str, list[str]] = {v: [] for v, _ in values}
        keys: dict[str, frozenset[str]] = {}
        normal = [(v, n) for v, n in values if n <= max_bucket]
        searches = [([v], max_bucket) for v, n in values if n > max_bucket]
        if normal:
            searches.append(([v for v, _ in normal], sum(n for _, n in normal)))
        for vals, size in searches:
            with self._errors("fetching band members"):
                resp = self.client.search(index=self.name, size=size, query={"terms": {field: vals}},
                                          docvalue_fields=list(fields), _source=False, track_total_hits=False,
                                          sort=["_doc"], filter_path=["_shards", "hits.hits._id", "hits.hits.fields"])
            self._complete(resp, "fetching band members")
            asked = set(vals)  # a hit of one search may hold values of another: counted there
            # Every member brings all its keys (16 or more): turned into strings once, in C (map, set
            # operations), the join's largest client cost after reading the responses. The values of
            # ``field`` are found among them all, since no two key fields share a value (band keys are
            # "<table>:<hex>", LSH keys decimal integers).
            for h in (resp.get("hits") or {}).get("hits", []):
                doc_id, got = h["_id"], h.get("fields", {})
                held = frozenset(map(str, itertools.chain.from_iterable(got.get(f, ()) for f in fields)))
                for v in asked & held:
                    if len(groups[v]) < max_bucket:
                        groups[v].append(doc_id)
                if doc_id not in keys:
                    keys[doc_id] = held - crowded if crowded else held
        return KeyBatch([(v, n, sorted(groups[v])) for v, n in values if len(groups[v]) > 1], keys)

    def crowded_keys(self, *, min_count: int, limit: int = 20, lsh: bool = True) -> list[tuple[str, int]]:
        found = [kn for field in self._fields(lsh=lsh)  # one field a request, as `_crowded_set`
                 for kn in self._key_counts([field], "crowded band values", min_count=min_count, size=limit)[field][0]]
        return sorted(found, key=lambda x: (-x[1], x[0]))[:limit]


def _lookup_chunks(probes: Sequence[Probe]) -> Iterator[list[int]]:
    """The probes with keys, in groups of at most `LOOKUP_PROBES` and `LOOKUP_TERMS` keys a field."""
    chunk: list[int] = []
    terms: Counter[str] = Counter()
    for i, probe in enumerate(probes):
        need: Counter[str] = Counter()
        for name, keys in probe.items():
            need[key_field(name)] += len(keys)
        if not need.total():
            continue
        if chunk and (len(chunk) >= LOOKUP_PROBES or any(terms[f] + n > LOOKUP_TERMS for f, n in need.items())):
            yield chunk
            chunk, terms = [], Counter()
        chunk.append(i)
        terms.update(need)
    if chunk:
        yield chunk


def _holders(hits: Sequence[Mapping[str, Any]], fields: Iterable[str]) -> dict[tuple[str, str], list[int]]:
    """(key field, key) -> positions of the hits holding it, from the hits' doc values of ``fields`` (numbers
    for the LSH keys field: read as strings, as probes hold them)."""
    holders: dict[tuple[str, str], list[int]] = {}
    fields = list(fields)
    for pos, hit in enumerate(hits):
        values_of = hit.get("fields", {})
        for field in fields:
            for v in {str(x) for x in values_of.get(field, ())}:  # a document may hold one LSH key in two bands
                holders.setdefault((field, v), []).append(pos)
    return holders


def _shared_hits(probe: Probe, holders: Mapping[tuple[str, str], Sequence[int]], hits: Sequence[Mapping[str, Any]],
                 limit: int) -> list[int] | None:
    """The positions of the hits sharing a key with ``probe``, in id order: the ``limit`` sharing the most
    bands (ties by id) when more do, as a band lookup scores them (a band counts once, however many of its
    keys match). None when one of its keys is held by more than ``limit`` documents (the node ranks those)."""
    shared: Counter[int] = Counter()
    for name, keys in probe.items():
        field = f"{DEDUP}.{key_field(name)}"
        band: set[int] = set()
        for k in keys:
            held = holders.get((field, k), ())
            if len(held) > limit:
                return None
            band.update(held)
        shared.update(band)
    chosen = sorted(shared, key=lambda pos: (-shared[pos], hits[pos]["_id"]))[:limit]
    return sorted(chosen, key=lambda pos: hits[pos]["_id"])


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


def _bulk_reason(info: Mapping[str, Any]) -> str:
    err = info.get("error")
    if isinstance(err, dict):
        reason = f"{err.get('type', 'error')}: {err.get('reason', '')}"
        cause = err.get("caused_by")
        if isinstance(cause, dict) and cause.get("reason"):
            reason += f" ({cause.get('reason')})"
        return reason
    if err:
        return str(err)
    return f"status {info.get('status')}"
