"""The stored document layout: field names, the index mapping and fingerprint <-> document conversion.

Both stores use the same names, and `mappings/esdedup-template.json` is this module's output for the
default config (a test ties the two together). Everything esdedup adds lives under one object field,
``dedup``, so it never clashes with the article's own fields:

==========================  ==============  ==================================================================
field                       type            meaning
==========================  ==============  ==================================================================
dedup.simhash               keyword         SimHash as fixed-width lowercase hex (16 chars for 64 bits); all zeros
                                            for a text without terms (`FingerprintConfig.gets_terms`: under
                                            ``auto`` a text shorter than ``short_text_chars``, when no vector is
                                            stored), whose SimHash nothing reads
dedup.band_<i>              keyword         band key of table i, ``"<i>:<hex>"``; equal keys = candidate pair
dedup.lsh_keys              long            MinHash LSH keys (texts with a signature), one per band: 40-bit integers
dedup.vector                dense_vector    hashed TF vector, unit length, cosine similarity (only when the
                                            config stores it: `FingerprintConfig.stores_vector`)
dedup.minhash               binary          MinHash signature, little-endian 16-bit values (base64)
dedup.shingles              integer         distinct character n-grams behind the signature
dedup.tokens                integer         terms after filtering (document length); 0 for a text without terms
dedup.chars                 integer         normalised characters
dedup.empty                 boolean         true when the text has no words (matches its exact copies only): no
                                            term, or for a text without terms no letter or digit
dedup.content_sha1          keyword         SHA-1 of the normalised text (exact duplicates)
dedup.cluster_id            keyword         id of the cluster's representative document
dedup.duplicate_of          keyword         the representative, on every other member of its cluster
dedup.seq                   long            write order: the earliest member of a cluster represents it
dedup.cluster_seq           long            ``seq`` of the cluster's representative
==========================  ==============  ==================================================================

Why the LSH keys are one ``long`` field (bench/es_fields.py, BENCHMARKS.md): every text adds a key per band
(16 by default) that hardly any other document shares. As keyword terms they cost the node more than the rest of the document
(unique terms in the terms dictionary and in the doc values' ordinals, hashed, sorted and merged); as
points of a numeric field they cost far less. Lookups still score a candidate by the number of bands
it shares (one ``term`` clause per band, `esdedup.es.query`); probes name the bands ``lsh_<i>``
(`lsh_bands`), all of which live in ``dedup.lsh_keys`` (`key_field`).
"""
from __future__ import annotations

import base64
import copy
import hashlib
import json
import logging
import re
from collections.abc import Sequence
from importlib import resources as importlib_resources
from typing import Any

import numpy as np

from esdedup._version import __version__
from esdedup.errors import ConfigError
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.minhash import SIGNATURE_DTYPE
from esdedup.fingerprint.normalize import t2s_version
from esdedup.fingerprint.simhash import to_hex
from esdedup.fingerprint.values import Fingerprint, FingerprintColumns
from esdedup.util import native
from esdedup.util.fieldtypes import checked_args

log = logging.getLogger(__name__)

DEDUP = "dedup"
#: Where a record's own fields that esdedup fills (id, title, text, and any key that would land under ``dedup``)
#: are kept when they are moved aside.
INPUT_FIELDS = "input_fields"
SIMHASH = "dedup.simhash"
VECTOR = "dedup.vector"
TOKENS = "dedup.tokens"
CLUSTER_ID = "dedup.cluster_id"
DUPLICATE_OF = "dedup.duplicate_of"
EMPTY = "dedup.empty"
CHARS = "dedup.chars"
SHINGLES = "dedup.shingles"
MINHASH = "dedup.minhash"
SEQ = "dedup.seq"
CLUSTER_SEQ = "dedup.cluster_seq"
CONTENT_SHA1 = "dedup.content_sha1"
#: ``_source`` patterns of the key fields: the SimHash bands and the LSH keys.
BAND_FIELDS_PATTERN = "dedup.band_*"
LSH_FIELDS_PATTERN = "dedup.lsh_*"
#: The `_meta` key under which an index carries its FingerprintConfig.
META_KEY = "esdedup"
META_SCHEMA = 1
#: The member of the `_meta` block naming the OpenCC version of a ``t2s`` index (`meta_for`).
OPENCC_VERSION = "opencc_version"
#: Article fields with a fixed type; any other field of a record is passed through (dynamic mapping).
ARTICLE_FIELDS: dict[str, dict[str, Any]] = {
    "id": {"type": "keyword"},
    "title": {"type": "text"},
    "text": {"type": "text"},
    "url": {"type": "keyword", "ignore_above": 2048},
    "source": {"type": "keyword"},
    "timestamp": {"type": "date", "format": "strict_date_optional_time||epoch_millis", "ignore_malformed": True},
}


