"""What the review page knows of an index's candidate pairs, from one pass over them
(`esdedup.match.pairs.scored_pairs`): histograms of the measures that decide, and the pairs that teach most.

Memory stays bounded whatever the number of pairs: a histogram is a fixed number of bins, and each list of
teaching pairs keeps only its best `QUEUE_PER_LIST` (a heap). The pass is pure arithmetic over the pairs it
is given (`PairSurvey.add`); `survey` is the one function that reads a store.
"""
from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from esdedup.match.pairs import ScoredPair, scored_pairs, verdicts
from esdedup.match.thresholds import Thresholds
from esdedup.store.base import Store

__all__ = ["Histogram", "PairSurvey", "QueueItem", "survey"]

#: Pairs kept per list of the review queue (near a threshold above, below, measures that disagree).
QUEUE_PER_LIST = 200
#: Bins of the [0, 1] measures' histograms.
BINS = 20
#: Candidate pairs a survey reads at most (`survey`).
MAX_PAIRS = 2_000_000


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
        self.histograms["hamming"].add(float(p.hamming) for p in pairs if not p.ngram)
        for p in pairs:
            if p.ngram and p.jaccard is not None:
                self._near("jaccard", p, p.jaccard, t.jaccard)
                self._near("containment", p, p.containment, t.containment)
                if t.jaccard is not None and t.containment is not None and p.containment is not None:
                    if (p.jaccard >= t.jaccard) != (p.containment >= t.containment):
                        self._keep("disagree", abs(p.jaccard - p.containment), p)
            elif not p.ngram:
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
