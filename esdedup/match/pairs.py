"""All-pairs search: every near-duplicate pair of a store, from shared band keys, verified by the rule.

Candidates are documents that share a SimHash band key or a MinHash LSH key in the store; when the band
layout probes neighbouring keys (``probe_radius`` > 0) every document's probe keys are also joined in memory,
so the pigeonhole guarantee holds for any k the layout was built for. Each candidate pair is measured once
(`ScoredPair`) and kept when `esdedup.match.rule` says so. Band values held by more than ``max_bucket`` documents
are cut to that many and logged as a warning (see `KeyScans.crowded_keys`).
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations, repeat
from typing import TypeVar

import numpy as np

from esdedup.errors import ConfigError
from esdedup.fingerprint.bands import BandLayout
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.simhash import hamming_rows, simhash_words
from esdedup.match.joins import CROWDED_BAND_KEY, JoinedCrowds, MemoryJoin, join_in_memory
from esdedup.match.measures import (
    hamming_of,
    measure,
    measure_pairs,
    measured,
    row_cosines,
)
from esdedup.match.pairtable import Pair, PairColumns, hamming_list
from esdedup.match.rule import (
    EXACT_COPY,
    CopyOf,
    are_duplicates,
    decided_by,
    decided_by_many,
    exact_copies,
    has_signature,
    is_duplicate,
    reads_cosine,
)
from esdedup.match.seen import SeenPairs
from esdedup.match.thresholds import ThresholdOverrides, Thresholds, lookup_thresholds
from esdedup.store.base import KeyBatch, ScannableStore, StoredDoc
from esdedup.store.columns import copy_rows, reads_copy_columns
from esdedup.store.partition import Partition, pair_share
from esdedup.util.arrays import unique_sorted
from esdedup.util.fieldtypes import checked_args

log = logging.getLogger(__name__)

#: Ids fetched per round trip while verifying pairs.
FETCH_BATCH = 2000
#: Candidate pairs from key groups measured at a time.
PAIR_BATCH = 20_000
#: Fingerprints kept in memory while verifying pairs before the cache starts over.
CACHE_MAX = 200_000
#: Pairs whose smallest shared key `_PairScorer.key_groups` remembers in a batch (found at a pair's first group
#: there, not in each group of a key the two share: a fifth of a partition's job at scale) before it starts over.
SMALLEST_KEYS_MAX = 1 << 18
#: All-pairs search groups the MinHash LSH bands in memory (and the SimHash band keys with them:
#: `esdedup.match.joins`), from the stored signatures (one read of the store's `SignatureColumns`, a sort per
#: band), for stores of up to this many documents (512 bytes each); larger ones use the store's key groups
#: (`KeyScans.key_batches`). Both give the same pairs.
LSH_IN_MEMORY_MAX = 2_000_000


@dataclass(frozen=True)
class ScoredPair:
    """A candidate pair (``a < b``) with every measure the rule may use; ``ngram`` when both are on the
    n-gram path (both carry signatures: then ``jaccard`` and ``containment`` are their estimates; or both
    are legacy short texts without)."""

    a: str
    b: str
    hamming: int | None
    cosine: float
    ngram: bool = False
    jaccard: float | None = None
    containment: float | None = None
    chars: tuple[int, int] = field(default=(0, 0), compare=False)

    def is_duplicate(self, t: Thresholds) -> bool:
        return is_duplicate(self.hamming, self.cosine, t, self.ngram, jaccard=self.jaccard,
                            containment=self.containment)

    def to_pair(self, t: Thresholds, *, vectors: bool = True) -> Pair:
        """The pair as reported: ``vectors`` False when the texts carry no vectors (the cosine is not shown)."""
        cosine = self.cosine if vectors and not np.isnan(self.cosine) else None
        by = decided_by(t, hamming=self.hamming, cosine=cosine, jaccard=self.jaccard if self.ngram else None,
                        containment=self.containment if self.ngram else None,
                        legacy_short=self.ngram and self.jaccard is None)
        return Pair(self.a, self.b, self.hamming, cosine, self.jaccard, self.containment, by)


def verdicts(pairs: Sequence[ScoredPair], t: Thresholds) -> np.ndarray:
    """The rule's verdict on each scored pair (`esdedup.match.rule.are_duplicates`), in one call: a bool array."""
    return are_duplicates([p.hamming for p in pairs], [p.cosine for p in pairs], t, [p.ngram for p in pairs],
                          jaccard=[p.jaccard for p in pairs], containment=[p.containment for p in pairs])


