"""What the review page knows of an index's candidate pairs: histograms of the measures that decide, and
the pairs that teach most. From one pass over every candidate pair (`survey`, `esdedup.match.pairs.scored_pairs`)
for a small index; from a sample for a large one (`sample_survey`: the candidates of documents chosen at
random, one batched lookup), since a pass over every pair costs what all-pairs search costs.

Memory stays bounded whatever the number of pairs: a histogram is a fixed number of bins, and each list of
teaching pairs keeps only its best `QUEUE_PER_LIST` (a heap). The pass is pure arithmetic over the pairs it
is given (`PairSurvey.add`); `survey` and `sample_survey` are the functions that read a store.
"""
from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from esdedup.fingerprint.config import FingerprintConfig
from esdedup.match.measures import hamming_of, measure_pairs, measured
from esdedup.match.pairs import ScoredPair, scored_pairs, verdicts
from esdedup.match.thresholds import Thresholds
from esdedup.review.explain import lsh_keys_of
from esdedup.schema import band_fields, lsh_bands
from esdedup.store.base import Probe, Store, StoredDoc, band_keys

__all__ = ["Histogram", "PairSurvey", "QueueItem", "sample_survey", "survey"]

#: Pairs kept per list of the review queue (near a threshold above, below, measures that disagree).
QUEUE_PER_LIST = 200
#: Bins of the [0, 1] measures' histograms.
BINS = 20
#: Candidate pairs a survey reads at most (`survey`).
MAX_PAIRS = 2_000_000
#: Documents whose candidates `sample_survey` measures, and candidates looked up for each at most.
SAMPLE_DOCS = 1000
SAMPLE_CANDIDATES = 50
#: Up to this many documents the review reads every candidate pair (`survey`); above, a sample.
FULL_SURVEY_MAX = 20_000


@dataclass
class Histogram:
    """Counts of a measure over ``edges`` (``len(edges) - 1`` bins; the last bin includes its right edge)."""

    name: str
    edges: list[float]
    counts: list[int]
    threshold: float | None

    @classmethod
    def empty(cls, name: str, edges: Iterable[float], threshold: float | None) -> Histogram:
        e = list(edges)
        return cls(name, e, [0] * (len(e) - 1), threshold)

    def add(self, values: Iterable[float]) -> None:
        v = np.asarray([x for x in values if x is not None and not math.isnan(x)], dtype=np.float64)
        if len(v):
            counts, _ = np.histogram(np.clip(v, self.edges[0], self.edges[-1]), bins=self.edges)
            self.counts = [a + int(b) for a, b in zip(self.counts, counts, strict=True)]

    @property
    def total(self) -> int:
        return sum(self.counts)


@dataclass(frozen=True)
class QueueItem:
    """A pair worth a person's look, and why."""

    a: str
    b: str
    reason: str


@dataclass
class PairSurvey:
    """Histograms of Jaccard, containment and Hamming over candidate pairs, and the pairs that teach most."""

    thresholds: Thresholds
    bits: int = 64
    pairs: int = 0
    duplicates: int = 0
    #: The survey stopped before the last candidate pair (`survey`'s ``max_pairs``).
    truncated: bool = False
    #: Documents whose candidates were measured (`sample_survey`); None when every candidate pair was read.
    sampled: int | None = None
    histograms: dict[str, Histogram] = field(default_factory=dict)
    _heaps: dict[str, list[tuple[float, int, str, str]]] = field(default_factory=dict)
    _tick: itertools.count = field(default_factory=itertools.count)

    def __post_init__(self) -> None:
        t = self.thresholds
        unit = [i / BINS for i in range(BINS + 1)]
        self.histograms = {
            "jaccard": Histogram.empty("jaccard", unit, t.jaccard),
            "containment": Histogram.empty("containment", unit, t.containment),
            "hamming": Histogram.empty("hamming", [i - 0.5 for i in range(0, min(self.bits, 32) + 2)],
                                       None if t.hamming_k is None else float(t.hamming_k)),
        }

    def add(self, pairs: list[ScoredPair], verdicts: np.ndarray) -> None:
        """Count a batch of candidate pairs, with the rule's verdict on each."""
        t = self.thresholds
        self.pairs += len(pairs)
        self.duplicates += int(np.count_nonzero(verdicts))
        ngram = [p for p in pairs if p.ngram and p.jaccard is not None]
        self.histograms["jaccard"].add(p.jaccard for p in ngram)  # type: ignore[misc]
        self.histograms["containment"].add(p.containment for p in ngram)  # type: ignore[misc]
        self.histograms["hamming"].add(float(p.hamming) for p in pairs if not p.ngram and p.hamming is not None)
        for p in pairs:
            if p.ngram and p.jaccard is not None:
                self._near("jaccard", p, p.jaccard, t.jaccard)
                self._near("containment", p, p.containment, t.containment)
                if t.jaccard is not None and t.containment is not None and p.containment is not None:
                    if (p.jaccard >= t.jaccard) != (p.containment >= t.containment):
                        self._keep("disagree", abs(p.jaccard - p.containment), p)
            elif not p.ngram and p.hamming is not None:
                self._near("hamming", p, float(p.hamming), None if t.hamming_k is None else t.hamming_k + 0.5)
                if t.hamming_k is not None and t.cosine is not None and not math.isnan(p.cosine):
                    if (p.hamming <= t.hamming_k) != (p.cosine >= t.cosine):
                        self._keep("disagree", abs(p.cosine - t.cosine), p)

    def _near(self, name: str, p: ScoredPair, value: float | None, threshold: float | None) -> None:
        if value is None or threshold is None or math.isnan(value):
            return
        side = "above" if value >= threshold else "below"
        self._keep(f"{name} {side}", -abs(value - threshold), p)

    def _keep(self, reason: str, priority: float, p: ScoredPair) -> None:
        """Keep ``p`` in the list ``reason`` if it is among its `QUEUE_PER_LIST` of highest priority."""
        heap = self._heaps.setdefault(reason, [])
        item = (priority, next(self._tick), p.a, p.b)
        if len(heap) < QUEUE_PER_LIST:
            heapq.heappush(heap, item)
        elif item > heap[0]:
            heapq.heapreplace(heap, item)

    def queue(self, labelled: set[tuple[str, str]]) -> list[QueueItem]:
        """The teaching pairs not labelled yet, the lists taken in turn, the best of each list first: pairs
        nearest each threshold on either side, and pairs whose measures disagree."""
        lists = []
        for reason in sorted(self._heaps):
            best = sorted(self._heaps[reason], reverse=True)
            lists.append([QueueItem(a, b, _reason_text(reason, self.thresholds)) for _, _, a, b in best
                          if (a, b) not in labelled])
        out: list[QueueItem] = []
        seen: set[tuple[str, str]] = set()
        for row in itertools.zip_longest(*lists):
            for item in row:
                if item is not None and (item.a, item.b) not in seen:
                    seen.add((item.a, item.b))
                    out.append(item)
        return out


