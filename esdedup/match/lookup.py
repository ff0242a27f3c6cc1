"""Near-duplicates of given texts through any `StoreCore`: which keys to probe, and exact verification.

Candidate generation is the store's job (band-key lookups, exact set semantics, so both stores return the
same candidates); deciding which candidates are near-duplicates is the rule's (`esdedup.match.rule`), client-side,
once, for both stores. All-pairs search lives in `esdedup.match.pairs`, clusters in `esdedup.match.clusters`.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from esdedup.errors import NeedsElasticsearch
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprint
from esdedup.match.measures import Measures, hamming_of, measure_pairs, measured
from esdedup.match.rule import EXACT_COPY, Sketch, decided_by, decided_by_many, exact_copies
from esdedup.match.thresholds import ThresholdOverrides, Thresholds, lookup_thresholds, resolve_thresholds
from esdedup.schema import SHINGLES, band_fields, dedup_source, lsh_bands
from esdedup.store.base import Probe, StoreCore, StoredDoc, elasticsearch_backed
from esdedup.util.fieldtypes import checked_args

#: Candidates a lookup asks the store for, per fingerprint, by default.
DEFAULT_LIMIT = 1000


@dataclass(frozen=True)
class Match:
    """A verified near-duplicate: the other document, and how near it is. ``jaccard`` and ``containment``
    are the MinHash estimates that decide pairs of texts with signatures (None otherwise); ``cosine`` is
    None when the index stores no vectors; ``decided_by`` names the measure that decided
    (`esdedup.match.rule.decided_by`)."""

    id: str
    hamming: int | None
    cosine: float | None
    shared_bands: tuple[str, ...] = ()
    jaccard: float | None = None
    containment: float | None = None
    #: The other document holds the same normalised text (equal content SHA-1).
    exact: bool = False
    decided_by: str = ""

    def rank(self) -> tuple[Any, ...]:
        """Nearest first: exact copies, then by the measures that decide the pair (the n-gram estimates where
        both texts carry signatures, else Hamming and cosine), then by id."""
        cosine = self.cosine or 0.0
        hamming = self.hamming if self.hamming is not None else 1 << 20  # no SimHash: after any distance
        if self.jaccard is not None:
            return (not self.exact, 0, -self.jaccard, -(self.containment or 0.0), hamming, -cosine, self.id)
        return (not self.exact, 1, 0.0, 0.0, hamming, -cosine, self.id)


class Lookup(list[Match]):
    """The verified matches of one lookup (a list), and ``truncated``: whether the store held more
    candidates than were fetched (then a near-duplicate may be among those not fetched)."""

    def __init__(self, matches: Iterable[Match] = (), truncated: bool = False) -> None:
        super().__init__(matches)
        self.truncated = truncated

    @property
    def matches(self) -> list[Match]:
        return list(self)


def probe_for(fp: Fingerprint, config: FingerprintConfig) -> dict[str, Sequence[str]]:
    """The band keys to look up for one fingerprint, by band: the SimHash band fields, plus the LSH bands
    ``lsh_<i>`` if any (whose keys all live in one field, `esdedup.schema.key_field`)."""
    if fp.empty:
        return {}
    probe: dict[str, Sequence[str]] = {}
    # One-key tuples rather than lists: a batch makes tens of thousands, and tuples of strings drop out of
    # the garbage collector's view.
    if fp.bands:  # a text that only the n-gram path serves has no band keys and probes none
        layout = config.band_layout()
        # Without probing, the keys to look up are the fingerprint's own band keys.
        keys = [(k,) for k in fp.bands] if layout.radius == 0 else layout.probe_keys(fp.simhash)
        probe.update(zip(band_fields(config), keys, strict=True))
    if fp.lsh:
        probe.update(zip(lsh_bands(config), [(k,) for k in fp.lsh], strict=False))
    return probe


def lookup_keys(fp: Fingerprint, config: FingerprintConfig) -> list[str]:
    """Every band key one fingerprint looks up, as one list (`probe_for` without the field names)."""
    return [k for keys in probe_for(fp, config).values() for k in keys]


def verify(fp: Sketch, candidates: Sequence[StoredDoc], config: FingerprintConfig, t: Thresholds,
           *, exclude: str | None = None, sha1: str | None = None) -> list[Match]:
    """The candidates that are near-duplicates of one text by the rule, nearest first (`Match.rank`; with
    ``sha1``, the content SHA-1 of the text, its exact copies first). A text without words: its exact copies
    among the candidates (rule 0, `exact_copies`), by id. `verify_many` of one text."""
    return verify_many([fp], [candidates], config, t, exclude=[exclude], sha1s=[sha1])[0]


#: (text, candidate) pairs `verify_many` measures in one call at most.
VERIFY_BATCH = 20_000


def verify_many(fps: Sequence[Sketch], candidates: Sequence[Sequence[StoredDoc]], config: FingerprintConfig,
                t: Thresholds, *, exclude: Sequence[str | None], sha1s: Sequence[str | None]) -> list[list[Match]]:
    """`verify` of each text against its candidates (``exclude``: a document id to leave out, ``sha1s``: the
    texts' content SHA-1s, or None), the (text, candidate) pairs of many texts measured together
    (`esdedup.match.measures.measure_pairs`, the numbers `measure` gives each text) and judged by one call of the
    rule (`esdedup.match.rule.decide`)."""
    out: list[list[Match]] = [[] for _ in fps]
    for i, (fp, sha1, cands) in enumerate(zip(fps, sha1s, candidates, strict=True)):
        if fp.empty:
            copies = sorted((cands[j] for j in exact_copies(True, sha1, cands, exclude=exclude[i])),
                            key=lambda d: d.id)
            out[i] = [Match(d.id, 0, None, exact=True, decided_by=EXACT_COPY) for d in copies]
    for m, keep, owner, position in _decided_pairs(fps, candidates, config, t, exclude):
        if not keep:
            continue
        cosines = m.cosine[keep].tolist() if config.stores_vector else [None] * len(keep)
        jaccards = [measured(x) for x in m.jaccard[keep]]
        containments = [measured(x) for x in m.containment[keep]]
        names = decided_by_many(t, hamming=m.hamming[keep].astype(np.float64),
                                cosine=m.cosine[keep] if config.stores_vector else np.nan,
                                jaccard=m.jaccard[keep], legacy_short=m.legacy_short[keep])
        for x, hamming, cosine, jaccard, containment, name in zip(keep, m.hamming[keep], cosines,
                                                                    jaccards, containments, names, strict=True):
            doc, sha1 = candidates[owner[x]][position[x]], sha1s[owner[x]]
            out[owner[x]].append(Match(doc.id, hamming_of(hamming), cosine, jaccard=jaccard, containment=containment,
                                       exact=sha1 is not None and doc.content_sha1 == sha1, decided_by=name))
    for matches in out:
        matches.sort(key=Match.rank)
    return out


def near_positions(fps: Sequence[Sketch], candidates: Sequence[Sequence[StoredDoc]], config: FingerprintConfig,
                   t: Thresholds, *, exclude: Sequence[str | None], sha1s: Sequence[str | None]) -> list[list[int]]:
    """Which of each text's candidates are its near-duplicates by the rule: their positions in its candidate
    list, in order. The decisions of `verify_many`, without the measures and ranks it shows (labelling
    joins every near-duplicate)."""
    out: list[list[int]] = [exact_copies(True, sha1, cands, exclude=skip) if fp.empty else []
                            for fp, cands, skip, sha1 in zip(fps, candidates, exclude, sha1s, strict=True)]
    for _, keep, owner, position in _decided_pairs(fps, candidates, config, t, exclude):
        for x in keep:
            out[owner[x]].append(position[x])
    for found in out:
        found.sort()
    return out


#: One chunk of `_decided_pairs`: the measures, the pairs kept, each pair's text number and candidate position.
_Decided = tuple[Measures, list[int], list[int], list[int]]


def _decided_pairs(fps: Sequence[Sketch], candidates: Sequence[Sequence[StoredDoc]], config: FingerprintConfig,
                   t: Thresholds, exclude: Sequence[str | None]) -> Iterator[_Decided]:
    """The (text, candidate) pairs to measure (a text with words against each candidate with words but the
    one ``exclude`` names), measured and judged `VERIFY_BATCH` pairs at a time: for each chunk its measures,
    the pairs kept, and per pair its text's number and the candidate's position in the text's list. A
    candidate several texts share (a batch's near-duplicates share theirs) is one row of the chunk."""
    rows: list[Sketch] = []
    row_of: dict[int, int] = {}  # id() of a candidate -> its row (every one is alive while the chunk is)
    left: list[int] = []
    right: list[int] = []
    owner: list[int] = []
    position: list[int] = []
    for i, (fp, cands, skip) in enumerate(zip(fps, candidates, exclude, strict=True)):
        if fp.empty:
            continue
        picked = [(j, d) for j, d in enumerate(cands) if not d.empty and d.id != skip]
        if not picked:
            continue
        at = len(rows)
        rows.append(fp)
        for j, d in picked:
            row = row_of.setdefault(id(d), len(rows))
            if row == len(rows):
                rows.append(d)
            left.append(at)
            right.append(row)
            owner.append(i)
            position.append(j)
        if len(left) >= VERIFY_BATCH:
            yield (*_judged(rows, left, right, config, t), owner, position)
            rows, row_of, left, right, owner, position = [], {}, [], [], [], []
    if left:
        yield (*_judged(rows, left, right, config, t), owner, position)


def _judged(rows: list[Sketch], left: list[int], right: list[int], config: FingerprintConfig,
            t: Thresholds) -> tuple[Measures, list[int]]:
    """The measures of the pairs (``rows[left[x]]``, ``rows[right[x]]``), and the pairs the rule keeps."""
    m = measure_pairs(rows, np.array(left, dtype=np.int64), np.array(right, dtype=np.int64), config, t)
    return m, np.flatnonzero(m.decide(t)).tolist()


@checked_args
def similar(store: StoreCore, fps: Sequence[Fingerprint], *, thresholds: Thresholds | ThresholdOverrides | None = None,
            top: int = 10, exclude: Sequence[str | None] | None = None, limit: int = DEFAULT_LIMIT,
            sha1s: Sequence[str | None] | None = None) -> list[Lookup]:
    """Near-duplicates of each fingerprint among the stored documents (one batched lookup), verified by the
    rule; ``thresholds`` default to the index's. Every candidate fetched is measured and ranked before the
    ``top`` are kept (`verify`; ``sha1s``, the texts' content SHA-1s, put exact copies first, and find them
    where the band lookup cut the candidates: `with_exact_copies`). Each answer says whether the store's band
    candidates were cut at ``limit`` (`Lookup.truncated`: a near-duplicate that is not an exact copy may be
    among those not fetched). A text without words has no keys: its candidates are the stored texts of its
    content SHA-1 (`Store.copies`; none without ``sha1s``)."""
    config = store.config
    t = lookup_thresholds(thresholds, config)
    probes: list[Probe] = [probe_for(fp, config) for fp in fps]
    found = store.lookup(probes, limit=limit)
    cut = [len(cands) >= limit for cands in found]
    excl = list(exclude) if exclude is not None else [None] * len(fps)
    shas = list(sha1s) if sha1s is not None else [None] * len(fps)
    found = with_exact_copies(store, fps, shas, found, limit=limit)
    verified = verify_many(fps, found, config, t, exclude=excl, sha1s=shas)
    return [Lookup(matches[:top], truncated=truncated) for matches, truncated in zip(verified, cut, strict=True)]


def with_exact_copies(store: StoreCore, fps: Sequence[Fingerprint], sha1s: Sequence[str | None],
                      found: list[list[StoredDoc]], *, limit: int) -> list[list[StoredDoc]]:
    """``found`` (a band lookup's candidates, one list a fingerprint, cut at ``limit`` by the lookup) with the
    exact copies of each text of known content SHA-1 (not None, not ""), looked up by that SHA-1
    (`Store.copies`) wherever the keys cannot be trusted to have brought them all: a text without words (no
    keys: its copies are its candidates, of which the rule takes them all, rule 0 of `esdedup.match.rule`), a
    text without keys of any band, and a text whose candidates reached ``limit`` (the lookup kept those
    sharing the most keys, and among many near-identical texts, which share every key as copies do, it cut
    where it did). The copies come first; one more than ``limit`` of them is asked for (a stored text's
    own copy is among them)."""
    need = [i for i, (fp, sha, cands) in enumerate(zip(fps, sha1s, found, strict=True))
            if sha and (fp.empty or len(cands) >= limit or not (fp.bands or fp.lsh))]
    if not need:
        return found
    out = list(found)
    for i, copies in zip(need, store.copies([sha1s[i] for i in need], limit=limit + 1),  # type: ignore[misc]
                         strict=True):
        if fps[i].empty:
            out[i] = copies
        else:
            ids = {c.id for c in copies}
            out[i] = [*copies, *(c for c in found[i] if c.id not in ids)]
    return out


def similar_knn(store: StoreCore, fp: Fingerprint, *, k: int = 10,
                thresholds: Thresholds | ThresholdOverrides | None = None, exclude: str | None = None,
                sha1: str | None = None) -> list[Match]:
    """The kNN path: nearest vectors first, then the rule's cosine test alone (a vector search knows
    nothing of Hamming distances or signatures). With ``sha1``, the text's content SHA-1, its exact copies
    come first, looked up by it (`Store.copies`): a crowd of near-identical vectors may hide them from an
    approximate nearest-neighbour search.

    Raises:
        ConfigError: the store's documents carry no vector (`FingerprintConfig.stores_vector`).
    """
    store.config.require_vector(store.name)
    t = resolve_thresholds(thresholds, store.config)
    # With the n-gram tests off, the rule lets the cosine decide every pair; with the cosine off too,
    # every nearest vector counts (a threshold below any clipped cosine).
    cosine_only = Thresholds(hamming_k=None, cosine=t.cosine if t.cosine is not None else 1e-9)
    if fp.empty:
        return []
    nearest = store.knn(fp.vector, k + (1 if exclude else 0))
    copies = store.copies([sha1], limit=k + 1)[0] if sha1 else []
    ids = {c.id for c in copies}
    return verify(fp, [*copies, *(c for c in nearest if c.id not in ids)], store.config, cosine_only,
                  exclude=exclude, sha1=sha1)[:k]


def similar_on_node(store: StoreCore, fp: Fingerprint, *, thresholds: Thresholds | ThresholdOverrides | None = None,
                    top: int = 10, exclude: str | None = None, sha1: str | None = None) -> list[Match]:
    """`similar` for one fingerprint as one request that returns only verified near-duplicates: the node
    applies the rule to the band lookup's candidates (the esdedup plugin's script language, bit for bit the
    client's `verify`). Needs an Elasticsearch store whose nodes have the plugin. With ``sha1``, the text's
    content SHA-1, its exact copies come first, looked up by it (`Store.copies`) and verified here: the
    node ranks a crowd of near-identical texts in its own order. The matches come nearest first as `similar`
    ranks them (`Match.rank`); when the node holds more than ``top`` near-duplicates, which ones it sends
    follows its own score (Hamming, then cosine), where `similar` ranks pairs with signatures by Jaccard first.

    Raises:
        ConfigError: the store is not Elasticsearch.
        StoreError: the nodes have no esdedup plugin, or the request failed.
    """
    if not elasticsearch_backed(store):
        raise NeedsElasticsearch("node-side verification runs on Elasticsearch (the esdedup plugin); the embedded "
                          "store verifies in esdedup itself")
    config = store.config
    t = lookup_thresholds(thresholds, config)
    if fp.empty:
        return []
    out = verify(fp, store.copies([sha1], limit=top + 1)[0], config, t, exclude=exclude, sha1=sha1) if sha1 else []
    known = {m.id for m in out}
    hits = store.verified_on_node(probe_for(fp, config), _node_params(fp, config, t),
                                  size=top + len(known) + (1 if exclude else 0))
    signed = fp.minhash is not None and fp.shingles > 0
    for h in hits:
        if h["_id"] == exclude or h["_id"] in known:
            continue
        f = h.get("fields", {})
        both_signed = signed and int((f.get(SHINGLES) or [0])[0]) > 0
        cosine = float(f["cosine"][0]) if config.stores_vector else None
        jaccard = float(f["jaccard"][0]) if both_signed else None
        containment = float(f["containment"][0]) if both_signed else None
        # The node answers null where a text carries no SimHash (it decides as `gets_terms` from the
        # `vector_index` it is given). Not decided here again: a plugin built before it took that param would
        # also misjudge and misrank those pairs on the node, which a client-side correction could not repair
        # (rebuild the plugin from this tree).
        ham = (f.get("hamming") or [None])[0]
        hamming = None if ham is None else int(ham)
        out.append(Match(h["_id"], hamming, cosine, jaccard=jaccard, containment=containment,
                         decided_by=decided_by(t, hamming=hamming, cosine=cosine, jaccard=jaccard,
                                               containment=containment)))
    return sorted(out, key=Match.rank)[:top]


def _node_params(fp: Fingerprint, config: FingerprintConfig, t: Thresholds) -> dict[str, Any]:
    """The plugin script's parameters: the query's dedup object (its vector unrounded, as `verify` compares
    it), the rule's thresholds, and the config values the node decides by: which texts are short
    (``strategy``, ``short_text_chars``) and which carry a SimHash (with ``vector_index``: `gets_terms`)."""
    query = dedup_source(fp, config)
    query["vector"] = np.asarray(fp.vector, dtype=np.float64).tolist()
    return {"query": query, **t.to_dict(), "strategy": config.strategy,
            "short_text_chars": config.short_text_chars, "vector_index": config.vector_index}


def shared_bands(a: Fingerprint | Sequence[str], b: Sequence[str]) -> tuple[str, ...]:
    keys = a.bands + a.lsh if isinstance(a, Fingerprint) else list(a)
    other = set(b)
    return tuple(k for k in keys if k in other)