def check_max_bucket(max_bucket: int) -> None:
    """Refuse a cap on the documents compared per band value (or paired per content SHA-1) below 2: such a
    bucket pairs nothing, and a search that pairs nothing would look like a store without duplicates.

    Raises:
        ConfigError: ``max_bucket`` below 2.
    """
    if max_bucket < 2:
        raise ConfigError(f"max_bucket must be at least 2 (documents compared per band value), got {max_bucket}")


@checked_args
def find_pairs(store: ScannableStore, *, thresholds: Thresholds | ThresholdOverrides | None = None, max_bucket: int = 1000,
               crowded: JoinedCrowds | None = None, in_memory: bool | None = None) -> Iterator[Pair]:
    """Every near-duplicate pair of a store, found from band collisions and verified by the rule
    (thresholds default to the index's), in the order `scored_pairs` gives the candidates, then the exact
    copies (`CopyGroups`): those without words, and those with words that no band value brought together
    (every key they share was crowded). ``crowded`` and ``in_memory``: see `scored_pairs`."""
    for part in pair_parts(store, thresholds=thresholds, max_bucket=max_bucket, crowded=crowded,
                           in_memory=in_memory):
        if isinstance(part, Pair):
            yield part
        else:
            yield from part


def pair_parts(store: ScannableStore, *, thresholds: Thresholds | ThresholdOverrides | None = None,
               max_bucket: int = 1000, crowded: JoinedCrowds | None = None, in_memory: bool | None = None
               ) -> Iterator[PairColumns | Pair]:
    """`find_pairs`' pairs, in its order, those the in-memory join keeps as columns (a chunk at a time), the
    others one at a time: what `esdedup.match.pairtable.PairList` holds."""
    check_max_bucket(max_bucket)
    t = lookup_thresholds(thresholds, store.config)
    if in_memory is None:
        in_memory = lsh_in_memory(store)
    copies = CopyGroups.of(store, max_bucket=max_bucket)
    scorer = _PairScorer(store, t.hamming_k)
    bands_joined = False
    if in_memory:
        # The candidates of the LSH bands (and of the band keys, where they were joined too) judged as arrays,
        # without an object a candidate. Only the generator holds the join: it lets the signatures go once
        # they are judged.
        joined = join_in_memory(store, max_bucket, crowded)
        bands_joined = joined.bands
        judged = _lsh_duplicates(joined, store.config.stores_vector, scorer.seen, t)
        del joined
        yield from copies.noting(judged)
    batch: list[ScoredPair] = []
    for p in _stored_keys(scorer, max_bucket, in_memory=in_memory, bands_joined=bands_joined):
        batch.append(p)
        if len(batch) >= VERDICT_BATCH:
            yield from copies.noting(_duplicates(batch, t, store.config.stores_vector))
            batch = []
    yield from copies.noting(_duplicates(batch, t, store.config.stores_vector))
    yield from _duplicates(list(scorer.score_pairs(copies.unpaired())), t, store.config.stores_vector)
    yield from copies.empty_pairs()


_P = TypeVar("_P", Pair, ScoredPair, PairColumns)


