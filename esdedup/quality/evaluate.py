"""Quality of near-duplicate detection against labelled pairs (`esdedup eval`).

Labels are JSON lines ``{"a": id, "b": id, "label": 0 or 1}`` (the JSON integer, `is_label`: ``1.0`` and
``true`` are refused; optional ``kind`` and ``class``, as `esdedup.quality.synth` writes them). A labelled pair
is *predicted* a duplicate when the store's all-pairs search finds it as a candidate (shared band / LSH key, or
probed band key) and the rule (`esdedup.match.rule`) accepts it under a setting of the thresholds. Precision,
recall and F1 are computed over the labelled pairs only (pairs nobody labelled count for nothing), overall and
per length class.

The scoring functions are pure (sets, arrays, dataclasses in; numbers out); `run` is the one function that
touches a store: it indexes the documents (optional), collects every candidate pair once with all its
measures, and sweeps a grid of thresholds over them.
"""
from __future__ import annotations

import json
import time
import uuid
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np

from esdedup.errors import ConfigError, InputError
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.match.joins import JoinedCrowds
from esdedup.match.pairs import ScoredPair, crowded_values, empty_copy_pairs, lsh_in_memory, scored_pairs
from esdedup.match.rule import decide
from esdedup.match.thresholds import ThresholdOverrides, Thresholds
from esdedup.store.base import Store
from esdedup.util.regular import open_binary

#: Grid swept by default (each list is one axis; ``None`` switches the test off).
DEFAULT_COSINES = (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)
DEFAULT_JACCARDS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
DEFAULT_CONTAINMENTS = (None, 0.7, 0.8, 0.9)


@dataclass(frozen=True)
class Label:
    a: str
    b: str
    label: int
    kind: str = ""
    cls: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return pair_key(self.a, self.b)


def is_label(value: object) -> bool:
    """Whether ``value`` is a label: the integer 0 or 1, as every writer here writes it (``int()`` would read
    1.7, 1.0, "1" or true as one without a word)."""
    return type(value) is int and value in (0, 1)


