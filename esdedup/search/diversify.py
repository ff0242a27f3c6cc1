"""Diversify a page of search hits: find near-duplicates among them and drop, demote or group them.

`diversify` is pure: it takes the hit dicts of an Elasticsearch response (``resp["hits"]["hits"]``) and
returns new hit dicts; it makes no requests. Pairs are decided by the near-duplicate rule
(`esdedup.match.rule`) with the index's thresholds, the same answer `dups` and ingest labels give:

* two hits that carry MinHash signatures are judged on their estimated n-gram Jaccard / containment;
* two short hits without signatures (documents of an older esdedup) are judged on their TF cosine alone;
* any other pair is judged on SimHash Hamming distance and TF cosine, each test where both hits carry
  what it needs (a hit without a vector is judged by Hamming alone, one without a SimHash by cosine alone);
* two hits of one index (``_index``) that carry the same stored ``cluster_id`` (labelled by ingest or
  ``dups --write-clusters``) are near-duplicates whatever their measures; cluster ids of two indexes (a
  search over an alias or ``a,b``) are unrelated, so such hits are judged on their measures.

Each hit's sketch is read from what the search returned, under ``_source["dedup"]`` (or the same names as
dotted ``_source`` keys) or ``fields["dedup.<name>"]`` (the ``fields`` / ``docvalue_fields`` style, where
each value is a list): ``simhash`` (hex), ``vector``, ``empty``, ``minhash`` (base64), ``shingles``,
``chars``, ``cluster_id``. A vector that is not a list of numbers counts as absent. A hit that lacks what
the config's rule needs (no signature under a strategy that gives every text one; no SimHash under
``simhash``) and has its text (``_source[text_field]``, else ``fields[text_field]``) is fingerprinted with
the index's config. A hit with neither a sketch nor text is returned untouched, in place: never dropped,
never a duplicate, never given a ``_duplicates`` key. Texts without words (``dedup.empty`` true; when that
flag was not returned, a SimHash of 0; or a text without words) are duplicates of their exact copies only (rule
0 of the rule: the same ``content_sha1``, read from the hit or computed from its text), and the first of them in
rank order represents the others; a text without words whose SHA-1 is unknown is a duplicate of nothing.

Grouping is greedy in rank order: the first hit of a group is its representative, and each later hit is
compared with the representatives kept so far; it joins the first (highest ranked) one it matches, else it
becomes a representative itself. The comparisons run in the native core (a hit against each
representative in turn), or in numpy, a block of hits at a time against the representatives of earlier
blocks and itself.

A page is read fast (a call adds well under a millisecond to a search of 100 hits, BENCHMARKS.md). With
the native core (`esdedup.util.native`), a page whose every hit carries what the rule needs in plain
form (any of the forms above; no vector, no text without words) is read and grouped there in one call, the
rule's thresholds handed over from `esdedup.match.rule`. Any other page is read in Python: hits in the form
an esdedup index returns (a ``dedup`` dict in ``_source``, doc values beside it or none) inline, their
signatures decoded all at once, and the equal positions of every pair of signatures counted over the grid
(by the native core when it is built, else in numpy). The general reader stays the definition: any other
hit is read by it, and a page either fast way might read differently (a malformed value) is read by it
alone; tests/unit/test_diversify_fast.py checks all three give the same hits, groups and errors.

>>> from esdedup.match.thresholds import Thresholds
>>> hits = [{"_id": "a", "_source": {"dedup": {"simhash": "00000000000000ff"}}},
...         {"_id": "b", "_source": {"dedup": {"simhash": "00000000000000fe"}}},
...         {"_id": "c", "_source": {"dedup": {"simhash": "ffff0000000000ff"}}}]
>>> [h["_id"] for h in diversify(hits)]
['a', 'c']
>>> [(h["_id"], h.get("_duplicate_of")) for h in diversify(hits, mode="demote")]
[('a', None), ('c', None), ('b', 'a')]
>>> [(h["_id"], [d["_id"] for d in h["_duplicates"]]) for h in diversify(hits, mode="group")]
[('a', ['b']), ('c', [])]
"""
from __future__ import annotations