class CopyGroups:
    """The stored texts that share a content SHA-1 (exact copies), grouped across every document by one scan,
    whatever the band values hold: all-pairs search caps a crowded band value at ``max_bucket`` documents, and
    among many near-identical texts every key two copies share may be crowded. A SHA-1 held by more than
    ``max_bucket`` texts groups its first ``max_bucket`` ids only (logged), as a crowded band value does.

    The pairs are judged by the rule as any other (`esdedup.match.rule`): rule 0 (`exact_copies`) for the
    texts without words, the measures for the others (`unpaired`: those no band value brought together)."""

    def __init__(self, groups: list[tuple[str, bool, list[str]]]) -> None:
        self.groups = groups  # (content SHA-1, without words, ids sorted)
        self.member = {i: g for g, (_, _, ids) in enumerate(groups) for i in ids}
        self.paired: set[tuple[str, str]] = set()
        #: The group (-1: none) of each id of the last ids list `_note_columns` read, and that list.
        self._group_ids: Sequence[str] | None = None
        self._group_of = np.empty(0, dtype=np.int64)

    @classmethod
    def of(cls, store: ScannableStore, *, max_bucket: int = 1000) -> CopyGroups:
        by_sha1: dict[tuple[str, bool], list[str]] = {}
        batches = [store.copy_columns()] if reads_copy_columns(store) else map(copy_rows, store.scan())
        for rows in batches:
            for doc_id, sha1, empty in rows:
                by_sha1.setdefault((sha1, empty), []).append(doc_id)
        groups: list[tuple[str, bool, list[str]]] = []
        for (sha1, empty), ids in sorted(by_sha1.items()):
            if len(ids) < 2:
                continue
            if len(ids) > max_bucket:
                log.warning("%d texts are exact copies of one another (content SHA-1 %s); only %d were paired",
                            len(ids), sha1, max_bucket)
            groups.append((sha1, empty, sorted(ids)[:max_bucket]))
        return cls(groups)

    def noting(self, pairs: Iterable[_P]) -> Iterator[_P]:
        """``pairs`` as they come, noting those of copies with words (`unpaired` leaves them out)."""
        member = self.member
        for p in pairs:
            if isinstance(p, PairColumns):
                self._note_columns(p)
            else:
                g = member.get(p.a)
                if g is not None and member.get(p.b) == g:
                    self.paired.add((p.a, p.b))
            yield p

    def _note_columns(self, pairs: PairColumns) -> None:
        """`noting` of pairs held as columns: their documents' groups compared as arrays."""
        if not self.member or not len(pairs):
            return
        ids = pairs.ids
        if self._group_ids is not ids:
            self._group_ids = ids
            self._group_of = np.array(list(map(self.member.get, ids, repeat(-1))), dtype=np.int64)
        group_of = self._group_of
        a, b = pairs.a, pairs.b
        ga = group_of[a]
        same = np.flatnonzero((ga >= 0) & (ga == group_of[b]))
        self.paired.update((ids[i], ids[j]) for i, j in zip(a[same].tolist(), b[same].tolist(), strict=True))

    def unpaired(self) -> list[tuple[str, str]]:
        """The pairs (``a < b``) of copies with words not seen by `noting`."""
        return [(a, b) for _, empty, ids in self.groups if not empty for a, b in combinations(ids, 2)
                if (a, b) not in self.paired]

    def empty_pairs(self) -> Iterator[Pair]:
        """The pairs among the copies without words, which have no keys to share, decided by `EXACT_COPY`."""
        for sha1, empty, ids in self.groups:
            if not empty:
                continue
            docs = [CopyOf(i, True, sha1) for i in ids]
            for i, a in enumerate(docs[:-1]):
                rest = docs[i + 1:]
                yield from (Pair(a.id, rest[j].id, 0, None, decided_by=EXACT_COPY)
                            for j in exact_copies(a.empty, a.content_sha1, rest))


def empty_copy_pairs(store: ScannableStore, *, max_bucket: int = 1000) -> Iterator[Pair]:
    """The pairs among the stored texts without words that rule 0 of `esdedup.match.rule` makes duplicates
    (`exact_copies`: the same content SHA-1), decided by `EXACT_COPY` (`CopyGroups.empty_pairs`)."""
    check_max_bucket(max_bucket)
    yield from CopyGroups.of(store, max_bucket=max_bucket).empty_pairs()


#: Scored pairs judged by one call of the rule (a call a pair cost more than measuring it).
VERDICT_BATCH = 4096


def kept_pairs(pairs: list[ScoredPair], t: Thresholds, vectors: bool) -> Iterator[Pair]:
    """The scored pairs the rule keeps, as reported (``vectors``: whether the texts carry vectors)."""
    return _duplicates(pairs, t, vectors)


def _duplicates(pairs: list[ScoredPair], t: Thresholds, vectors: bool) -> Iterator[Pair]:
    if pairs:
        yield from (p.to_pair(t, vectors=vectors) for p, dup in zip(pairs, verdicts(pairs, t).tolist(), strict=True)
                    if dup)


