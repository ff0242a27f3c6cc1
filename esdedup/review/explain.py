"""One pair of stored documents as the review page shows it: every measure, the rule's verdict, the measure
that decided it, the band and LSH keys the two share, and their texts' differences, character by character.

Pure: stored documents and texts in, dataclasses out. The verdict is always the rule's own
(`esdedup.match.measures.Measures.decide`); the deciding measure names which of the rule's tests settled it.
"""
from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field

from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.minhash import lsh_keys
from esdedup.match.measures import Measures, measure
from esdedup.match.thresholds import Thresholds
from esdedup.store.base import StoredDoc, band_keys, lsh_signature

__all__ = ["PairExplanation", "Segment", "char_diff", "explain", "lsh_keys_of"]

#: Characters of each text compared for the marked differences (the rest is shown unmarked): the matcher
#: grows with the square of the length on texts that share little.
DIFF_CHARS = 6000


@dataclass(frozen=True)
class PairExplanation:
    """What the rule read of a pair and what it said."""

    a: str
    b: str
    hamming: int | None
    cosine: float | None
    jaccard: float | None
    containment: float | None
    duplicate: bool
    #: "n-gram", "cosine" or "simhash": the part of the rule that applies to this pair.
    path: str
    #: The measure that settled the verdict ("jaccard", "containment", "hamming" or "cosine"), or None when no
    #: test could be answered.
    decided_by: str | None
    #: Each test the rule ran on this pair: measure name -> (value, threshold, passed).
    tests: dict[str, tuple[float, float, bool]] = field(default_factory=dict)
    shared_bands: tuple[str, ...] = ()
    shared_lsh: tuple[str, ...] = ()

    @property
    def decided_value(self) -> float | None:
        return None if self.decided_by is None else self.tests[self.decided_by][0]


def _number(x: float) -> float | None:
    return None if x is None or math.isnan(float(x)) else float(x)


def lsh_keys_of(doc: StoredDoc, config: FingerprintConfig) -> list[str]:
    """The MinHash LSH keys of ``doc`` (none without a signature of the config's length)."""
    sig = lsh_signature(doc, config)
    return [] if sig is None else lsh_keys(sig, config.minhash_bands, config.minhash_rows)


def explain(a: StoredDoc, b: StoredDoc, config: FingerprintConfig, t: Thresholds) -> PairExplanation:
    """The measures of ``a`` against ``b``, the rule's verdict under ``t`` and what decided it."""
    m = measure(a, [b], config)
    verdict = bool(m.decide(t)[0])
    ham = _number(m.hamming[0])
    # Documents of a config that stores no TF vector carry zeros in its place: no cosine to show.
    cos = _number(m.cosine[0]) if config.stores_vector else None
    jac, cont = _number(m.jaccard[0]), _number(m.containment[0])
    path, tests = _tests(m, t, ham, cos, jac, cont)
    return PairExplanation(a.id, b.id, None if ham is None else int(ham), cos, jac, cont, verdict, path,
                           _decider(path, tests, verdict), tests,
                           tuple(sorted(set(band_keys(a, config)) & set(band_keys(b, config)))),
                           tuple(sorted(set(lsh_keys_of(a, config)) & set(lsh_keys_of(b, config)))))


def _tests(m: Measures, t: Thresholds, ham: float | None, cos: float | None, jac: float | None,
           cont: float | None) -> tuple[str, dict[str, tuple[float, float, bool]]]:
    tests: dict[str, tuple[float, float, bool]] = {}
    if jac is not None and (t.jaccard is not None or t.containment is not None):
        if t.jaccard is not None:
            tests["jaccard"] = (jac, t.jaccard, jac >= t.jaccard)
        if t.containment is not None and cont is not None:
            tests["containment"] = (cont, t.containment, cont >= t.containment)
        return "n-gram", tests
    if (jac is not None or bool(m.legacy_short[0])) and t.cosine is not None:
        if cos is not None:
            tests["cosine"] = (cos, t.cosine, bool(m.decide(Thresholds(cosine=t.cosine))[0]))
        return "cosine", tests
    if ham is not None and t.hamming_k is not None:
        tests["hamming"] = (ham, float(t.hamming_k), ham <= t.hamming_k)
    if cos is not None and t.cosine is not None:
        tests["cosine"] = (cos, t.cosine, bool(m.decide(Thresholds(cosine=t.cosine))[0]))
    return "simhash", tests


def _decider(path: str, tests: dict[str, tuple[float, float, bool]], verdict: bool) -> str | None:
    """On the n-gram path one passing test is enough (the first that passes decides, else Jaccard failed
    first); on the SimHash path every test must pass (the first that fails decides, else the Hamming test)."""
    if not tests:
        return None
    if path == "n-gram":
        passed = [name for name, (_, _, ok) in tests.items() if ok]
        return passed[0] if verdict and passed else next(iter(tests))
    failed = [name for name, (_, _, ok) in tests.items() if not ok]
    return failed[0] if failed else next(iter(tests))


@dataclass(frozen=True)
class Segment:
    """A run of characters of one side of a diff: ``same`` as the other side, or not (marked)."""

    text: str
    same: bool


def char_diff(left: str, right: str, *, limit: int = DIFF_CHARS) -> tuple[list[Segment], list[Segment]]:
    """The two texts cut into runs of characters they share and runs only one of them has (the unit is one
    character, which suits Chinese); past ``limit`` characters each the rest is one unmarked run."""
    a, b = left[:limit], right[:limit]
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    out_a: list[Segment] = []
    out_b: list[Segment] = []
    for tag, i1, i2, j1, j2 in ops:
        same = tag == "equal"
        if i2 > i1:
            out_a.append(Segment(a[i1:i2], same))
        if j2 > j1:
            out_b.append(Segment(b[j1:j2], same))
    if len(left) > limit:
        out_a.append(Segment(left[limit:], True))
    if len(right) > limit:
        out_b.append(Segment(right[limit:], True))
    return out_a, out_b