import functools
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from esdedup.errors import ConfigError, InputError
from esdedup.es.hits import (
    SKETCH_PARTS,
    b64_form,
    decode_signatures,
    first,
    hit_parts,
    parse_minhash,
    parse_simhash,
)
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprint, Fingerprinter
from esdedup.fingerprint.minhash import SIGNATURE_DTYPE
from esdedup.fingerprint.normalize import normalize
from esdedup.match.measures import SketchColumns
from esdedup.match.rule import MAX_CONTAINMENT_RATIO, MIN_CONTAINMENT_SHINGLES, exact_copies, has_signature
from esdedup.match.thresholds import ThresholdOverrides, Thresholds, resolve_thresholds
from esdedup.schema import VECTOR, content_sha1
from esdedup.search import native_page
from esdedup.util import native
from esdedup.util.fieldtypes import checked_args

__all__ = ["MODES", "diversify"]

#: The allowed values of ``mode``.
MODES = ("drop", "demote", "group")

#: Elements of one block of the pair matrices (bounds the temporary arrays to a few MB for long pages).
_BLOCK_ELEMENTS = 1 << 20

_default_lock = threading.Lock()
_default_fingerprinters: dict[str, Fingerprinter] = {}


@checked_args
def diversify(hits: Sequence[Mapping], *, mode: str = "drop", config: FingerprintConfig | None = None,
              thresholds: Thresholds | ThresholdOverrides | None = None,
              fingerprinter: Fingerprinter | None = None, text_field: str = "text") -> list[dict]:
    """Drop, demote or group the near-duplicates among search hits (see the module docstring).

    Args:
        hits: the hit dicts of a search response, in rank order. They are never modified.
        mode: ``"drop"``: the representatives (and untouched hits), in their original order.
            ``"demote"``: the same, followed by the duplicates in their original order, each a copy with
            ``"_duplicate_of"`` set to its representative's ``_id``.
            ``"group"``: the representatives only, each a copy with ``"_duplicates"``: the list of its
            duplicates (copies, in order), possibly empty; hits that were not compared (nothing to compare
            and no text) are returned as plain copies, without the key.
        config: the index's `FingerprintConfig` (`esdedup.search.paging.index_config` reads it from the index);
            default: the fingerprinter's config, else the default config.
        thresholds: what counts as a near-duplicate; default: the config's thresholds.
        fingerprinter: fingerprints hits that carry no stored sketch; it must use ``config``. Default: one
            for ``config``, created on first need and shared by later calls.
        text_field: the ``_source`` field holding a hit's text.

    Returns:
        New dicts (shallow copies of the hits, plus the keys above).

    Raises:
        ConfigError: unknown mode, thresholds out of range, a fingerprinter of another config.
        InputError: a stored SimHash that is not hex or is wider than the config's bits, a signature that
            is not base64, a count (chars, shingles) that is not a whole number, vectors of different
            lengths.
    """
    if mode not in MODES:
        raise ConfigError(f"mode must be one of {', '.join(map(repr, MODES))}, got {mode!r}")
    config = config or (fingerprinter.config if fingerprinter is not None else _default_config())
    if fingerprinter is not None and not fingerprinter.config.compatible_with(config):
        raise ConfigError("the fingerprinter's config is not the index's config: fingerprints of different "
                          f"configs are not comparable (differences: {fingerprinter.config.differences(config)})")
    t = resolve_thresholds(thresholds, config)
    rep_of_hit = _group_natively(hits, config, t)
    if rep_of_hit is not None:
        return _arrange(hits, {i: r for i, r in enumerate(rep_of_hit) if r >= 0}, set(range(len(hits))), mode)
    page = _Page.read_fast(hits, config, t, text_field) or _Page.read(hits, config, t, text_field)
    page.fingerprint_missing(lambda texts: _fingerprint(texts, fingerprinter, config))
    rep_of = _greedy(page, t, config)
    at = page.hit_index
    dup_of = {at[p]: at[r] for p, r in enumerate(rep_of) if r >= 0}
    dup_of.update(_copies_of_empties(page.empties))
    return _arrange(hits, dup_of, page.compared, mode)


@functools.cache
def _default_config() -> FingerprintConfig:
    """The default config, made once: a config is frozen, and keeps what it derives (band layout, masks) for
    later calls, which a new config per call would build again."""
    return FingerprintConfig()