def scored_pairs(store: ScannableStore, *, max_bucket: int = 1000, hamming_k: int | None = None,
                 crowded: JoinedCrowds | None = None, in_memory: bool | None = None) -> Iterator[ScoredPair]:
    """Every candidate pair of a store (documents sharing a band or LSH key, or, with a probing layout,
    whose band keys are within the probe radius), once each, with all its measures; then the exact copies
    with words that no key brought together (`CopyGroups.unpaired`).

    ``hamming_k`` drops pairs on the SimHash path farther apart than that early (they cannot pass the rule).
    ``crowded``, when given, receives the keys held by ``max_bucket`` or more documents that the search joined
    in memory (`lsh_in_memory`: the LSH values, and the band keys where it joined those too: `JoinedCrowds`);
    the store's `KeyScans.crowded_keys` cannot see those without indexing every such key first. ``in_memory``
    is `lsh_in_memory` of the store, when the caller has asked already (so that `crowded_values` is told the
    same answer).
    """
    check_max_bucket(max_bucket)
    scorer = _PairScorer(store, hamming_k)
    if in_memory is None:
        in_memory = lsh_in_memory(store)
    copies = CopyGroups.of(store, max_bucket=max_bucket)
    bands_joined = False
    if in_memory:
        # The LSH bands (and the band keys, where `joins_bands` says so) joined in memory, every candidate
        # scored in bulk: what the key groups below would give for those keys, without a Python step per group.
        joined = join_in_memory(store, max_bucket, crowded)
        bands_joined = joined.bands
        yield from copies.noting(_lsh_pairs(joined, scorer.seen))
    yield from copies.noting(_stored_keys(scorer, max_bucket, in_memory=in_memory, bands_joined=bands_joined))
    yield from scorer.score_pairs(copies.unpaired())