def pair_key(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a <= b else (b, a)


def parse_labels(lines: Iterable[str], *, source: str = "labels") -> list[Label]:
    """Labels from JSON lines; the same pair given twice must carry the same label."""
    out: dict[tuple[str, str], Label] = {}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            a, b, lab = str(d["a"]), str(d["b"]), d["label"]
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(f"{source} line {n}: expected {{\"a\", \"b\", \"label\"}}: {exc}", source=source,
                             location=f"line {n}") from None
        if not is_label(lab) or a == b:
            raise InputError(f"{source} line {n}: label must be 0 or 1 (a JSON integer: 1, not 1.0 or true) "
                             f"between two different ids, got label {lab!r}", source=source, location=f"line {n}")
        item = Label(a, b, lab, str(d.get("kind", "")), str(d.get("class", "")))
        prev = out.get(item.key)
        if prev is not None and prev.label != lab:
            raise InputError(f"{source} line {n}: pair {a} / {b} is labelled both 0 and 1", source=source,
                             location=f"line {n}")
        out.setdefault(item.key, item)
    return list(out.values())


def read_labels(path: str | Path) -> list[Label]:
    """The labels of a labels file (UTF-8 JSON lines, a byte-order mark allowed).

    Raises:
        ConfigError: the file is not UTF-8 text (it names the line).
        InputError: the file cannot be read (a folder, a FIFO, no permission) or a line is not a label.
    """
    try:
        with open_binary(path) as fh:
            data = fh.read()
    except OSError as exc:
        raise InputError(f"cannot read labels {path}: {exc.strerror}", source=str(path)) from exc
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise ConfigError(f"labels file {path} is not UTF-8 text (line {line}, byte {exc.start}): a labels file "
                          "is JSON lines in UTF-8") from None
    return parse_labels(text.split("\n"), source=str(path))  # not splitlines(): U+2028 may stand in an id


# -- scores ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Scores:
    """Confusion counts over labelled pairs, and the measures made from them."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "precision": round(self.precision, 4), "recall": round(self.recall, 4),
                "f1": round(self.f1, 4)}


def score(predicted: Iterable[tuple[str, str]], labels: Sequence[Label]) -> Scores:
    """Confusion counts of a set of predicted duplicate pairs (any order within a pair) over the labels.

    >>> labs = [Label("a", "b", 1), Label("a", "c", 0), Label("b", "c", 1)]
    >>> score({("b", "a"), ("a", "c")}, labs)
    Scores(tp=1, fp=1, fn=1, tn=0)
    """
    pred = {pair_key(a, b) for a, b in predicted}
    tp = fp = fn = tn = 0
    for lab in labels:
        hit = lab.key in pred
        if lab.label:
            tp, fn = tp + hit, fn + (not hit)
        else:
            fp, tn = fp + hit, tn + (not hit)
    return Scores(tp, fp, fn, tn)


def score_by_class(predicted: Iterable[tuple[str, str]], labels: Sequence[Label]) -> dict[str, Scores]:
    pred = {pair_key(a, b) for a, b in predicted}
    classes = sorted({lab.cls for lab in labels})
    return {c: score(pred, [lab for lab in labels if lab.cls == c]) for c in classes}


#: One point of the sweep: a set of thresholds.
Setting = Thresholds


def default_grid(config: FingerprintConfig, *, cosines: Sequence[float | None] = DEFAULT_COSINES,
                 jaccards: Sequence[float | None] = DEFAULT_JACCARDS,
                 containments: Sequence[float | None] = DEFAULT_CONTAINMENTS,
                 hammings: Sequence[int | None] | None = None) -> list[Setting]:
    """Every combination of the axes; Hamming from 0 to the index's ``hamming_k`` by default (band lookups
    guarantee nothing beyond it). The config's own setting is always included."""
    hs = list(hammings) if hammings is not None else list(range(config.hamming_k + 1))
    # Hamming and cosine both off is no rule at all (`Thresholds` refuses it): that corner is left out.
    grid = [Setting(h, c, j, ct) for h, c, j, ct in product(hs, cosines, jaccards, containments)
            if h is not None or c is not None]
    own = config_setting(config)
    if own not in grid:
        grid.append(own)
    return grid


def config_setting(config: FingerprintConfig) -> Setting:
    return Setting(config.hamming_k, config.cosine_threshold, config.jaccard_threshold,
                   config.containment_threshold or None)


class LabelledCandidates:
    """The labelled pairs as arrays, with the measures of those that were candidates (vectorised sweep)."""

    def __init__(self, labels: Sequence[Label], found: Mapping[tuple[str, str], ScoredPair],
                 exact: Collection[tuple[str, str]] = ()) -> None:
        """``exact``: pairs of exact copies of texts without words (`esdedup.match.pairs.empty_copy_pairs`),
        duplicates under every setting (rule 0 of `esdedup.match.rule`), which have no measures to sweep."""
        self.labels = list(labels)
        n = len(self.labels)
        self.exact = np.array([lab.key in exact for lab in self.labels], dtype=bool)
        self.y = np.array([lab.label for lab in self.labels], dtype=bool)
        self.cls = np.array([lab.cls for lab in self.labels], dtype=object)
        self.found = np.zeros(n, dtype=bool)
        self.ham = np.full(n, 1 << 20, dtype=np.int64)
        self.cos = np.zeros(n)
        self.ngram = np.zeros(n, dtype=bool)
        self.jac = np.full(n, np.nan)
        self.cont = np.full(n, np.nan)
        for i, lab in enumerate(self.labels):
            p = found.get(lab.key)
            if p is None:
                continue
            self.found[i] = True
            self.cos[i], self.ngram[i] = p.cosine, p.ngram
            if p.hamming is not None:  # None: a text without SimHash, judged on its n-grams
                self.ham[i] = p.hamming
            if p.jaccard is not None:
                self.jac[i] = p.jaccard
            if p.containment is not None:
                self.cont[i] = p.containment

    def predict(self, s: Setting) -> np.ndarray:
        """Which labelled pairs the rule (`esdedup.match.rule.decide`) accepts under ``s``."""
        signatures = np.where(self.ngram, self.jac, np.nan)
        return self.exact | (self.found & decide(s, hamming=self.ham, cosine=self.cos, jaccard=signatures,
                                                 containment=np.where(self.ngram, self.cont, np.nan),
                                                 legacy_short=self.ngram & np.isnan(self.jac)))

    def scores(self, pred: np.ndarray, mask: np.ndarray | None = None) -> Scores:
        y = self.y if mask is None else self.y[mask]
        p = pred if mask is None else pred[mask]
        return Scores(int((p & y).sum()), int((p & ~y).sum()), int((~p & y).sum()), int((~p & ~y).sum()))

    def classes(self) -> list[str]:
        return sorted({str(c) for c in self.cls})


