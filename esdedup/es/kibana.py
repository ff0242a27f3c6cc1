"""Kibana saved objects for an esdedup index: a data view that explains the ``dedup.*`` fields, a saved
search of the near-duplicate clusters and visualisations of cluster sizes and of the crowded band and MinHash
LSH key values (what the review page's overview charts of an index's keys).

Pure: `saved_objects` takes an index name and the index's `FingerprintConfig` and returns the objects as
dicts; it talks to no server. `to_ndjson` writes them in the format of Kibana's saved-objects export, which
Stack Management > Saved objects > Import (or ``POST /api/saved_objects/_import``) reads.

The objects are written in their Kibana 8.0.0 shape (``coreMigrationVersion`` / ``typeMigrationVersion``
8.0.0), so any later 8.x Kibana migrates them forward on import; ``typeMigrationVersion`` is read by
Kibana 8.8 and later. Ids are uuid5 of the index name and the object's kind, so exporting the same index
again and re-importing with "overwrite" replaces the objects instead of duplicating them.

Example:
    >>> from esdedup import FingerprintConfig
    >>> objs = saved_objects("news", FingerprintConfig())
    >>> [o["type"] for o in objs][:3]
    ['index-pattern', 'search', 'visualization']
"""
from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from typing import Any

from esdedup.errors import ConfigError
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.minhash import LSH_KEY_BITS, SIGNATURE_BITS
from esdedup.schema import (
    CHARS,
    CLUSTER_ID,
    CLUSTER_SEQ,
    CONTENT_SHA1,
    DEDUP,
    DUPLICATE_OF,
    EMPTY,
    LSH_KEYS,
    MINHASH,
    SEQ,
    SHINGLES,
    SIMHASH,
    TOKENS,
    VECTOR,
    band_fields,
    mapping_for,
)
from esdedup.util.fieldtypes import checked_args

__all__ = ["KIBANA_VERSION", "field_descriptions", "object_id", "saved_objects", "to_ndjson"]

#: The Kibana version whose saved-object shape these objects have (Kibana migrates them forward).
KIBANA_VERSION = "8.0.0"
#: Namespace of the object ids (uuid5): fixed, so the ids of an index never change.
_ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "esdedup:kibana")
#: The reference name Kibana uses for the data view of a search or visualisation.
INDEX_REF = "kibanaSavedObjectMeta.searchSourceJSON.index"
#: Rows shown by the tables.
CLUSTER_ROWS = 50
BAND_ROWS = 20
#: Start of the description of a dedup field this module has no text for.
UNDESCRIBED = "esdedup field"
#: Fields kept out of Discover's rows: long machine data.
HIDDEN_FIELDS = (VECTOR, f"{DEDUP}.minhash")


def object_id(index: str, kind: str) -> str:
    """The deterministic id of one saved object: uuid5 of the index name and the object's kind."""
    return str(uuid.uuid5(_ID_NAMESPACE, f"{index}\x00{kind}"))


def _bit_ranges(spans: Iterable[tuple[int, int]]) -> str:
    return ", ".join(f"{start}..{start + width - 1}" for start, width in spans)