class _PairScorer:
    """Measures candidate pairs once each: the pairs seen so far, and a bounded cache of fetched documents."""

    def __init__(self, store: ScannableStore, hamming_k: int | None) -> None:
        self.store = store
        self.config: FingerprintConfig = store.config
        self.hamming_k = hamming_k
        self.seen = SeenPairs()
        self.cache: dict[str, StoredDoc] = {}

    def fetch(self, ids: Iterable[str]) -> None:
        need = sorted({i for i in ids if i not in self.cache})
        if len(self.cache) + len(need) > CACHE_MAX:
            self.cache.clear()
            need = sorted(set(ids))
        for start in range(0, len(need), FETCH_BATCH):
            self.cache.update(self.store.get(need[start:start + FETCH_BATCH]))

    def stored_keys(self, max_bucket: int, *, lsh: bool) -> Iterator[ScoredPair]:
        """The candidates of the store's keys not seen yet: those of its key groups (`key_groups`; ``lsh``:
        the LSH keys too), then, with a probing layout, those whose keys are within the probe radius."""
        yield from self.key_groups(max_bucket, lsh=lsh)
        if self.config.band_layout().radius > 0:
            # Probing layouts: pairs whose keys differ in a few bits share no stored key; join in memory.
            yield from self.probed(max_bucket)

    def key_groups(self, max_bucket: int, *, lsh: bool, batches: Iterable[KeyBatch] | None = None,
                   share: Partition | None = None) -> Iterator[ScoredPair]:
        """Pairs within each group of documents sharing a stored key (`KeyScans.key_batches`, or ``batches``;
        ``lsh``: the LSH keys too, unless they were joined in memory), measured in bulk.

        A pair is taken under the smallest key its two documents share (`KeyBatch.keys`), so it is measured
        once with nothing remembered across groups; only pairs that share crowded keys alone are remembered,
        and with ``share`` (the batches of a partition, which all hold the crowded keys) kept only when they
        are that partition's (`esdedup.store.partition.pair_share`)."""
        crowded_seen: set[tuple[str, str]] = set()
        pending: list[tuple[str, str]] = []
        # Members a batch brought whole (`KeyBatch.docs`), kept until their pairs are measured.
        known: dict[str, StoredDoc] = {}
        if batches is None:
            batches = self.store.key_batches(max_bucket=max_bucket, lsh=lsh)
        for batch in batches:
            known.update(batch.docs)
            smallest: dict[tuple[str, str], str | None] = {}  # see SMALLEST_KEYS_MAX
            for key, count, ids in batch.groups:
                if len(ids) >= max_bucket:
                    log.warning(CROWDED_BAND_KEY, key, max_bucket, max_bucket)
                owned = self._owned(key, ids, batch.keys, crowded_seen if count > max_bucket else None, smallest)
                if share is not None and count > max_bucket:
                    owned = (p for p in owned if pair_share(*p, share.count) == share.index)
                pending += owned
            # The documents kept bound the memory as much as the pairs (a share with few pairs a batch).
            if len(pending) >= PAIR_BATCH or len(known) >= PAIR_BATCH:
                yield from self.score_pairs(pending, known)
                pending = []
                known = {}
        yield from self.score_pairs(pending, known)

    def _owned(self, key: str, ids: list[str], keys: Mapping[str, frozenset[str]],
               crowded_seen: set[tuple[str, str]] | None,
               smallest: dict[tuple[str, str], str | None]) -> Iterator[tuple[str, str]]:
        """The pairs of a key group (ids sorted) to measure here: those whose smallest shared key (not
        crowded) is ``key``; for a crowded key (``crowded_seen`` given), those sharing no other key, once.
        ``smallest``: pair -> its smallest shared key (None: none), as far as known."""
        none: frozenset[str] = frozenset()
        if len(smallest) > SMALLEST_KEYS_MAX:
            smallest.clear()
        for i, a in enumerate(ids[:-1]):
            mine = keys.get(a, none)
            for b in ids[i + 1:]:
                pair = (a, b)
                if pair in self.seen:  # joined in memory already (the LSH bands, or probing layouts)
                    continue
                if pair not in smallest:
                    smallest[pair] = min(mine & keys.get(b, none), default=None)
                first = smallest[pair]
                if crowded_seen is None:
                    if first is None or first == key:
                        yield pair
                elif first is None and pair not in crowded_seen:
                    crowded_seen.add(pair)
                    yield pair

    def score_pairs(self, pairs: list[tuple[str, str]],
                    known: Mapping[str, StoredDoc] | None = None) -> Iterator[ScoredPair]:
        """Measure candidate pairs (``a < b``) in bulk: their documents fetched once (those not ``known``
        already), every measure in numpy as `esdedup.match.measures.measure` takes it; pairs with an empty or
        vanished document are left out."""
        known = known or {}
        wanted = {i for p in pairs for i in p}
        docs: dict[str, StoredDoc] = {i: known[i] for i in wanted if i in known}
        ids = sorted(wanted - docs.keys())
        for start in range(0, len(ids), FETCH_BATCH):
            docs.update(self.store.get(ids[start:start + FETCH_BATCH]))
        live = [d for d in docs.values() if not d.empty]
        if not live:
            return
        row = {d.id: i for i, d in enumerate(live)}
        kept = [(a, b) for a, b in pairs if a in row and b in row]
        left = np.array([row[a] for a, _ in kept], dtype=np.int64)
        right = np.array([row[b] for _, b in kept], dtype=np.int64)
        m = measure_pairs(live, left, right, self.config)
        ngram = m.ngram
        track = self.config.band_layout().radius > 0  # probing layouts skip these later
        for x, (a, b) in enumerate(kept):
            if track:
                self.seen.add((a, b))
            h = hamming_of(m.hamming[x])
            if self.hamming_k is not None and not ngram[x] and h is not None and h > self.hamming_k:
                continue
            yield ScoredPair(a, b, h, float(m.cosine[x]), bool(ngram[x]), measured(m.jaccard[x]),
                             measured(m.containment[x]), (live[left[x]].chars, live[right[x]].chars))

    def probed(self, max_bucket: int) -> Iterator[ScoredPair]:
        """Pairs whose band keys are within the layout's probe radius (`probe_pairs`), joined in memory."""
        ids, hashes, ngram = self._all_simhashes()
        left, right = probe_pairs(self.config.band_layout(), hashes, max_bucket=max_bucket)
        if self.hamming_k is not None and len(left):
            h = simhash_words(hashes, self.config.bits)
            keep = (hamming_rows(h[left], h[right]) <= self.hamming_k) | (ngram[left] & ngram[right])
            left, right = left[keep], right[keep]
        # Score each document against its partners in one pass (pairs come sorted by left index).
        cuts = np.flatnonzero(np.diff(left)) + 1
        for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(left)], strict=True):
            if lo == hi:
                continue
            a_id = ids[int(left[lo])]
            partners = [ids[int(j)] for j in right[lo:hi] if (a_id, ids[int(j)]) not in self.seen]
            if not partners:
                continue
            self.fetch([a_id, *partners])
            a = self.cache.get(a_id)
            rest = [self.cache[p] for p in partners if p in self.cache]
            if a is not None and rest:
                yield from self.score_against(a, rest)

    def _all_simhashes(self) -> tuple[list[str], list[int], np.ndarray]:
        """Ids (sorted), SimHashes and n-gram-path flags of every non-empty stored document."""
        rows = sorted((d.id, d.simhash, has_signature(d) or not self.config.gets_simhash_bands(d.chars))
                       for docs in self.store.scan() for d in docs if not d.empty)
        return [r[0] for r in rows], [r[1] for r in rows], np.array([r[2] for r in rows], dtype=bool)

    def score_against(self, a: StoredDoc, rest: list[StoredDoc]) -> Iterator[ScoredPair]:
        """Every measure between ``a`` and each of ``rest`` (marking the pairs seen); pairs on the SimHash
        path beyond ``hamming_k`` are not candidates at all and are left out."""
        m = measure(a, rest, self.config)
        ngram = m.ngram
        for i, d in enumerate(rest):
            self.seen.add((a.id, d.id))
            h = hamming_of(m.hamming[i])
            if self.hamming_k is not None and not ngram[i] and h is not None and h > self.hamming_k:
                continue
            yield ScoredPair(a.id, d.id, h, float(m.cosine[i]), bool(ngram[i]), measured(m.jaccard[i]),
                             measured(m.containment[i]), (a.chars, d.chars))