def _reason_text(reason: str, t: Thresholds) -> str:
    if reason == "disagree":
        return "its measures disagree"
    name, side = reason.split()
    value = {"jaccard": t.jaccard, "containment": t.containment, "hamming": t.hamming_k}[name]
    return f"{name} just {side} the threshold {value}"


def survey(store: Store, thresholds: Thresholds, *, max_bucket: int = 1000, max_pairs: int | None = MAX_PAIRS,
           batch: int = 4096) -> PairSurvey:
    """One pass over the candidate pairs of ``store`` (both sides of the Hamming threshold included), or over
    the first ``max_pairs`` of them (``truncated`` then says so): the pass costs what all-pairs search costs,
    and a review needs the shape of the distributions and a queue, not every pair."""
    out = PairSurvey(thresholds, store.config.bits)
    chunk: list[ScoredPair] = []
    for p in scored_pairs(store, max_bucket=max_bucket, hamming_k=None):
        chunk.append(p)
        if len(chunk) >= batch:
            out.add(chunk, verdicts(chunk, thresholds))
            chunk = []
        if max_pairs is not None and out.pairs + len(chunk) >= max_pairs:
            out.truncated = True
            break
    if chunk:
        out.add(chunk, verdicts(chunk, thresholds))
    return out



def probe_of(doc: StoredDoc, config: FingerprintConfig) -> Probe:
    """The band and LSH keys a stored document is found under, as a lookup probe."""
    probe: dict[str, tuple[str, ...]] = {}
    probe.update(zip(band_fields(config), ((k,) for k in band_keys(doc, config)), strict=False))
    probe.update(zip(lsh_bands(config), ((k,) for k in lsh_keys_of(doc, config)), strict=False))
    return probe


def sample_survey(store: Store, thresholds: Thresholds, *, docs: int = SAMPLE_DOCS,
                  candidates: int = SAMPLE_CANDIDATES, seed: int = 0) -> PairSurvey:
    """The candidate pairs of ``docs`` documents chosen at random (`Store.sample`), each with the stored
    documents sharing a band or LSH key with it (`Store.lookup`, at most ``candidates`` each): a bounded
    sample of the index's candidate pairs (a pair is the likelier in it the more its documents share
    keys with others), read in a time that does not grow with the index."""
    config = store.config
    out = PairSurvey(thresholds, config.bits, sampled=0)
    sampled = [d for d in store.sample(docs, seed=seed) if not d.empty]
    out.sampled = len(sampled)
    found = store.lookup([probe_of(d, config) for d in sampled], limit=candidates + 1) if sampled else []
    by_id: dict[str, StoredDoc] = {}
    pairs: set[tuple[str, str]] = set()
    for d, hits in zip(sampled, found, strict=True):
        by_id[d.id] = d
        for h in hits:
            if h.id != d.id and not h.empty:
                by_id[h.id] = h
                pairs.add((min(d.id, h.id), max(d.id, h.id)))
    scored = _scored(sorted(pairs), by_id, config)
    for start in range(0, len(scored), 4096):
        chunk = scored[start:start + 4096]
        out.add(chunk, verdicts(chunk, thresholds))
    return out


def _scored(pairs: list[tuple[str, str]], docs: dict[str, StoredDoc], config: FingerprintConfig) -> list[ScoredPair]:
    """``pairs`` measured in bulk (`esdedup.match.measures.measure_pairs`), as all-pairs search measures them."""
    if not pairs:
        return []
    live = list(docs.values())
    row = {d.id: i for i, d in enumerate(live)}
    left = np.array([row[a] for a, _ in pairs], dtype=np.int64)
    right = np.array([row[b] for _, b in pairs], dtype=np.int64)
    m = measure_pairs(live, left, right, config)
    return [ScoredPair(a, b, hamming_of(m.hamming[x]), float(m.cosine[x]), bool(m.ngram[x]), measured(m.jaccard[x]),
                       measured(m.containment[x]), (live[left[x]].chars, live[right[x]].chars))
            for x, (a, b) in enumerate(pairs)]