def field_descriptions(config: FingerprintConfig) -> dict[str, tuple[str, str]]:
    """Dotted field name -> (custom label, description) for every field esdedup adds under ``dedup``."""
    bits = config.bits
    out: dict[str, tuple[str, str]] = {
        SIMHASH: ("SimHash", f"{bits}-bit SimHash of the normalised text as {bits // 4} lowercase hex digits; "
                             f"texts within Hamming distance {config.hamming_k} are near-duplicate candidates"),
        VECTOR: ("TF vector", f"hashed term-frequency vector ({config.dims} dims, unit length, cosine "
                              "similarity); not aggregatable, hidden from Discover"),
        MINHASH: ("MinHash signature", f"MinHash signature of the character n-grams "
                                       f"({config.minhash_perm} little-endian {SIGNATURE_BITS}-bit values, "
                                       "base64; every text unless the strategy is simhash); binary, not "
                                       "searchable"),
        SHINGLES: ("character n-grams", f"distinct character {config.minhash_ngram}-grams behind the "
                                        "MinHash signature"),
        TOKENS: ("terms", "number of terms after normalising, tokenising and dropping stopwords (0 for a text "
                          "that is not segmented: one without SimHash bands or stored vector)"),
        CHARS: ("characters", "length of the normalised text in characters"),
        EMPTY: ("empty text", "true when the text has no words; an empty text never matches anything"),
        CONTENT_SHA1: ("content SHA-1", "SHA-1 of the normalised text; equal values = exact duplicates"),
        CLUSTER_ID: ("cluster", "id of the cluster's representative document; equal values = one cluster "
                                "of near-duplicates (a document that duplicates nothing is its own cluster)"),
        DUPLICATE_OF: ("duplicate of", "id of the cluster's representative, on every other member of the "
                                       "cluster; absent on representatives and on documents that duplicate nothing"),
        SEQ: ("write order", "when ingest wrote the document (nanoseconds since 1970, kept on re-ingest); "
                                     "the earliest member of a cluster represents it"),
        CLUSTER_SEQ: ("cluster write order", f"write order ({SEQ}) of the cluster's representative"),
    }
    layout = config.band_layout()
    probe = (f"; lookups also probe keys within {layout.radius} bit(s) of it" if layout.radius else "")
    for i, name in enumerate(band_fields(config)):
        ranges = _bit_ranges(layout.spans[b] for b in layout.tables[i])
        out[f"{DEDUP}.{name}"] = (
            f"SimHash band {i} (bits {ranges})",
            f"SimHash band key of table {i}: bits {ranges}, stored as \"{i}:<hex>\"; equal values = candidate "
            f"near-duplicates{probe}")
    out[f"{DEDUP}.{LSH_KEYS}"] = (
        "MinHash LSH keys",
        f"one key per MinHash LSH band ({config.minhash_bands} bands of {config.minhash_rows} rows of the "
        f"{config.minhash_perm}-permutation MinHash of the character {config.minhash_ngram}-grams): the top "
        f"{LSH_KEY_BITS} bits of a hash of the band number and its rows; a value shared by two documents = "
        "candidate near-duplicates")
    # Exactly the fields of the mapping, in its order; one added after this was written still gets a
    # (plain) description.
    dedup = mapping_for(config)["properties"][DEDUP]["properties"]
    return {f"{DEDUP}.{name}": out.get(f"{DEDUP}.{name}", (name, f"{UNDESCRIBED} ({spec.get('type', 'object')})"))
            for name, spec in dedup.items()}


def _search_source(query: str = "") -> str:
    return json.dumps({"query": {"query": query, "language": "kuery"}, "filter": [], "indexRefName": INDEX_REF},
                      separators=(",", ":"))


def _envelope(kind: str, type_: str, index: str, attributes: dict[str, Any],
              references: list[dict[str, str]]) -> dict[str, Any]:
    return {"type": type_, "id": object_id(index, kind), "attributes": attributes, "references": references,
            "coreMigrationVersion": KIBANA_VERSION, "typeMigrationVersion": KIBANA_VERSION}


def _table(title: str, field: str, label: str, rows: int, *, min_count: int = 1) -> str:
    terms: dict[str, Any] = {"field": field, "orderBy": "1", "order": "desc", "size": rows,
                             "otherBucket": False, "otherBucketLabel": "Other", "missingBucket": False,
                             "missingBucketLabel": "Missing", "customLabel": label}
    if min_count > 1:
        terms["json"] = json.dumps({"min_doc_count": min_count})
    vis = {
        "title": title,
        "type": "table",
        "aggs": [
            {"id": "1", "enabled": True, "type": "count", "schema": "metric", "params": {"customLabel": "documents"}},
            {"id": "2", "enabled": True, "type": "terms", "schema": "bucket", "params": terms},
        ],
        "params": {"perPage": min(rows, 20), "showPartialRows": False, "showMetricsAtAllLevels": False,
                   "showTotal": False, "totalFunc": "sum", "percentageCol": "", "showToolbar": True,
                   "autoFitRowToContent": False},
    }
    return json.dumps(vis, ensure_ascii=False, separators=(",", ":"))