@dataclass
class SweepRow:
    setting: Setting
    overall: Scores
    by_class: dict[str, Scores]

    def to_dict(self) -> dict[str, Any]:
        return {"setting": self.setting.to_dict(), **self.overall.to_dict(),
                "by_class": {c: s.to_dict() for c, s in self.by_class.items()}}


def sweep(cands: LabelledCandidates, settings: Sequence[Setting]) -> list[SweepRow]:
    """Scores of every setting, best F1 first (ties: higher precision, then the smaller setting)."""
    rows = []
    classes = cands.classes()
    masks = {c: cands.cls == c for c in classes}
    for s in settings:
        pred = cands.predict(s)
        by = {c: cands.scores(pred, m) for c, m in masks.items()} if len(classes) > 1 else {}
        rows.append(SweepRow(s, cands.scores(pred), by))
    rows.sort(key=lambda r: (-r.overall.f1, -r.overall.precision, _order(r.setting)))
    return rows


def _order(s: Setting) -> tuple:
    return tuple(-1 if v is None else v for v in (s.hamming_k, s.cosine, s.jaccard, s.containment))


def best_per_class(rows: Sequence[SweepRow]) -> dict[str, SweepRow]:
    """For each length class, the row with the best F1 in that class."""
    out: dict[str, SweepRow] = {}
    for r in rows:
        for c, s in r.by_class.items():
            cur = out.get(c)
            if cur is None or (s.f1, s.precision) > (cur.by_class[c].f1, cur.by_class[c].precision):
                out[c] = r
    return out


# -- running over a store ----------------------------------------------------------------------------
@dataclass
class EvalReport:
    index: str
    backend: str
    documents: int
    labelled: int
    positives: int
    candidates: int
    config: dict[str, Any]
    configured: SweepRow
    rows: list[SweepRow]
    seconds: dict[str, float] = field(default_factory=dict)
    missing_ids: int = 0
    crowded: list[tuple[str, int]] = field(default_factory=list)

    @property
    def best(self) -> SweepRow:
        return self.rows[0]

    def to_dict(self, top: int = 10) -> dict[str, Any]:
        return {"index": self.index, "backend": self.backend, "documents": self.documents,
                "labelled_pairs": self.labelled, "positives": self.positives,
                "candidate_pairs": self.candidates, "missing_ids": self.missing_ids,
                "config": self.config, "configured": self.configured.to_dict(), "best": self.best.to_dict(),
                "best_per_class": {c: r.to_dict() for c, r in best_per_class(self.rows).items()},
                "top": [r.to_dict() for r in self.rows[:top]], "seconds": self.seconds,
                "crowded_band_values": self.crowded}


def temporary_index() -> str:
    """A fresh name for an evaluation's own index (`evaluate` with ``drop``)."""
    return f"esdedup-eval-{uuid.uuid4().hex[:10]}"


