"""Precision, recall and F1 of the labels given so far, over the thresholds (`esdedup.quality.evaluate`'s
sweep), the best setting, and one curve per threshold with the others at the index's values.

The labelled pairs are measured from their stored sketches (`StoreCore.get` of the labelled ids only, in
batches); a pair counts as predicted only when the two share a band or LSH key, as all-pairs search
would find it (with a probing band layout it may find a few more)."""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from esdedup.fingerprint.config import FingerprintConfig
from esdedup.match.pairs import ScoredPair
from esdedup.match.rule import exact_copies
from esdedup.match.thresholds import Thresholds
from esdedup.quality.evaluate import (
    Label,
    LabelledCandidates,
    Scores,
    SweepRow,
    config_setting,
    default_grid,
    sweep,
)
from esdedup.review.explain import explain
from esdedup.store.base import StoreCore

__all__ = ["Curve", "TuningReport", "tune"]

#: Ids read per `StoreCore.get` call.
GET_BATCH = 1000


@dataclass
class Curve:
    """Scores over one threshold's values, the other thresholds at the index's."""

    name: str
    values: list[float | int | None]
    scores: list[Scores]


@dataclass
class TuningReport:
    labelled: int
    positives: int
    candidates: int
    missing: int
    configured: SweepRow | None
    best: SweepRow | None
    top: list[SweepRow]
    curves: list[Curve]


def labelled_pairs(store: StoreCore, labels: Sequence[Label]) -> tuple[dict[tuple[str, str], ScoredPair], int,
                                                                  set[tuple[str, str]]]:
    """The labelled pairs that are candidates, with their measures; how many labelled ids are missing; and the
    labelled pairs of exact copies of texts without words (rule 0 of `esdedup.match.rule`: duplicates under
    every setting, with no measures)."""
    config = store.config
    t = Thresholds.from_config(config)
    ids = sorted({x for lab in labels for x in (lab.a, lab.b)})
    docs = {}
    for lo in range(0, len(ids), GET_BATCH):
        docs.update(store.get(ids[lo:lo + GET_BATCH]))
    found: dict[tuple[str, str], ScoredPair] = {}
    exact: set[tuple[str, str]] = set()
    for lab in labels:
        a, b = docs.get(lab.a), docs.get(lab.b)
        if a is not None and b is not None and exact_copies(a.empty, a.content_sha1, [b]):
            exact.add(lab.key)
        if a is None or b is None or a.empty or b.empty:
            continue
        e = explain(a, b, config, t)
        if not (e.shared_bands or e.shared_lsh):
            continue
        found[lab.key] = ScoredPair(lab.key[0], lab.key[1], e.hamming if e.hamming is not None else 1 << 20,
                                    e.cosine if e.cosine is not None else float("nan"), e.path != "simhash",
                                    e.jaccard if e.path == "n-gram" else None,
                                    e.containment if e.path == "n-gram" else None)
    return found, len(set(ids) - set(docs)), exact


def tune(store: StoreCore, labels: Sequence[Label]) -> TuningReport:
    config = store.config
    if not labels:
        return TuningReport(0, 0, 0, 0, None, None, [], [])
    found, missing, exact = labelled_pairs(store, labels)
    cands = LabelledCandidates(labels, found, exact)
    rows = sweep(cands, default_grid(config))
    own = config_setting(config)
    configured = next(r for r in rows if r.setting == own)
    # The index's own setting stays the best while no other scores higher: a tie is no reason to change.
    best = configured if _rank(configured) >= _rank(rows[0]) else rows[0]
    return TuningReport(len(labels), sum(lab.label for lab in labels), len(found), missing, configured, best,
                        rows[:5], _curves(cands, config))


def _rank(row: SweepRow) -> tuple[float, float]:
    return (row.overall.f1, row.overall.precision)


def _curves(cands: LabelledCandidates, config: FingerprintConfig) -> list[Curve]:
    own = config_setting(config)
    axes: list[tuple[str, list[float | int | None]]] = [
        ("jaccard", [round(0.1 * i, 1) for i in range(1, 11)]),
        ("containment", [round(0.1 * i, 1) for i in range(1, 11)]),
        ("hamming_k", list(range(config.hamming_k + 1))),
        ("cosine", [round(0.5 + 0.05 * i, 2) for i in range(11)]),
    ]
    out = []
    for name, values in axes:
        scores = []
        for v in values:
            change: dict[str, Any] = {name: v}
            scores.append(cands.scores(cands.predict(dataclasses.replace(own, **change))))
        out.append(Curve(name, values, scores))
    return out