def band_fields(config: FingerprintConfig) -> tuple[str, ...]:
    """Short names (inside ``dedup``) of the SimHash band fields, one per table."""
    return config.derived("band_fields", lambda: tuple(config.band_layout().field_names("band_")))  # type: ignore[no-any-return]


#: The one field (inside ``dedup``) that holds the LSH keys of every band.
LSH_KEYS = "lsh_keys"
_LSH_BAND = "lsh_"


def lsh_bands(config: FingerprintConfig) -> tuple[str, ...]:
    """Names of the MinHash LSH bands in a probe (`esdedup.store.base.Probe`), ``lsh_<i>``: their keys all
    live in the one field `LSH_KEYS`."""
    if not config.gets_signatures:
        return ()
    return config.derived("lsh_bands", lambda: tuple(f"{_LSH_BAND}{i}" for i in range(config.minhash_bands)))  # type: ignore[no-any-return]


def key_field(name: str) -> str:
    """The stored field (inside ``dedup``) of a probe's band name: `LSH_KEYS` for an LSH band, the band
    field itself for a SimHash band."""
    return LSH_KEYS if name.startswith(_LSH_BAND) else name


def key_fields(config: FingerprintConfig, *, lsh: bool = True) -> tuple[str, ...]:
    """The stored fields that hold band keys: the SimHash band fields, then `LSH_KEYS` when texts get
    signatures (and ``lsh``)."""
    return band_fields(config) + ((LSH_KEYS,) if lsh and config.gets_signatures else ())


def content_sha1(normalized_text: str) -> str:
    return hashlib.sha1(normalized_text.encode("utf-8", "surrogatepass")).hexdigest()


def meta_for(config: FingerprintConfig) -> dict[str, Any]:
    """The `_meta` block that travels with an index: with ``t2s``, the OpenCC version whose dictionaries
    converted its texts too (`config_from_meta` tells when another one is installed)."""
    block: dict[str, Any] = {"schema": META_SCHEMA, "esdedup_version": __version__, "config": config.to_dict()}
    if config.t2s:
        block[OPENCC_VERSION] = t2s_version()
    return {META_KEY: block}


def config_from_meta(meta: Any, where: str = "the index") -> FingerprintConfig | None:
    """The config stored in an index's `_meta`, or None when the index was not made by esdedup. Metadata
    anyone can edit: whatever else it holds (``_meta.esdedup`` not an object, no config, a config that is not
    one) is a ConfigError naming ``where``."""
    if not meta or not isinstance(meta, dict) or META_KEY not in meta:
        return None
    block = meta[META_KEY]
    config = block.get("config") if isinstance(block, dict) else None
    if not isinstance(config, dict):
        shown = json.dumps(block, ensure_ascii=False, default=str)
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        raise ConfigError(f"{where} has an esdedup metadata block (_meta.{META_KEY}) that holds no fingerprint "
                          f"config object: {shown}; rebuild the index, or restore its _meta.{META_KEY}")
    try:
        stored = FingerprintConfig.from_dict(dict(config))
    except ConfigError as exc:
        if type(exc) is not ConfigError:  # a more specific error (a resource file changed) says it better
            raise
        raise ConfigError(f"{where} has a stored fingerprint config that is not valid ({exc}); rebuild the "
                          f"index, or restore its _meta.{META_KEY}") from None
    built_with = block.get(OPENCC_VERSION)
    if stored.t2s and isinstance(built_with, str) and built_with != (installed := t2s_version()):
        log.warning("%s was fingerprinted with OpenCC %s converting traditional to simplified Chinese, and OpenCC "
                    "%s is installed: texts it converts differently get other fingerprints than the same texts "
                    "already indexed; install OpenCC %s (pip install 'OpenCC==%s'), or rebuild the index", where,
                    built_with, installed or "(none)", built_with, built_with)
    return stored


#: What an analyzer name may look like (a cluster's own: ``smartcn``, ``ik_max_word``, ``cjk``).
_ANALYZER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