def _empty_by_simhash(simhash: int, signed: bool) -> bool:
    """Whether a hit that does not say whether its text is empty is so: SimHash 0 and no signature (a text
    that is not segmented has SimHash 0 too, and its n-grams' signature: `FingerprintConfig.gets_terms`)."""
    return simhash == 0 and not signed


def _group_natively(hits: Sequence[Mapping], config: FingerprintConfig, t: Thresholds) -> list[int] | None:
    """The representative of each hit (its index, or -1 for a representative), read and grouped by the
    native core (`esdedup.search.native_page.diversify_page`) when every hit is a participant of the plain
    form it reads (each carries what the config's rule needs, none a vector or a text without words) and the
    native core is in use; None otherwise (the page is then read in Python). The rule is handed over from
    `esdedup.match.rule`: the thresholds and the bounds of a trusted containment estimate."""
    if not native.enabled() or np.dtype(SIGNATURE_DTYPE).itemsize != 2:
        return None
    if config.gets_signatures and t.jaccard is None and t.containment is None and t.hamming_k is not None:
        # The core reads the SimHash of texts with signatures then, and a short one has none (SimHash 0:
        # `FingerprintConfig.gets_terms`), which the columns of the Python reader know.
        return None
    perm = config.minhash_perm
    width, _ = b64_form(perm)
    return native_page.diversify_page(hits if type(hits) is list else list(hits), perm=perm, width=width,
                                 nbytes=2 * perm, bits=config.bits, gets_signatures=config.gets_signatures,
                                 jaccard=t.jaccard, containment=t.containment, hamming_k=t.hamming_k,
                                 cosine=t.cosine is not None, min_shingles=float(MIN_CONTAINMENT_SHINGLES),
                                 max_ratio=float(MAX_CONTAINMENT_RATIO))


def _arrange(hits: Sequence[Mapping], dup_of: dict[int, int], compared: set[int], mode: str) -> list[dict]:
    """The output of each mode, from hit index -> its representative's hit index."""
    kept = [dict(h) for i, h in enumerate(hits) if i not in dup_of]
    if mode == "drop":
        return kept
    if mode == "demote":
        for i in sorted(dup_of):
            d = dict(hits[i])
            d["_duplicate_of"] = hits[dup_of[i]].get("_id")
            kept.append(d)
        return kept
    members: dict[int, list[dict]] = {}
    for i in sorted(dup_of):
        members.setdefault(dup_of[i], []).append(dict(hits[i]))
    out = []
    for i, h in enumerate(hits):
        if i in dup_of:
            continue
        d = dict(h)
        if i in compared:
            d["_duplicates"] = members.get(i, [])
        out.append(d)
    return out


# -- reading hits ----------------------------------------------------------------------------------
@dataclass
class _Sketch:
    """What one hit carries (None where it does not)."""

    simhash: int | None = None
    vector: Any = None
    minhash: np.ndarray | None = None
    shingles: int = 0
    chars: int | None = None
    cluster_id: str | None = None
    #: The hit's ``_index``: its cluster id means something within that index only.
    index: str | None = None

    @classmethod
    def of(cls, fp: Fingerprint) -> _Sketch:
        return cls(fp.simhash, fp.vector, fp.minhash if fp.shingles else None, fp.shingles, fp.chars)