def lsh_in_memory(store: ScannableStore) -> bool:
    """Whether all-pairs search joins the LSH bands in memory (`LSH_IN_MEMORY_MAX`) rather than reading
    the store's LSH key groups."""
    return store.config.gets_signatures and store.count() <= LSH_IN_MEMORY_MAX


def crowded_values(store: ScannableStore, found_in_memory: JoinedCrowds, *, min_count: int,
                   limit: int = 10, in_memory: bool | None = None) -> list[tuple[str, int]]:
    """The most crowded band values of a store after an all-pairs search: the keys the search collected itself
    when it joined them in memory (``crowded`` of `scored_pairs`; ``in_memory``: what the search was told, else
    `lsh_in_memory` asked again), and the store's own count of the others (none when it joined the band keys
    too: their key tables are then not indexed for this)."""
    if in_memory is None:
        in_memory = lsh_in_memory(store)
    found = [] if found_in_memory.bands else store.crowded_keys(min_count=min_count, limit=limit, lsh=not in_memory)
    if in_memory:
        found += [(k, n) for k, n in found_in_memory.keys if n >= min_count]
    return sorted(found, key=lambda x: (-x[1], x[0]))[:limit]


def _stored_keys(scorer: _PairScorer, max_bucket: int, *, in_memory: bool, bands_joined: bool
                 ) -> Iterator[ScoredPair]:
    """The candidates of the store's key groups that the join in memory left to them: none when it joined the
    band keys too (`esdedup.match.joins.MemoryJoin.bands`), the band keys' when it joined the LSH bands alone,
    every key's when there was none (``in_memory`` false)."""
    if not bands_joined:
        yield from scorer.stored_keys(max_bucket, lsh=not in_memory)


def _lsh_pairs(joined: MemoryJoin, seen: SeenPairs, chunk: int = 1 << 16) -> Iterator[ScoredPair]:
    """`scored_pairs` for the keys joined in memory: the candidate pairs of ``joined``, measured as
    `esdedup.match.measures.measure_pairs` measures them."""
    cols, left, right = joined.cols, joined.left, joined.right
    ids = cols.ids
    seen.add_rows(ids, left, right)
    for lo in range(0, len(left), chunk):
        a, b = left[lo:lo + chunk], right[lo:lo + chunk]
        m = cols.sketches.measure(a, b)
        # Both sides carry signatures of the config's length: the n-gram rule decides, no Hamming cut applies.
        for i, j, h, c, jj, ct in zip(a.tolist(), b.tolist(), hamming_list(m.hamming), m.cosine.tolist(),
                                      m.jaccard.tolist(), m.containment.tolist(), strict=True):
            yield ScoredPair(ids[i], ids[j], h, c, True, jj, ct, (cols.chars[i], cols.chars[j]))