def text_fields(text_analyzer: str | None) -> dict[str, Any]:
    """The article fields' mappings: ``title`` and ``text`` analysed by ``text_analyzer`` (an analyzer the
    cluster has, e.g. the esdedup plugin's ``jieba``, ``smartcn``, ``ik_max_word`` or ``cjk``) or, with None, by
    Elasticsearch's ``standard`` analyzer, which cuts Chinese into single characters."""
    fields: dict[str, dict[str, Any]] = copy.deepcopy(ARTICLE_FIELDS)
    if text_analyzer is not None:
        if not isinstance(text_analyzer, str) or not _ANALYZER_NAME.fullmatch(text_analyzer):
            raise ConfigError(f"text analyzer must be the name of an analyzer of the cluster (letters, digits, "
                              f"'_', '.', '-'), got {text_analyzer!r}")
        for name in ("title", "text"):
            fields[name]["analyzer"] = text_analyzer
    return fields


@checked_args
def mapping_for(config: FingerprintConfig, *, text_analyzer: str | None = None) -> dict[str, Any]:
    """The index mapping (the ``mappings`` body) for a config; ``text_analyzer``: see `text_fields`."""
    dedup_props: dict[str, Any] = {
        "simhash": {"type": "keyword"},
        **({"vector": vector_mapping(config)} if config.stores_vector else {}),
        "tokens": {"type": "integer"},
        "chars": {"type": "integer"},
        "minhash": {"type": "binary"},
        "shingles": {"type": "integer"},
        "empty": {"type": "boolean"},
        "content_sha1": {"type": "keyword"},
        "cluster_id": {"type": "keyword"},
        "duplicate_of": {"type": "keyword"},
        "seq": {"type": "long"},
        "cluster_seq": {"type": "long"},
    }
    for name in band_fields(config):
        dedup_props[name] = {"type": "keyword"}
    if config.gets_signatures:
        dedup_props[LSH_KEYS] = {"type": "long"}
    return {
        "_meta": meta_for(config),
        "dynamic": True,
        "properties": {**text_fields(text_analyzer),
                       DEDUP: {"type": "object", "dynamic": "strict", "properties": dedup_props}},
    }


def vector_mapping(config: FingerprintConfig) -> dict[str, Any]:
    """``dedup.vector`` (for a config that `stores_vector`): cosine similarity; indexed for kNN as the
    config's ``vector_index`` says."""
    if config.knn_index == "none":
        return {"type": "dense_vector", "dims": config.dims, "index": False}
    return {"type": "dense_vector", "dims": config.dims, "index": True, "similarity": "cosine",
            "index_options": {"type": config.knn_index}}


def index_settings(shards: int = 1, replicas: int | None = None) -> dict[str, Any]:
    """The settings an index is created with: ``replicas`` replicas, or by default one replica wherever there
    is a second data node to hold it and none on a one-node cluster (``auto_expand_replicas`` 0-1), so that a
    single node is green rather than yellow forever."""
    replica = {"number_of_replicas": replicas} if replicas is not None else {"auto_expand_replicas": "0-1"}
    return {"number_of_shards": shards, **replica}


@checked_args
def template_for(config: FingerprintConfig, index_patterns: list[str], *, shards: int = 1,
                 replicas: int | None = None, text_analyzer: str | None = None) -> dict[str, Any]:
    """A composable index template body (``PUT _index_template/<name>``) for a config."""
    return {
        "index_patterns": index_patterns,
        "template": {
            "settings": index_settings(shards, replicas),
            "mappings": mapping_for(config, text_analyzer=text_analyzer),
        },
        "_meta": {"description": "esdedup near-duplicate fields: SimHash bands (keyword), MinHash LSH keys "
                                 "(long), TF vector (dense_vector, when the config stores it), cluster labels"},
    }


def shipped_template() -> dict[str, Any]:
    """`mappings/esdedup-template.json` as shipped in the package."""
    text = importlib_resources.files("esdedup.mappings").joinpath("esdedup-template.json").read_text("utf-8")
    return json.loads(text)


def dedup_source(fp: Fingerprint, config: FingerprintConfig, normalized_sha1: str | None = None) -> dict[str, Any]:
    """The ``dedup`` object of a stored document."""
    d: dict[str, Any] = {
        "simhash": to_hex(fp.simhash, config.bits),
        "tokens": fp.length,
        "chars": fp.chars,
        "empty": fp.empty,
    }
    if not fp.empty and config.stores_vector:
        # dense_vector with cosine similarity rejects an all-zero vector, so an empty text stores none.
        # Six decimals are far below float32 noise for cosine; numpy rounds the whole vector at once.
        d["vector"] = np.round(np.asarray(fp.vector, dtype=np.float64), 6).tolist()
    if fp.minhash is not None:
        d["minhash"] = encode_minhash(fp.minhash)
        d["shingles"] = fp.shingles
    for name, key in zip(band_fields(config), fp.bands, strict=False):  # an empty text has no bands
        d[name] = key
    if fp.lsh:  # only texts with a signature have LSH keys; JSON numbers, as the long field holds them
        d[LSH_KEYS] = [int(k) for k in fp.lsh]
    if normalized_sha1:
        d["content_sha1"] = normalized_sha1
    return d


