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
becomes a representative itself. The comparisons run in numpy, a block of hits at a time against the
representatives of earlier blocks and itself.

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
from esdedup.es.hits import SKETCH_PARTS, first, hit_parts, parse_minhash, parse_simhash
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprint, Fingerprinter
from esdedup.fingerprint.normalize import normalize
from esdedup.match.rule import SketchColumns, exact_copies
from esdedup.match.thresholds import ThresholdOverrides, Thresholds, resolve_thresholds
from esdedup.schema import VECTOR, content_sha1

__all__ = ["MODES", "diversify"]

#: The allowed values of ``mode``.
MODES = ("drop", "demote", "group")

#: Elements of one block of the pair matrices (bounds the temporary arrays to a few MB for long pages).
_BLOCK_ELEMENTS = 1 << 20

_default_lock = threading.Lock()
_default_fingerprinters: dict[str, Fingerprinter] = {}


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
    page = _Page.read(hits, config, t, text_field)
    page.fingerprint_missing(lambda texts: _fingerprint(texts, fingerprinter, config))
    rep_of = _greedy(page, t, config)
    dup_of = {page.hit_index[p]: page.hit_index[r] for p, r in enumerate(rep_of) if r >= 0}
    dup_of.update(_copies_of_empties(page.empties))
    return _arrange(hits, dup_of, page.compared, mode)


@functools.cache
def _default_config() -> FingerprintConfig:
    """The default config, made once: a config is frozen, and keeps what it derives (band layout, masks) for
    later calls, which a new config per call would build again."""
    return FingerprintConfig()


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
    """The participants of one page (non-empty hits with something to compare), in rank order."""

    def __init__(self, config: FingerprintConfig, t: Thresholds) -> None:
        self.config = config
        self.t = t
        self.hit_index: list[int] = []
        self.sketches: list[_Sketch] = []
        self.compared: set[int] = set()  # hits that took part (participants and empty texts)
        self.todo: list[tuple[int, str]] = []  # (hit index, text) still to fingerprint
        self.empties: list[tuple[int, str | None]] = []  # (hit index, content SHA-1) of the texts without words

    @classmethod
    def read(cls, hits: Sequence[Mapping], config: FingerprintConfig, t: Thresholds, text_field: str) -> _Page:
        page = cls(config, t)
        for i, hit in enumerate(hits):
            page._add(i, hit, text_field)
        return page

    def _add(self, i: int, hit: Mapping, text_field: str) -> None:
        raw = _read(hit, text_field)
        sketch = _parse(raw, hit, self.config)
        empty = raw.get("empty")
        if empty is None and sketch.simhash is not None:
            empty = sketch.simhash == 0  # an empty text's SimHash; the flag itself was not returned
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

    def _take(self, i: int, sketch: _Sketch) -> None:
        self.compared.add(i)
        self.hit_index.append(i)
        self.sketches.append(sketch)

    def fingerprint_missing(self, fingerprint: Any) -> None:
        if not self.todo:
            return
        fps = fingerprint([text for _, text in self.todo])
        for (i, text), fp in zip(self.todo, fps, strict=True):
            if fp.empty:
                self._empty(i, None, text)
            else:
                self._take(i, _Sketch.of(fp))
        order = sorted(range(len(self.hit_index)), key=self.hit_index.__getitem__)  # back into rank order
        self.hit_index = [self.hit_index[j] for j in order]
        self.sketches = [self.sketches[j] for j in order]
        self.empties.sort(key=lambda e: e[0])
        self.todo = []


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

    def __init__(self, sketches: list[_Sketch], config: FingerprintConfig) -> None:
        self.sketches = SketchColumns.of(sketches, config, vectors=lambda: _unit_vectors([s.vector for s in sketches]))
        codes: dict[tuple[str | None, str], int] = {}
        self.cluster = np.array([-1 if s.cluster_id is None else codes.setdefault((s.index, s.cluster_id), len(codes))
                                 for s in sketches], dtype=np.int64)

    def verdicts(self, rows: np.ndarray, cols: np.ndarray, t: Thresholds) -> np.ndarray:
        """The rule's verdict for every (row, col) pair."""
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
    m = len(page.sketches)
    rep_of = [-1] * m
    if m < 2:
        return rep_of
    cols_data = _Columns(page.sketches, config)
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