class _Page:
    """The participants of one page (non-empty hits with something to compare), in rank order: for each, its
    hit's index and what it carries, a list a part (no object per hit)."""

    def __init__(self, config: FingerprintConfig, t: Thresholds) -> None:
        self.config = config
        self.t = t
        # One tuple a participant, in the order of `_PARTS`: its hit's index, SimHash, vector, signature (an
        # array, or its row among the `decoded` signatures), n-gram count, length, and (index, cluster id),
        # as cluster ids mean something within one index only. `columns` turns them into lists.
        self.parts: list[tuple] = []
        self.decoded: np.ndarray | None = None  # the signatures `read_fast` decoded, a row each
        self.compared: set[int] = set()  # hits that took part (participants and empty texts)
        self.todo: list[tuple[int, str]] = []  # (hit index, text) still to fingerprint
        self.empties: list[tuple[int, str | None]] = []  # (hit index, content SHA-1) of the texts without words

    @classmethod
    def read(cls, hits: Sequence[Mapping], config: FingerprintConfig, t: Thresholds, text_field: str) -> _Page:
        """The page, each hit read by the general reader (`_read`, `_parse`): the definition of reading."""
        page = cls(config, t)
        for i, hit in enumerate(hits):
            page._add(i, hit, text_field)
        return page

    @classmethod
    def read_fast(cls, hits: Sequence[Mapping], config: FingerprintConfig, t: Thresholds,
                  text_field: str) -> _Page | None:
        """The page `read` gives, read faster: a hit in the usual form (a ``_source`` dict with a ``dedup``
        dict, and doc values in a ``fields`` dict or none) has its parts read inline (with doc values, the
        general reader's `hit_parts` finds them), and the signatures of all hits are decoded at once
        (`esdedup.es.hits.decode_signatures`); any other hit goes through `read`'s reader. None where the result could differ from
        `read`'s: a signature string only the general reader can judge, or any error (`read` then raises
        the error of the first bad hit, as it would have)."""
        page = cls(config, t)
        perm, bits, gets_signatures = config.minhash_perm, config.bits, config.gets_signatures
        width, padding = b64_form(perm)
        encoded: list[str] = []  # signature strings of the usual form, decoded together at the end
        take, took, later = page.parts.append, page.compared.add, encoded.append  # bound once: a call a hit each
        try:
            for i, hit in enumerate(hits):
                src: Any = hit.get("_source")
                d = src.get("dedup") if type(src) is dict else None
                fields = hit.get("fields")
                if type(d) is not dict or (fields is not None and type(fields) is not dict):
                    page._add(i, hit, text_field)
                    continue
                if fields is None:
                    get = d.get
                else:  # doc values beside _source (a plain search asking for some): the general reader's parts
                    get = hit_parts(hit, SKETCH_PARTS).get
                    if src.get(text_field) is None and text_field in fields:
                        src = {**src, text_field: first(fields[text_field])}  # the text as `_read` finds it
                mh = get("minhash")
                if mh is None:
                    sig: np.ndarray | int | None = None
                elif type(mh) is str and len(mh) == width and mh.endswith(padding):
                    sig = len(encoded)
                    later(mh)
                else:
                    sig = parse_minhash(mh, hit, perm)
                shingles = get("shingles") or 0
                if type(shingles) is not int:
                    shingles = _parse_count(shingles, "shingles", hit)
                sh = get("simhash")
                if type(sh) is str:
                    value = int(sh, 16)  # parse_simhash's reading; any error goes to the general reader
                    if value < 0 or value >> bits:
                        return None
                    simhash: int | None = value
                else:
                    simhash = parse_simhash(sh, bits, hit) if sh is not None else None
                chars = get("chars")
                if chars is not None and type(chars) is not int:
                    chars = _parse_count(chars, "chars", hit)
                if shingles <= 0:
                    sig = None
                empty = get("empty")
                if empty is not None and empty is not True and empty is not False:
                    empty = isinstance(empty, str) and empty.lower() == "true"
                elif empty is None and simhash is not None:
                    empty = _empty_by_simhash(simhash, sig is not None)
                if empty:
                    page._empty(i, get("content_sha1"), src.get(text_field))
                    continue
                vec = get("vector")
                if vec is not None and (not isinstance(vec, (list, tuple, np.ndarray)) or len(vec) == 0):
                    vec = None
                cluster = get("cluster_id")
                key = None if cluster is None else (None if (x := hit.get("_index")) is None else str(x), str(cluster))
                if (sig is not None) if gets_signatures else (simhash is not None):
                    took(i)
                    take((i, simhash, vec, sig, shingles, chars, key))
                    continue
                text = src.get(text_field)
                if isinstance(text, str) and text.strip():
                    page.todo.append((i, text))
                elif isinstance(text, str):
                    page._empty(i, None, text)  # a blank text is an empty text
                elif (sig is not None or key is not None or (t.hamming_k is not None and simhash is not None)
                      or (t.cosine is not None and vec is not None)):
                    page._take_parts(i, simhash, vec, sig, shingles, chars, key)
        except (InputError, ValueError):
            return None
        page.decoded = decode_signatures(encoded, perm)
        return page if page.decoded is not None else None

    def _add(self, i: int, hit: Mapping, text_field: str) -> None:
        raw = _read(hit, text_field)
        sketch = _parse(raw, hit, self.config)
        empty = raw.get("empty")
        if empty is None and sketch.simhash is not None:
            empty = _empty_by_simhash(sketch.simhash, has_signature(sketch))  # the flag itself was not returned
        if empty:
            self._empty(i, raw.get("content_sha1"), raw.get("text"))
        elif self._complete(sketch):
            self._take(i, sketch)
        elif isinstance(raw.get("text"), str) and raw["text"].strip():
            self.todo.append((i, raw["text"]))
        elif isinstance(raw.get("text"), str):
            self._empty(i, None, raw["text"])  # a blank text is an empty text
        elif self._usable(sketch):
            self._take(i, sketch)

    def _empty(self, i: int, sha1: Any, text: Any) -> None:
        """Hit ``i`` holds a text without words: its content SHA-1 as stored, else computed from its text."""
        self.compared.add(i)
        if not isinstance(sha1, str) and isinstance(text, str):
            sha1 = content_sha1(normalize(text, t2s=self.config.t2s))
        self.empties.append((i, sha1 if isinstance(sha1, str) else None))

    def _complete(self, s: _Sketch) -> bool:
        """Whether a hit carries what the config's rule needs (else its text is fingerprinted)."""
        if self.config.gets_signatures:
            return s.minhash is not None
        return s.simhash is not None

    def _usable(self, s: _Sketch) -> bool:
        """Whether a hit without text carries something one of the tests in force can compare."""
        t = self.t
        return (s.minhash is not None or s.cluster_id is not None or (t.hamming_k is not None and s.simhash is not None)
                or (t.cosine is not None and s.vector is not None))

    def _take(self, i: int, s: _Sketch) -> None:
        self._take_parts(i, s.simhash, s.vector, s.minhash, s.shingles, s.chars,
                         None if s.cluster_id is None else (s.index, s.cluster_id))

    def _take_parts(self, i: int, simhash: int | None, vector: Any, minhash: np.ndarray | int | None, shingles: int,
                    chars: int | None, cluster: tuple[str | None, str] | None) -> None:
        self.compared.add(i)
        self.parts.append((i, simhash, vector, minhash, shingles, chars, cluster))

    @property
    def hit_index(self) -> list[int]:
        return [p[0] for p in self.parts]

    def columns(self) -> dict[str, list]:
        """The participants' parts as lists, by the names of `_PARTS`."""
        lists = [list(column) for column in zip(*self.parts, strict=True)] if self.parts else [[] for _ in _PARTS]
        return dict(zip(_PARTS, lists, strict=True))

    def fingerprint_missing(self, fingerprint: Any) -> None:
        if not self.todo:
            return
        fps = fingerprint([text for _, text in self.todo])
        for (i, text), fp in zip(self.todo, fps, strict=True):
            if fp.empty:
                self._empty(i, None, text)
            else:
                self._take(i, _Sketch.of(fp))
        self.parts.sort(key=lambda p: p[0])  # back into rank order
        self.empties.sort(key=lambda e: e[0])
        self.todo = []

    def signatures(self, cols: dict[str, list]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The participants' signatures (``cols``: `columns`) as an (n, perm) uint32 array (zeros where not of
        the config's length), whether each carries one (`esdedup.match.rule.has_signature`), and whether of
        that length."""
        n, perm = len(self.parts), self.config.minhash_perm
        minhash = cols["minhash"]
        # `read_fast` kept rows of `decoded` only for signatures it read of their hit's n-grams (> 0) and length.
        if n and self.decoded is not None and all(type(m) is int for m in minhash):
            every = np.ones(n, dtype=bool)  # the usual page: every participant's signature read so
            return self.decoded[minhash], every, every.copy()
        signed = np.array([m is not None and c > 0 for m, c in zip(minhash, cols["shingles"], strict=True)],
                          dtype=bool).reshape(n)
        full = signed.copy()
        sigs = np.zeros((n, perm), dtype=np.uint32)
        at = [p for p, m in enumerate(minhash) if type(m) is int]
        if at:
            sigs[at] = self.decoded[[minhash[p] for p in at]]  # type: ignore[index]
        for p in np.flatnonzero(signed).tolist():
            sig = minhash[p]
            if type(sig) is int:
                continue
            if len(sig) == perm:
                sigs[p] = sig
            else:
                full[p] = False
        return sigs, signed, full


#: The names of a participant's parts (`_Page.parts`).
_PARTS = ("hit_index", "simhash", "vector", "minhash", "shingles", "chars", "cluster")

@dataclass(frozen=True)
class _Empty:
    """A hit holding a text without words, as rule 0 (`exact_copies`) reads it."""

    hit: int
    content_sha1: str | None
    empty: bool = True

    @property
    def id(self) -> str:
        return str(self.hit)


def _copies_of_empties(empties: list[tuple[int, str | None]]) -> dict[int, int]:
    """Rule 0 among the page's texts without words, in rank order: each exact copy -> the hit of the first."""
    out: dict[int, int] = {}
    reps: list[_Empty] = []
    for i, sha1 in empties:
        copies = exact_copies(True, sha1, reps)
        if copies:
            out[i] = reps[copies[0]].hit
        else:
            reps.append(_Empty(i, sha1))
    return out


def _read(hit: Mapping, text_field: str) -> dict[str, Any]:
    """The raw dedup values (`esdedup.es.hits.hit_parts`) and the text of a hit, from ``_source`` first, then
    ``fields``."""
    out = hit_parts(hit, SKETCH_PARTS)
    src = hit.get("_source")
    out["text"] = src.get(text_field) if isinstance(src, Mapping) else None
    fields = hit.get("fields")
    if out["text"] is None and isinstance(fields, Mapping):
        out["text"] = first(fields.get(text_field))
    return out


def _parse(raw: dict[str, Any], hit: Mapping, config: FingerprintConfig) -> _Sketch:
    vec = raw.get("vector")
    if vec is not None and (not isinstance(vec, (list, tuple, np.ndarray)) or len(vec) == 0):
        vec = None  # empty, or a form this reader does not decode
    empty = raw.get("empty")
    if empty is not None and empty is not True and empty is not False:
        raw["empty"] = isinstance(empty, str) and empty.lower() == "true"
    sh = raw.get("simhash")
    minhash = parse_minhash(raw.get("minhash"), hit, config.minhash_perm)
    shingles = _parse_count(raw.get("shingles") or 0, "shingles", hit)
    chars = raw.get("chars")
    cluster = raw.get("cluster_id")
    index = hit.get("_index")
    return _Sketch(parse_simhash(sh, config.bits, hit) if sh is not None else None, vec,
                   minhash if shingles > 0 else None, shingles,
                   _parse_count(chars, "chars", hit) if chars is not None else None,
                   str(cluster) if cluster is not None else None, str(index) if index is not None else None)


def _parse_count(raw: Any, name: str, hit: Mapping) -> int:
    """A stored count (``dedup.chars``, ``dedup.shingles``): a whole number, or the digits of one."""
    value: int | None = None
    if isinstance(raw, int) and not isinstance(raw, bool):
        value = raw
    elif isinstance(raw, float) and raw.is_integer():
        value = int(raw)
    elif isinstance(raw, str) and raw.strip().lstrip("+-").isdigit():
        value = int(raw)
    if value is None:
        raise InputError(f"hit {hit.get('_id')!r}: dedup.{name} {raw!r} is not a whole number")
    return value


def _fingerprint(texts: list[str], fingerprinter: Fingerprinter | None, config: FingerprintConfig) -> list:
    if fingerprinter is not None:
        return fingerprinter.fingerprint_many(texts)
    key = config.to_json()
    with _default_lock:  # a Fingerprinter's term table is not thread-safe; the default one is shared
        fp = _default_fingerprinters.get(key)
        if fp is None:
            fp = _default_fingerprinters[key] = Fingerprinter(config)
        return fp.fingerprint_many(texts)


# -- the comparisons -------------------------------------------------------------------------------
class _Columns:
    """The participants' sketches as `SketchColumns` (which measure the pairs), and what is diversify's own:
    their cluster ids, and their vectors read from JSON lists only when a cosine is first wanted."""

    def __init__(self, page: _Page) -> None:
        cols = page.columns()
        sigs, signed, full = page.signatures(cols)
        vectors = cols["vector"]
        self.sketches = SketchColumns.from_parts(
            page.config, simhash=cols["simhash"], sigs=sigs, signed=signed, full=full, shingles=cols["shingles"],
            chars=cols["chars"], has_vector=np.fromiter((v is not None for v in vectors), dtype=bool, count=len(vectors)),
            vectors=lambda: _unit_vectors(vectors))
        codes: dict[tuple[str | None, str], int] = {}
        self.cluster = np.array([-1 if c is None else codes.setdefault(c, len(codes)) for c in cols["cluster"]],
                                dtype=np.int64)

    def verdicts(self, rows: np.ndarray, cols: np.ndarray, t: Thresholds) -> np.ndarray:
        """The rule's verdict for every (row, col) pair."""
        same: np.ndarray | bool = False  # most pages carry no cluster id: no pair to compare
        if (self.cluster >= 0).any():
            same = (self.cluster[rows, None] == self.cluster[None, cols]) & (self.cluster[rows, None] >= 0)
        return self.sketches.measure_grid(rows, cols, t).decide(t, same_cluster=same)


def _unit_vectors(raw: list[Any]) -> np.ndarray:
    """The hits' vectors from their JSON lists, as unit float32 rows (zeros where a hit has none)."""
    idx = [i for i, v in enumerate(raw) if v is not None]
    try:
        m = np.array([raw[i] for i in idx], dtype=np.float32)
    except ValueError:
        m = None
    if m is None or m.ndim != 2:
        lengths = sorted({len(raw[i]) for i in idx})
        raise InputError(f"{VECTOR}: the hits' vectors are not numeric lists of one length "
                         f"(lengths {lengths}); fingerprints of different configs are not comparable")
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    unit = np.zeros((len(raw), m.shape[1] if idx else 1), dtype=np.float32)
    unit[idx] = np.divide(m, norms, out=np.zeros_like(m), where=norms > 0)
    return unit


def _greedy(page: _Page, t: Thresholds, config: FingerprintConfig) -> list[int]:
    """For each participant in rank order, the position of the representative it duplicates, or -1."""
    m = len(page.parts)
    rep_of = [-1] * m
    if m < 2:
        return rep_of
    cols_data = _Columns(page)
    reps = np.zeros(0, dtype=np.int64)  # representatives of the blocks done so far (positions)
    block = max(64, _BLOCK_ELEMENTS // m)
    for a in range(0, m, block):
        b = min(m, a + block)
        rows = np.arange(a, b)
        cols = np.concatenate((reps, rows))  # earlier representatives, then the block itself
        # Earlier representatives always count; within the block only columns before the row do.
        dup = cols_data.verdicts(rows, cols, t)
        dup[:, len(reps):] &= np.tri(b - a, k=-1, dtype=bool)
        new = _settle_block(dup, reps, a, rep_of)
        reps = np.concatenate((reps, np.array(new, dtype=np.int64)))
    return rep_of


def _settle_block(dup: np.ndarray, reps: np.ndarray, a: int, rep_of: list[int]) -> list[int]:
    """Assign the rows of one block (starting at position ``a``) to representatives; the new ones."""
    nrep = len(reps)
    is_dup = [False] * dup.shape[0]
    if nrep:
        prev = dup[:, :nrep]
        first = prev.argmax(axis=1)
        for r in np.flatnonzero(prev.any(axis=1)).tolist():
            is_dup[r] = True
            rep_of[a + r] = int(reps[first[r]])
    # Within the block, in rank order: a row joins the first earlier row that is a representative.
    # Pairs come sorted by row, and a row's own status is settled before any later row asks about it.
    pr, pc = np.nonzero(dup[:, nrep:])
    for r, c in zip(pr.tolist(), pc.tolist(), strict=True):
        if not is_dup[r] and not is_dup[c]:
            is_dup[r] = True
            rep_of[a + r] = a + c
    return [a + r for r in range(dup.shape[0]) if not is_dup[r]]