def _lsh_duplicates(joined: MemoryJoin, shown: bool, seen: SeenPairs, t: Thresholds, chunk: int = 1 << 16
                    ) -> Iterator[PairColumns]:
    """The near-duplicate pairs among the candidates of `_lsh_pairs` (marked seen), in its order, as columns a
    chunk at a time: the rule (`esdedup.match.rule.decide`) over each chunk's measures, with what
    `ScoredPair.to_pair` reports of the pairs it keeps. The cosines are measured only when the rule reads them
    or the pairs show them. Every chunk is judged before the first is given, and the signatures are let go
    then: the caller holds every pair (all-pairs search sorts them), and both at once were the peak of its
    memory."""
    cols, left, right = joined.cols, joined.left, joined.right
    del joined
    ids = cols.ids
    seen.add_rows(ids, left, right)
    # Every candidate carries two signatures of the config's length.
    read = reads_cosine(t, all_signed=True)
    kept: list[PairColumns] = []
    for lo in range(0, len(left), chunk):
        a, b = left[lo:lo + chunk], right[lo:lo + chunk]
        m = cols.sketches.measure(a, b, cosine=read)
        keep = np.flatnonzero(m.decide(t))
        if not len(keep):
            continue
        cosine: np.ndarray | None = None
        if shown:
            vectors = cols.sketches.vector_rows()
            cosine = m.cosine[keep] if read else row_cosines(vectors[a[keep]], vectors[b[keep]])
        hamming, jaccard = m.hamming[keep], m.jaccard[keep]
        by = decided_by_many(t, hamming=hamming, cosine=np.nan if cosine is None else cosine, jaccard=jaccard)
        kept.append(PairColumns(ids, a[keep], b[keep], hamming, cosine, jaccard, m.containment[keep],
                                np.array(by, dtype=object)))
    del cols
    yield from kept


def probe_pairs(layout: BandLayout, simhashes: Sequence[int], *, max_bucket: int = 1000
                ) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs ``(left[x], right[x])``, left < right, sorted, each once, whose band keys in some table
    are within the layout's probe radius: the all-pairs form of `BandLayout.probe_keys`. Per probed key at
    most ``max_bucket`` partners are taken (logged)."""
    n = len(simhashes)
    empty = np.zeros(0, dtype=np.int64)
    if n < 2:
        return empty, empty
    # Wider fingerprints stay Python ints (numpy has no 128-bit integers); every band key fits 64 bits.
    keys = layout.key_values_many(np.array(simhashes, dtype=np.uint64) if layout.bits == 64 else simhashes)
    codes: list[np.ndarray] = []
    capped = 0
    for t in range(layout.n_tables):
        col = keys[:, t].astype(np.uint64)
        order = np.argsort(col, kind="stable")
        sorted_keys = col[order]
        for r in range(layout.radius + 1):
            for flips in combinations(range(layout.key_widths[t]), r):
                probe = col ^ np.uint64(sum(1 << b for b in flips))
                lo = np.searchsorted(sorted_keys, probe, "left")
                cnt = np.searchsorted(sorted_keys, probe, "right") - lo
                over = cnt > max_bucket
                if over.any():
                    capped += int(over.sum())
                    cnt = np.minimum(cnt, max_bucket)
                has = np.flatnonzero(cnt > (1 if r == 0 else 0))
                if len(has) == 0:
                    continue
                c = cnt[has]
                left = np.repeat(has, c)
                starts = np.repeat(lo[has] - np.concatenate(([0], np.cumsum(c)[:-1])), c)
                right = order[starts + np.arange(int(c.sum()))]
                keep = left < right
                codes.append(left[keep].astype(np.int64) * n + right[keep].astype(np.int64))
        if codes:
            codes = [unique_sorted(np.concatenate(codes))]
    if capped:
        log.warning("%d probed band values matched more than %d documents; only %d were compared",
                    capped, max_bucket, max_bucket)
    if not codes:
        return empty, empty
    return np.divmod(codes[0], n)


#: The scorer of candidate pairs, for the partitioned search (`esdedup.match.partitioned`).
PairScorer = _PairScorer