def encode_minhash(sig: np.ndarray) -> str:
    """A MinHash signature as stored in Elasticsearch: base64 of its little-endian 16-bit values
    (`esdedup.fingerprint.minhash.SIGNATURE_DTYPE`)."""
    return base64.b64encode(np.asarray(sig, dtype=SIGNATURE_DTYPE).tobytes()).decode("ascii")


def decode_minhash(text: str | None) -> np.ndarray | None:
    if not text:
        return None
    return np.frombuffer(base64.b64decode(text), dtype=SIGNATURE_DTYPE).astype(np.uint32)


# -- the document as JSON ----------------------------------------------------------------------------
def _stdlib_json_bytes(obj: Any) -> bytes:
    # What the client's own serializer would send (surrogates passed through, ES reports them per document).
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str).encode("utf-8", "surrogatepass")


try:
    import orjson

    def json_bytes(obj: Any) -> bytes:
        """``obj`` as compact UTF-8 JSON (orjson; the standard library for what orjson refuses, such as
        lone surrogates or exotic types)."""
        try:
            return orjson.dumps(obj)
        except TypeError:  # orjson.JSONEncodeError
            return _stdlib_json_bytes(obj)
except ImportError:  # pragma: no cover - orjson is a dependency; still work without it
    json_bytes = _stdlib_json_bytes


def dedup_members(fp: Fingerprint, config: FingerprintConfig, normalized_sha1: str | None = None) -> bytes:
    """`dedup_source` as JSON object members without the braces (`esdedup.store.base.NewDoc.dedup_json`):
    encoded where the fingerprint is made, spliced into the document's JSON by a store that sends JSON."""
    return json_bytes(dedup_source(fp, config, normalized_sha1))[1:-1]


def dedup_members_many(batches: Sequence[FingerprintColumns], config: FingerprintConfig,
                       normalized_sha1s: Sequence[str | None]) -> list[bytes]:
    """`dedup_members` of every fingerprint of some batches of columns (`Fingerprinter.fingerprint_columns`),
    in order, each with its content SHA-1: a batch at a time from its columns by the native core where it
    writes the same bytes (`native_dedup_members`), else fingerprint by fingerprint."""
    out: list[bytes] = []
    fields = band_fields(config)
    for columns in batches:
        sha1s = normalized_sha1s[len(out):len(out) + len(columns)]
        encoded = native_dedup_members(columns, sha1s, config, fields)
        if encoded is None:
            fps = columns.fingerprints()
            encoded = [dedup_members(fp, config, sha1) for fp, sha1 in zip(fps, sha1s, strict=True)]
        out.extend(encoded)
    return out


def native_dedup_members(columns: FingerprintColumns, sha1s: Sequence[str | None], config: FingerprintConfig,
                         band_fields: Sequence[str]) -> list[bytes] | None:
    """`dedup_members` of each fingerprint of ``columns`` with its content SHA-1, in the
    extension, the GIL released: the same bytes (``band_fields``: `band_fields` of
    ``config``). None when the extension is not in use, or for the whole batch when the core would not write
    what orjson writes: the config stores the vector (orjson formats the floats), a string would need JSON
    escaping, an LSH key is not a canonical decimal, or a value is out of the core's range."""
    if not native.enabled() or config.stores_vector:
        return None
    signed = [sig is not None for sig in columns.minhash]
    sigs = [sig for sig in columns.minhash if sig is not None]
    # The cast of `encode_minhash`, for all signatures at once.
    stacked = np.asarray(np.stack(sigs) if sigs else np.zeros((0, 0)), dtype=SIGNATURE_DTYPE)
    try:
        return native.loaded().dedup_members(  # type: ignore[no-any-return]
            columns.simhashes, columns.bits, columns.lengths, columns.chars, columns.shingles, columns.empties,
            stacked.tobytes(), signed, stacked.shape[1], columns.bands, columns.lsh, list(sha1s),
            list(band_fields))
    except (OverflowError, UnicodeEncodeError):  # a value beyond 128 or 64 bits, a lone surrogate
        return None