def evaluate(store: Store, labels: Sequence[Label], *, docs: Sequence[str | Path] = (),
             config: FingerprintConfig | None = None, hammings: Sequence[int | None] | None = None,
             cosines: Sequence[float | None] | None = None, jaccards: Sequence[float | None] | None = None,
             containments: Sequence[float | None] | None = None, drop: bool = False, max_bucket: int = 1000,
             workers: int = 0, id_field: str = "id", text_field: str = "text") -> EvalReport:
    """`run` over the grid of the thresholds given (`default_grid` of ``config`` when ``docs`` are indexed,
    else of the index's config; none given: `run`'s default grid). A value no `Thresholds` takes is refused
    before anything is indexed. ``drop``: the store is an evaluation's own index (`temporary_index`), dropped
    afterwards whatever happens."""
    axes = {"cosines": cosines, "jaccards": jaccards, "containments": containments}
    for threshold, values in zip(("cosine", "jaccard", "containment", "hamming_k"), [*axes.values(), hammings],
                                 strict=True):
        for value in values or ():
            ThresholdOverrides(**{threshold: value})  # an impossible value is refused before anything is indexed
    try:
        settings = None
        if any(v is not None for v in axes.values()) or hammings is not None:
            base = (config or FingerprintConfig()) if docs else store.open(None, create=False).config
            settings = default_grid(base, hammings=hammings, **{k: v for k, v in axes.items() if v is not None})
        return run(store, labels, docs=[str(d) for d in docs], config=config, settings=settings,
                   max_bucket=max_bucket, workers=workers, id_field=id_field, text_field=text_field)
    finally:
        if drop:
            store.drop()


def run(store: Store, labels: Sequence[Label], *, docs: Sequence[str | Path] = (),
        config: FingerprintConfig | None = None, settings: Sequence[Setting] | None = None,
        max_bucket: int = 1000, workers: int = 0, id_field: str = "id",
        text_field: str = "text") -> EvalReport:
    """Index ``docs`` (JSONL/CSV/TXT files, as `esdedup ingest` reads them) into ``store`` if given, then
    score every labelled pair under each setting (default: `default_grid`).

    With no ``docs`` the store must already hold the labelled documents."""
    from esdedup.ingest import IngestOptions, ingest

    if not labels:
        raise ConfigError("no labelled pairs to evaluate against")
    seconds: dict[str, float] = {}
    t0 = time.monotonic()
    if docs:
        summary = ingest([str(p) for p in docs], store, config,
                         IngestOptions(on_duplicate="index", workers=workers, id_field=id_field,
                                       text_field=text_field))
        if summary.error:
            raise ConfigError(f"indexing the documents failed: {summary.error}")
        seconds["index"] = round(time.monotonic() - t0, 3)
    else:
        store.open(config, create=False)
    store.refresh()
    cfg = store.config
    t1 = time.monotonic()
    wanted = {lab.key for lab in labels}
    found: dict[tuple[str, str], ScoredPair] = {}
    n_cand = 0
    crowded = JoinedCrowds()
    in_memory = lsh_in_memory(store)
    for p in scored_pairs(store, max_bucket=max_bucket, hamming_k=cfg.hamming_k, crowded=crowded,
                          in_memory=in_memory):
        n_cand += 1
        if (p.a, p.b) in wanted:
            found[(p.a, p.b)] = p
    copies = [(p.a, p.b) for p in empty_copy_pairs(store, max_bucket=max_bucket)]
    n_cand += len(copies)
    exact = set(copies) & wanted
    seconds["candidates"] = round(time.monotonic() - t1, 3)
    ids = {x for lab in labels for x in (lab.a, lab.b)}
    present = store.get(sorted(ids))
    cands = LabelledCandidates(labels, found, exact)
    grid = list(settings) if settings is not None else default_grid(cfg)
    own = config_setting(cfg)
    if own not in grid:
        grid.append(own)
    t2 = time.monotonic()
    rows = sweep(cands, grid)
    seconds["sweep"] = round(time.monotonic() - t2, 3)
    configured = next(r for r in rows if r.setting == own)
    return EvalReport(store.name, type(store).__name__, store.count(), len(labels),
                      sum(lab.label for lab in labels), n_cand, cfg.to_dict(), configured, rows, seconds,
                      missing_ids=len(ids - set(present)),
                      crowded=crowded_values(store, crowded, min_count=max_bucket + 1, in_memory=in_memory))