@checked_args
def saved_objects(index: str, config: FingerprintConfig, *, time_field: str | None = None) -> list[dict[str, Any]]:
    """The saved objects for ``index``, whose documents were fingerprinted with ``config``.

    Args:
        index: the index name (or an index pattern such as ``news-*``) the data view points at.
        config: the index's fingerprint config (decides which band fields exist).
        time_field: a date field for the data view's time filter; default none, so Discover shows every
            document regardless of time.

    Returns:
        The data view, the saved search "near-duplicate clusters", the cluster-size table, one "most
        crowded values" table per band field and, when the config gives texts MinHash signatures, one of
        the LSH keys, in that order (referenced objects first).
    """
    if not index or any(c in index for c in ' "\n'):
        raise ConfigError(f"invalid index name for a data view: {index!r}")
    props = mapping_for(config)["properties"]
    if time_field is not None and props.get(time_field, {}).get("type") != "date":
        dates = sorted(k for k, v in props.items() if v.get("type") == "date")
        raise ConfigError(f"time field {time_field!r} is not a date field of the esdedup mapping "
                          f"(date fields: {', '.join(dates)})")
    pattern_id = object_id(index, "index-pattern")
    ref = [{"name": INDEX_REF, "type": "index-pattern", "id": pattern_id}]
    descriptions = field_descriptions(config)
    field_attrs = {name: {"customLabel": label, "customDescription": text}
                   for name, (label, text) in descriptions.items()}
    pattern_attrs: dict[str, Any] = {
        "title": index,
        "name": f"esdedup: {index}",
        "fields": "[]",
        "fieldAttrs": json.dumps(field_attrs, ensure_ascii=False, separators=(",", ":")),
        "fieldFormatMap": "{}",
        "runtimeFieldMap": "{}",
        # The TF vector (hundreds of floats) and the MinHash signature are noise in Discover's rows.
        "sourceFilters": json.dumps([{"value": f} for f in HIDDEN_FIELDS if f in field_attrs]),
    }
    if time_field is not None:
        pattern_attrs["timeFieldName"] = time_field
    objects = [_envelope("index-pattern", "index-pattern", index, pattern_attrs, [])]

    objects.append(_envelope("search:near-duplicate-clusters", "search", index, {
        "title": f"esdedup {index}: near-duplicate clusters",
        "description": f"Documents labelled as a near-duplicate of another ({DUPLICATE_OF} set), sorted by "
                       f"cluster. A cluster's representative has no duplicate_of; filter on {CLUSTER_ID} "
                       "to see a whole cluster.",
        "columns": ["title", CLUSTER_ID, DUPLICATE_OF, SIMHASH],
        "sort": [[CLUSTER_ID, "asc"]],
        "grid": {},
        "hideChart": False,
        "isTextBasedQuery": False,
        "kibanaSavedObjectMeta": {"searchSourceJSON": _search_source(f"{DUPLICATE_OF} : *")},
    }, ref))

    def vis(kind: str, title: str, description: str, vis_state: str) -> dict[str, Any]:
        return _envelope(kind, "visualization", index, {
            "title": title, "description": description, "visState": vis_state, "uiStateJSON": "{}",
            "version": 1, "kibanaSavedObjectMeta": {"searchSourceJSON": _search_source()},
        }, ref)

    title = f"esdedup {index}: cluster sizes"
    objects.append(vis("visualization:cluster-sizes", title,
                       f"Largest near-duplicate clusters: documents per {CLUSTER_ID} (clusters of two or "
                       "more documents).",
                       _table(title, CLUSTER_ID, "cluster", CLUSTER_ROWS, min_count=2)))
    for i, name in enumerate(band_fields(config)):
        field = f"{DEDUP}.{name}"
        title = f"esdedup {index}: most crowded values of {field}"
        objects.append(vis(f"visualization:crowded-{name}", title,
                           f"Band values of table {i} shared by the most documents. A value shared by very "
                           "many documents is usually boilerplate (it makes every lookup on it expensive).",
                           _table(title, field, f"band {i} value", BAND_ROWS, min_count=2)))
    if config.gets_signatures:  # the LSH keys of every band live in one field
        field = f"{DEDUP}.{LSH_KEYS}"
        title = f"esdedup {index}: most crowded values of {field}"
        objects.append(vis(f"visualization:crowded-{LSH_KEYS}", title,
                           "MinHash LSH key values shared by the most documents (every LSH band's keys are in this "
                           "one field). A value shared by very many documents is usually boilerplate.",
                           _table(title, field, "LSH key value", BAND_ROWS, min_count=2)))
    return objects


@checked_args
def to_ndjson(objects: Iterable[dict[str, Any]]) -> str:
    """Objects as NDJSON, one compact object per line (the format Kibana's saved-objects import reads)."""
    return "".join(json.dumps(o, ensure_ascii=False, separators=(",", ":")) + "\n" for o in objects)
