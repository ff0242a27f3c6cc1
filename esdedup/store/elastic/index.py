"""One Elasticsearch index as the parts of the store use it (`ElasticIndex`): its client and name, errors
named after it, searches refused when partial, its lifecycle (create or check, drop, refresh, count), its
``dedup`` fields, and the reading of its hits as `StoredDoc`.
"""
from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

from esdedup.errors import ConfigError, IndexNotFound, StoreError
from esdedup.es import versions
from esdedup.es.answers import with_memory_hint
from esdedup.es.connect import aggregation_timeout
from esdedup.es.errors import es_errors
from esdedup.es.hits import STORED_PARTS, hit_parts, hit_version, parse_minhash, parse_simhash, parse_vector
from esdedup.es.query import ids_body
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.schema import DEDUP, LSH_KEYS, config_from_meta, index_settings, key_fields, mapping_for
from esdedup.store.base import OpenResult, StoredDoc
from esdedup.store.names import mismatch_error, validate_name
from esdedup.util.redact import redact

#: Largest page of ids/values per request (below Elasticsearch's default max_result_window of 10,000).
PAGE = 5000


class ElasticIndex:
    """An index and the client that reaches it (the caller owns the client).

    Args:
        client: an ``elasticsearch.Elasticsearch`` client.
        name: the index name.
        shards / replicas / text_analyzer: used when the index is created.
        display_url: the server as error messages name it (no credentials).
        secrets: strings to keep out of error messages (API key, password).
        request_timeout: the client's request timeout in seconds (None: not known), which `aggregate` lengthens.
    """

    def __init__(self, client: Any, name: str, *, shards: int = 1, replicas: int | None = None,
                 text_analyzer: str | None = None, display_url: str = "Elasticsearch",
                 secrets: Sequence[str | None] = (), request_timeout: float | None = None) -> None:
        self.client = client
        self.request_timeout = request_timeout
        self.name = validate_name(name)
        self.shards, self.replicas, self.text_analyzer = shards, replicas, text_analyzer
        self.display_url, self.secrets = display_url, list(secrets)
        self.opened: FingerprintConfig | None = None
        #: The index's count of indexing operations when it was opened (None before), and the writes and
        #: updates of this store confirmed since: more operations than these were another writer's.
        self.baseline: int | None = None
        self.own_writes = 0

    # -- requests --------------------------------------------------------------------------------
    def where(self, what: str) -> str:
        return f"{what} ({self.display_url}, index {self.name!r})"

    def errors(self, what: str) -> contextlib.AbstractContextManager[None]:
        """`es_errors` for a request on this index."""
        return es_errors(self.where(what), self.secrets)

    def search(self, what: str, **body: Any) -> Any:
        """One search of this index, refused when partial (`complete`)."""
        return self._search(self.client, what, body)

    def aggregate(self, what: str, **body: Any) -> Any:
        """`search` for an aggregation that reads a whole field of the index: with `aggregation_timeout`, and not
        tried again after a timeout (an attempt that ran that long would run as long again)."""
        client = self.client.options(request_timeout=aggregation_timeout(self.request_timeout),
                                     retry_on_timeout=False)
        return self._search(client, what, body)

    def _search(self, client: Any, what: str, body: dict[str, Any]) -> Any:
        with self.errors(what):
            resp = client.search(index=self.name, **body)
        self.complete(resp, what)
        return resp

    def complete(self, resp: Mapping[str, Any], what: str) -> None:
        """Refuse partial results: a search that some shards could not answer (a node down, a shard not
        allocated) would silently miss candidates, and a missed candidate is a missed duplicate."""
        shards = resp.get("_shards") or {}
        failed = int(shards.get("failed", 0) or 0)
        if failed:
            reasons = {str((f.get("reason") or {}).get("type") or f.get("reason"))
                       for f in shards.get("failures", []) if isinstance(f, Mapping)}
            reason = redact(', '.join(sorted(reasons)) or 'no reason given', self.secrets)
            raise StoreError(f"{what} on {self.name!r}: {failed} of {shards.get('total', '?')} shards failed "
                             f"({with_memory_hint(reason)}); the results would be incomplete")

    # -- lifecycle -------------------------------------------------------------------------------
    def open(self, config: FingerprintConfig | None = None, *, create: bool = True) -> OpenResult:
        """See `Store.open`."""
        with self.errors("opening index"):
            versions.check_server(self.client, self.where("opening index"))
            mapping = self._get_mapping()
            if mapping is None:
                if config is None or not create:
                    raise IndexNotFound(f"index {self.name!r} does not exist at {self.display_url}", index=self.name)
                if not self._create(config):
                    return self.open(config, create=False)  # lost a creation race: check it instead
                self.opened = config
                self.baseline = 0  # every write to a new index after this one's is another writer's
                return OpenResult(config, True)
        mappings = self._one_mapping(mapping.body)
        stored = config_from_meta(mappings.get("_meta"), f"index {self.name!r}")
        if stored is None:
            raise ConfigError(f"index {self.name!r} exists but was not created by esdedup (no _meta.esdedup); "
                              "choose another index name")
        if config is not None and not stored.compatible_with(config):
            raise mismatch_error(self.name, stored, config)
        self._add_missing_fields(mappings, stored)
        self.opened = config if config is not None else stored
        self.baseline = self.indexed_total()
        return OpenResult(self.opened, False)

    def _create(self, config: FingerprintConfig) -> bool:
        """Create the index with the config's mapping; False when another writer created it first."""
        import elasticsearch as es

        try:
            self.client.indices.create(index=self.name, settings=index_settings(self.shards, self.replicas),
                                       mappings=mapping_for(config, text_analyzer=self.text_analyzer))
        except es.BadRequestError as exc:
            if exc.error != "resource_already_exists_exception":
                raise
            return False
        return True

    def _get_mapping(self) -> Any:
        """The index's mapping, None when it does not exist. A GET rather than a HEAD (indices.exists), so
        that an error answer carries its reason (a TLS proxy's "No required SSL certificate" page too)."""
        import elasticsearch as es

        try:
            return self.client.indices.get_mapping(index=self.name)
        except es.NotFoundError:
            return None

    def _one_mapping(self, body: Any) -> Mapping[str, Any]:
        """The mappings of the one index the name names. A name behind which stand several indices (an alias,
        a pattern) is refused: the store's ids, counts and clusters are those of one index (every document
        would be found again in the other, and their configs may differ)."""
        if not isinstance(body, Mapping) or not body:
            raise StoreError(f"{self.where('opening index')}: the server answered the mapping request without "
                             "an index")
        if len(body) > 1:
            names = ", ".join(sorted(map(str, body))[:5]) + (", ..." if len(body) > 5 else "")
            raise ConfigError(f"{self.name!r} names {len(body)} indices ({names}), not one: a store is one index; "
                              "give the name of one of them (an alias must point at a single index)")
        mappings = next(iter(body.values()))
        return (mappings.get("mappings") if isinstance(mappings, Mapping) else None) or {}

    def _add_missing_fields(self, mappings: Mapping[str, Any], config: FingerprintConfig) -> None:
        """Add ``dedup`` fields that newer esdedup versions write (an additive mapping update) to an index
        created before them, so its strict ``dedup`` object accepts them."""
        have = ((mappings.get("properties") or {}).get(DEDUP) or {}).get("properties") or {}
        want = mapping_for(config)["properties"][DEDUP]["properties"]
        missing = {k: v for k, v in want.items() if k not in have}
        if missing and have:
            with self.errors("updating the mapping"):
                self.client.indices.put_mapping(index=self.name, properties={DEDUP: {"properties": missing}})

    @property
    def config(self) -> FingerprintConfig:
        if self.opened is None:
            raise StoreError("store is not open: call open() first")
        return self.opened

    def drop(self) -> None:
        with self.errors("deleting index"):
            self.client.indices.delete(index=self.name, ignore_unavailable=True)

    def refresh(self) -> None:
        with self.errors("refreshing index"):
            self.client.indices.refresh(index=self.name)

    def count(self) -> int:
        with self.errors("counting documents"):
            return int(self.client.count(index=self.name)["count"])

    def indexed_total(self) -> int | None:
        """The index's count of indexing operations on its primaries (each write and partial update is one),
        None when the statistics cannot be read."""
        import elasticsearch as es

        try:
            stats = self.client.indices.stats(index=self.name, metric="indexing")
            return int(stats["_all"]["primaries"]["indexing"]["index_total"])
        except (es.ApiError, es.TransportError, KeyError, TypeError, ValueError):
            return None

    def alone(self) -> bool:
        """See `ElasticStore.alone`."""
        if self.baseline is None:
            return False
        total = self.indexed_total()
        return total is not None and total - self.baseline <= self.own_writes

    # -- fields ----------------------------------------------------------------------------------
    def key_fields(self, *, lsh: bool = True) -> list[str]:
        """The stored fields holding band keys, by their full names (``dedup.<field>``)."""
        return [f"{DEDUP}.{n}" for n in key_fields(self.config, lsh=lsh)]

    def single_valued_fields(self) -> list[str]:
        """The ``dedup`` fields (short names) that hold one value a document, and have doc values to count:
        every field the config's mapping has but the LSH keys (many a document), the signature (binary)
        and the vector."""
        props = mapping_for(self.config)["properties"][DEDUP]["properties"]
        return [name for name, spec in props.items()
                if name != LSH_KEYS and spec.get("type") not in ("binary", "dense_vector")]

    def docs(self, ids: Sequence[str], what: str = "fetching fingerprints") -> dict[str, StoredDoc]:
        """See `Store.get`: the documents of ``ids`` still in the index (`doc`), a page of ids a search."""
        out: dict[str, StoredDoc] = {}
        ids = list(dict.fromkeys(ids))
        for start in range(0, len(ids), PAGE):
            resp = self.search(what, **ids_body(ids[start:start + PAGE]))
            out.update((h["_id"], self.doc(h)) for h in resp["hits"]["hits"])
        return out

    def doc(self, hit: Mapping[str, Any]) -> StoredDoc:
        """A hit of this index (doc values of `esdedup.es.hits.FINGERPRINT_FIELDS`, the vector and the
        signature in ``_source``) as a `StoredDoc`."""
        config = self.config
        p = hit_parts(hit, STORED_PARTS)
        return StoredDoc(hit["_id"], parse_simhash(p["simhash"] or "0", config.bits, hit),
                         parse_vector(p["vector"], config.dims), bool(p["empty"] or False), int(p["tokens"] or 0),
                         int(p["chars"] or 0), p["cluster_id"], p["duplicate_of"],
                         minhash=parse_minhash(p["minhash"] or None, hit),
                         shingles=int(p["shingles"] or 0), seq=int(p["seq"] or 0),
                         cluster_seq=int(p["cluster_seq"] or 0), version=hit_version(hit),
                         content_sha1=p["content_sha1"])
