"""`FingerprintConfig`: every setting that changes a fingerprint's bits, frozen and JSON round-trippable.

The config travels with an index (Elasticsearch `_meta`, the local store's meta table). Two configs are
*compatible* when their `identity()` is equal: the identity leaves out where resource files happened to
live on one machine (paths) and keeps what the files contained (their SHA-256), so the same dictionary
copied elsewhere still matches, while an edited dictionary does not.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from esdedup.errors import ConfigError
from esdedup.fingerprint.bands import BandLayout, check_bits
from esdedup.util.fieldtypes import check_fields, check_value, checked_args, choices, field_types
from esdedup.util.regular import NotRegularFile, open_binary, read_limited

#: Bumped whenever the meaning of a field or the fingerprint algorithm changes.
#: 2: MinHash v2; 3: invisible format characters dropped (normalize.INVISIBLE_RANGES); 4: 16-bit MinHash values,
#: LSH keys as 40-bit integers in one field, no TF vector unless ``vector_index`` asks for one; 5: no terms, SimHash
#: or vector for a text that gets neither SimHash band keys nor a stored vector (`FingerprintConfig.gets_terms`).
#: Schema 4 configs without ``minhash_rows`` (written before it was a field) read as the rows they were
#: written with, so the field needed no new schema.
SCHEMA_VERSION = 5

TOKENIZERS = ("jieba", "rjieba", "char")
WEIGHTINGS = ("tf", "tfidf", "tf_length")
STRATEGIES = ("auto", "simhash", "minhash")
STOPWORDS = ("default", "none", "file")

# Fields that name a file on one machine; identity() keeps their digests instead.
_PATH_FIELDS = ("synonyms_path", "user_dict_path", "stopwords_path", "idf_path")
_RESOURCE_NAMES = {"synonyms_path": "synonyms", "user_dict_path": "user dictionary", "stopwords_path": "stopwords",
                   "idf_path": "idf table"}
# Fields that only decide what counts as a duplicate at query time; an index serves any value of them.
_QUERY_FIELDS = ("cosine_threshold", "jaccard_threshold", "containment_threshold")
# Fields that shape the Elasticsearch mapping but not a single fingerprint bit.
_MAPPING_FIELDS = ("vector_index",)
VECTOR_INDEXES = ("auto", "int8_flat", "flat", "int8_hnsw", "hnsw", "none")
#: Upper bounds of the numeric fields not bounded by another (far above any useful value).
MAX_MINHASH_PERM = 1024
MAX_NGRAM = 16
MAX_SHORT_TEXT_CHARS = 10**9


#: The largest resource file (synonyms, user dictionary, stopwords, idf table) a config may name: read
#: whole, and for its digest, before any work starts.
RESOURCE_FILE_LIMIT = 256 << 20


def read_resource(path: str | Path, what: str = "resource") -> bytes:
    """The bytes of a resource file ``what`` (e.g. "synonyms"): a regular file of at most
    `RESOURCE_FILE_LIMIT` bytes. A FIFO or a device (which would never end or never answer), a larger or an
    unreadable file is a ConfigError naming it."""
    try:
        with open_binary(path) as f:
            data = read_limited(f, RESOURCE_FILE_LIMIT)
    except NotRegularFile:
        raise ConfigError(f"{what} file {path} is not a regular file (a FIFO or a device cannot be read as one); "
                          "name a file") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {what} file {path}: {exc.strerror or exc}") from None
    if isinstance(data, int):
        raise ConfigError(f"{what} file {path} has {data} bytes, over the limit of {RESOURCE_FILE_LIMIT} bytes "
                          f"for a {what} file")
    return data


def file_digest(path: str | Path, what: str = "resource") -> str:
    """SHA-256 hex of a resource file's bytes (what makes a resource file part of a fingerprint); the file
    is read as `read_resource` reads it."""
    return hashlib.sha256(read_resource(path, what)).hexdigest()


def tokenizer_version(name: str) -> str:
    """The installed version of a tokenizer backend (part of the config: new dictionaries change tokens)."""
    if name == "char":
        return "builtin"
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError as exc:  # pragma: no cover - depends on the environment
        raise ConfigError(f"tokenizer {name!r} is not installed; pip install {name}") from exc


def _with_legacy_rows(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with ``minhash_rows`` filled in when it names ``minhash_bands`` but not ``minhash_rows``: a
    config written before rows were a field (schema 4 has both forms), whose bands took all the signature
    values, ``minhash_perm // minhash_bands`` each. Its index keeps its LSH keys, with no schema change."""
    if "minhash_bands" not in data or "minhash_rows" in data:
        return data
    bands, perm = data["minhash_bands"], data.get("minhash_perm", FingerprintConfig.minhash_perm)
    if type(perm) is not int or type(bands) is not int or bands < 1:
        return data  # validation names the bad value
    return {**data, "minhash_rows": max(perm // bands, 1)}


def _strings_of(cls: type) -> tuple[str, ...]:
    """The fields of ``cls`` that hold strings (or, ``extra``, JSON with strings in it)."""
    return tuple(f.name for f in dataclasses.fields(cls) if "str" in str(f.type) or "dict" in str(f.type))


def _shown(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= 40 else shown[:37] + "..."


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


@dataclass(frozen=True)
class FingerprintConfig:
    """How text becomes a fingerprint.

    Args:
        bits: SimHash width, 64 (default) or 128.
        hamming_k: the largest Hamming distance that counts as a near-duplicate; band lookups are built so
            that *every* pair within this distance shares at least one band key.
        band_blocks: how many blocks the fingerprint is cut into; 0 means the pigeonhole default k+1.
        band_key_blocks: how many blocks form one band key (one lookup table per combination); 0 means
            1 for the pigeonhole layout, ``band_blocks - hamming_k`` for a multi-table layout.
        probe_radius: look up each band key together with its neighbours within this many bits
            (lets few, long keys serve a large k); 0 means exact band keys only.
        tokenizer: ``jieba`` (jieba's precise-mode tokens, computed by `esdedup.fingerprint.jieba_fast`), ``rjieba``
            (jieba-rs throughout: a little faster, other tokens on near-ties) or ``char``.
        shingle: 0 for words; n > 0 for overlapping character n-grams (short texts need them).
        weighting: ``tf`` (default: robust on a corpus that changes fast), ``tfidf`` or ``tf_length``
            (term frequency times the word length in characters, design document 004).
        dims: length of the hashed TF vector stored as a ``dense_vector``.
        t2s: convert Traditional to Simplified Chinese (OpenCC) before tokenising.
        stopwords: ``default`` (shipped Chinese + English lists), ``none`` or ``file``
            (then ``stopwords_path``).
        cosine_threshold: the TF cosine at or above which two texts are near-duplicates.
        strategy: ``auto`` (default): every text gets a MinHash signature and LSH band keys over its
            character n-grams, and texts of at least ``short_text_chars`` also get SimHash band keys;
            ``minhash``: signatures and LSH keys only; ``simhash``: SimHash band keys only (pairs are
            then judged on Hamming distance and cosine; the matching layer applies the rule).
        short_text_chars: with ``auto``, texts shorter than this (normalised characters) get no SimHash
            band keys (their SimHash is unstable and its band values collide at random).
        minhash_perm / minhash_bands / minhash_rows / minhash_ngram: the MinHash LSH parameters (signature
            length, LSH bands, signature values per band, character n-gram size). The LSH keys hash the
            signature values ``[0, bands * rows)``, band ``i`` being values ``[i * rows, (i + 1) * rows)``; the
            Jaccard estimate reads all ``minhash_perm`` values. A pair with Jaccard s shares a band with
            probability 1 - (1 - s^rows)^bands: 88% at s = 0.5 for the default 16 x 3, with half the keys of
            32 x 4. A stored config written before ``minhash_rows`` existed has
            ``minhash_bands`` but no ``minhash_rows``: it reads as ``minhash_perm // minhash_bands`` rows, the
            layout it was written with (`from_dict`).
        vector_index: whether documents carry the TF vector ``dedup.vector`` and how Elasticsearch indexes it
            for kNN. ``auto`` (default): with strategy ``simhash``, whose rule reads cosines, as
            ``int8_flat``; with ``auto`` and ``minhash``, whose rule never reads a cosine of two texts with
            signatures, no vector at all (it would serve kNN lookups only, and parsing and storing it is a
            large share of the node's indexing time on short texts: BENCHMARKS.md). Otherwise a vector in
            every document, indexed as ``int8_flat`` (exact brute-force kNN over int8-quantised vectors:
            little more to index than the stored vector), ``flat``, ``int8_hnsw`` / ``hnsw`` (approximate
            graph: faster kNN on millions of documents per shard, but building it costs most of the
            indexing time) or ``none`` (stored, not searchable by kNN). See `stores_vector`.
        jaccard_threshold: two texts with signatures are near-duplicates when the MinHash estimate of
            their character n-gram Jaccard is at least this...
        containment_threshold: ...or when the estimated share of the smaller text's n-grams found in the
            other is at least this (one text contains the other); 0 switches containment off.

    Example:
        >>> cfg = FingerprintConfig(hamming_k=4)
        >>> FingerprintConfig.from_json(cfg.to_json()) == cfg
        True
    """

    bits: int = 64
    hamming_k: int = 3
    band_blocks: int = 0
    band_key_blocks: int = 0
    probe_radius: int = 0
    tokenizer: str = choices("jieba", TOKENIZERS)
    tokenizer_version: str = ""
    shingle: int = 0
    weighting: str = choices("tf", WEIGHTINGS)
    dims: int = 256
    t2s: bool = False
    stopwords: str = choices("default", STOPWORDS)
    cosine_threshold: float = 0.8
    strategy: str = choices("auto", STRATEGIES)
    short_text_chars: int = 200
    minhash_perm: int = 128
    minhash_bands: int = 16
    minhash_rows: int = 3
    minhash_ngram: int = 2
    vector_index: str = choices("auto", VECTOR_INDEXES)
    jaccard_threshold: float = 0.5
    containment_threshold: float = 0.8
    synonyms_path: str | None = None
    synonyms_sha256: str | None = None
    user_dict_path: str | None = None
    user_dict_sha256: str | None = None
    stopwords_path: str | None = None
    stopwords_sha256: str | None = None
    idf_path: str | None = None
    idf_sha256: str | None = None
    schema: int = SCHEMA_VERSION
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        # Types first (and the tokenizer's name before importlib is asked for its version): a value of the
        # wrong type would be written into an index's metadata that `from_dict` then refuses on every open.
        check_fields(self)
        if not self.tokenizer_version:
            object.__setattr__(self, "tokenizer_version", tokenizer_version(self.tokenizer))
        for name in _PATH_FIELDS:
            path = getattr(self, name)
            digest_field = name.replace("_path", "_sha256")
            if path is not None and getattr(self, digest_field) is None:
                object.__setattr__(self, digest_field, file_digest(path, _RESOURCE_NAMES[name]))
        self._validate()

    def _validate(self) -> None:
        def bad(msg: str) -> ConfigError:
            return ConfigError(msg)

        if self.schema != SCHEMA_VERSION:
            if isinstance(self.schema, int) and self.schema < SCHEMA_VERSION:
                raise bad(f"config schema {self.schema} is not supported (this esdedup reads {SCHEMA_VERSION}): it "
                          "was written by an older esdedup, whose fingerprints are not comparable with this "
                          "version's; ingest the documents of such an index again into a new index")
            raise bad(f"config schema {self.schema} is not supported (this esdedup reads {SCHEMA_VERSION}); "
                      "upgrade esdedup")
        check_bits(self.bits)
        if not 0 <= self.hamming_k < self.bits // 2:
            raise bad(f"hamming_k must be between 0 and {self.bits // 2 - 1}, got {self.hamming_k}")
        if self.weighting == "tfidf" and self.idf_path is None and self.idf_sha256 is None:
            raise bad("weighting 'tfidf' needs a document-frequency table: set idf_path "
                      "(build one with esdedup.fingerprint.features.DocumentFrequency)")
        if self.tokenizer == "char" and self.shingle <= 0:
            raise bad("tokenizer 'char' needs shingle >= 1 (the n of the character n-grams)")
        if self.shingle > 0 and self.tokenizer != "char":
            raise bad("shingle (character n-grams) goes with tokenizer 'char'; word tokenizers use shingle 0")
        if not 0 <= self.shingle <= MAX_NGRAM:
            raise bad(f"shingle must be between 0 and {MAX_NGRAM}, got {self.shingle}")
        if not 8 <= self.dims <= 4096:
            raise bad(f"dims must be between 8 and 4096, got {self.dims}")
        if self.stopwords == "file" and self.stopwords_path is None and self.stopwords_sha256 is None:
            raise bad("stopwords 'file' needs stopwords_path")
        if not 0.0 < self.cosine_threshold <= 1.0:
            raise bad(f"cosine_threshold must be in (0, 1], got {self.cosine_threshold}")
        if not 0.0 < self.jaccard_threshold <= 1.0:
            raise bad(f"jaccard_threshold must be in (0, 1], got {self.jaccard_threshold}")
        if not 0.0 <= self.containment_threshold <= 1.0:
            raise bad(f"containment_threshold must be in [0, 1] (0 = off), got {self.containment_threshold}")
        # Upper bounds too: a config read from an index's metadata is someone else's input, and each of these
        # sizes an allocation or a loop (signatures, n-grams, probes) before any text is read.
        if not 1 <= self.minhash_perm <= MAX_MINHASH_PERM:
            raise bad(f"minhash_perm must be between 1 and {MAX_MINHASH_PERM}, got {self.minhash_perm}")
        if not 0 <= self.short_text_chars <= MAX_SHORT_TEXT_CHARS:
            raise bad(f"short_text_chars must be between 0 and {MAX_SHORT_TEXT_CHARS}, got {self.short_text_chars}")
        if not 0 <= self.probe_radius <= 64:
            raise bad(f"probe_radius must be between 0 and 64 (the widest band key), got {self.probe_radius}")
        for name in ("band_blocks", "band_key_blocks"):
            if not 0 <= getattr(self, name) <= self.bits:
                raise bad(f"{name} must be between 0 (the default) and bits ({self.bits}), got {getattr(self, name)}")
        bands, rows, perm = self.minhash_bands, self.minhash_rows, self.minhash_perm
        if bands < 1 or rows < 1 or bands * rows > perm:
            raise bad(f"the LSH bands need minhash_bands ({self.minhash_bands}) >= 1 and minhash_rows "
                      f"({self.minhash_rows}) >= 1 with minhash_bands * minhash_rows at most minhash_perm "
                      f"({self.minhash_perm}): lower minhash_bands or minhash_rows, or raise minhash_perm")
        if self.minhash_ngram < 1:
            raise bad(f"minhash_ngram must be >= 1, got {self.minhash_ngram}")
        if self.minhash_ngram > MAX_NGRAM:
            raise bad(f"minhash_ngram must be between 1 and {MAX_NGRAM}, got {self.minhash_ngram}")
        self._check_storable()
        # The band layout validates itself (pigeonhole rule) and raises ConfigError with a suggestion.
        self.band_layout()

    def _check_storable(self) -> None:
        """The config travels as JSON text in UTF-8 (an index's metadata) and must read back as itself: ``extra``
        holds JSON values only, and no string holds a lone surrogate (which UTF-8 cannot encode)."""
        if self.extra:
            try:
                same = json.loads(json.dumps(self.extra, allow_nan=False)) == self.extra
            except (TypeError, ValueError):
                same = False
            if not same:
                raise ConfigError(f"config field extra must hold JSON values only (strings, finite numbers, "
                                  f"true, false, null, lists and objects with string keys), got {_shown(self.extra)}")
        for name in _STRING_FIELDS:
            for text in _strings(getattr(self, name)):
                if not _utf8(text):
                    raise ConfigError(f"config field {name} holds a lone surrogate ({_shown(text)}), which "
                                      "cannot be stored as UTF-8; give the text it stands for")

    # -- which texts get which keys: decided here, once -------------------------------------------
    @property
    def gets_signatures(self) -> bool:
        """Whether texts get a MinHash signature and LSH band keys (every text, unless ``simhash``)."""
        return self.strategy != "simhash"

    def gets_simhash_bands(self, chars: int) -> bool:
        """Whether a text of ``chars`` normalised characters gets SimHash band keys: every text with
        ``simhash``, none with ``minhash``, with ``auto`` those of at least ``short_text_chars`` (a few words
        make an unstable SimHash whose band values collide at random)."""
        return self.strategy == "simhash" or (self.strategy == "auto" and chars >= self.short_text_chars)

    def gets_simhash_bands_many(self, chars: list[int]) -> list[bool]:
        """`gets_simhash_bands` of each of many lengths, without a call each (a page of search hits asks it of
        every hit); tests/unit/test_diversify_fast.py checks the two forms agree."""
        if self.strategy == "auto":
            short = self.short_text_chars
            return [c >= short for c in chars]
        return [self.strategy == "simhash"] * len(chars)

    def gets_terms(self, chars: int) -> bool:
        """Whether a text of ``chars`` normalised characters is segmented into terms, weighted and SimHashed:
        only where something reads the result. Under ``auto`` and ``minhash`` a text with a signature is
        judged on its n-grams alone (the matching layer's rule), so its SimHash is read only through SimHash band
        keys and its terms only through the stored vector (`stores_vector`); a text that gets neither has no
        terms: its SimHash is 0, its vector zero, its ``tokens`` 0, and it is empty exactly when it has no
        letter or digit (no n-gram), where a text with terms is empty when it has no term."""
        return self.stores_vector or self.gets_simhash_bands(chars)

    def gets_terms_many(self, chars: list[int]) -> list[bool]:
        """`gets_terms` of each of many lengths."""
        if self.stores_vector:
            return [True] * len(chars)
        return self.gets_simhash_bands_many(chars)

    @property
    def stores_vector(self) -> bool:
        """Whether documents carry the TF vector: always with strategy ``simhash`` (its rule reads cosines),
        with the other strategies only when ``vector_index`` is not ``auto`` (the vector then serves kNN
        lookups, and a rule told to judge by cosine alone)."""
        return self.strategy == "simhash" or self.vector_index != "auto"

    def require_vector(self, index: str) -> None:
        """Raise ConfigError unless documents carry the TF vector, which kNN lookups search."""
        if not self.stores_vector:
            raise ConfigError(f"kNN lookups search the TF vector, and the documents of index {index!r} carry none "
                              f"(strategy {self.strategy!r} with vector_index 'auto' stores no vector); create "
                              "the index with a kNN vector_index such as 'int8_flat'")

    @property
    def knn_index(self) -> str:
        """The Elasticsearch kNN index type of ``dedup.vector`` (``none``: not searchable by kNN); only
        meaningful when `stores_vector`."""
        return "int8_flat" if self.vector_index == "auto" else self.vector_index

    def band_layout(self) -> BandLayout:
        """The band layout of this config's SimHash band settings (built once per config)."""
        return self.derived("band_layout", lambda: BandLayout.for_settings(
            self.bits, self.hamming_k, self.band_blocks, self.band_key_blocks, self.probe_radius))

    def derived(self, name: str, make: Callable[[], Any]) -> Any:
        """A value computed from this (immutable) config once and kept on the instance: hot paths ask for
        the band layout or field names once per document, and building them is not free."""
        try:
            return self.__dict__["_derived"][name]
        except KeyError:
            cache = self.__dict__.setdefault("_derived", {})  # frozen only guards attribute assignment
            cache[name] = value = make()
            return value

    # -- serialisation -------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        if not d["extra"]:
            d.pop("extra")
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False)

    @classmethod
    @checked_args
    def from_dict(cls, data: dict[str, Any]) -> FingerprintConfig:
        """A config from JSON-like data (a file, an index's metadata): unknown fields and values of the wrong
        JSON type are refused by name, before any value is interpreted."""
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - set(fields))
        if unknown:
            raise ConfigError(f"unknown config field(s): {', '.join(unknown)}")
        hints = field_types(cls)
        data = {name: check_value(name, hints[name], value, json=True, options=fields[name].metadata.get("choices"))
                for name, value in data.items()}
        return cls(**_with_legacy_rows(data))

    @classmethod
    @checked_args
    def from_json(cls, text: str) -> FingerprintConfig:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"config is not valid JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise ConfigError("config JSON must be an object")
        return cls.from_dict(data)

    def replace(self, **changes: Any) -> FingerprintConfig:
        """A copy with some fields changed (re-validated)."""
        unknown = sorted(set(changes) - {f.name for f in dataclasses.fields(self)})
        if unknown:
            raise ConfigError(f"unknown config field(s): {', '.join(unknown)}")
        return dataclasses.replace(self, **changes)

    def identity(self) -> dict[str, Any]:
        """What must match for two fingerprints to be comparable (paths left out, digests kept), and for two
        writers to write the same fields: whether documents carry the vector (`stores_vector`) is part of it,
        how it is indexed is not."""
        d = self.to_dict()
        for name in (*_PATH_FIELDS, *_QUERY_FIELDS, *_MAPPING_FIELDS, "extra"):
            d.pop(name, None)
        d["stores_vector"] = self.stores_vector
        return d

    @checked_args
    def compatible_with(self, other: FingerprintConfig) -> bool:
        return self.identity() == other.identity()

    @checked_args
    def differences(self, other: FingerprintConfig) -> dict[str, tuple[Any, Any]]:
        """Field name -> (self's value, other's value) for each field that breaks compatibility."""
        a, b = self.identity(), other.identity()
        return {k: (a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)}


#: The fields `FingerprintConfig._check_storable` reads for lone surrogates.
_STRING_FIELDS = _strings_of(FingerprintConfig)


#: A fingerprint config is a few hundred bytes; more than this is some other file given by mistake.
CONFIG_FILE_LIMIT = 1 << 20


def read_config_file(path: str | Path) -> FingerprintConfig:
    """The FingerprintConfig JSON in ``path`` (a config, or an index's description that holds one under
    "config"); a file that is not one, whatever it holds, is one ConfigError naming the file."""
    path = Path(path)
    if not path.is_file():  # a folder, a FIFO (would block) or a device (/dev/zero never ends)
        raise ConfigError(f"config file {path} " + ("is not a regular file" if path.exists() else "does not exist"))
    try:
        with path.open("rb") as fh:
            data = fh.read(CONFIG_FILE_LIMIT + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    if len(data) > CONFIG_FILE_LIMIT:
        raise ConfigError(f"config file {path} is over {CONFIG_FILE_LIMIT >> 20} MiB: not a fingerprint config")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {path} is not JSON text (not UTF-8 at byte {exc.start})") from None
    try:
        return FingerprintConfig.from_json(_config_part(text))
    except ConfigError as exc:
        raise ConfigError(f"config file {path}: {exc}") from None


def _config_part(text: str) -> str:
    """The config in a config file's text: an index's description holds it under "config", beside the index's
    name and counts; any other text is taken as a config itself."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return text  # the config's own parser names the error
    if isinstance(data, dict) and isinstance(data.get("config"), dict) and {"index", "band_layout"} <= data.keys():
        return json.dumps(data["config"])
    return text
