"""A labelled near-duplicate benchmark made from any real corpus (`esdedup synth`).

For each sampled source document the generator writes the source and a few *variants*, each made by one
recipe of edits at stated rates:

=============  ==============================================================================================
recipe         what changes
=============  ==============================================================================================
``chars``      ``char_rate`` of the characters replaced, deleted or inserted (characters of the corpus)
``words``      ``word_rate`` of the words (jieba) deleted, duplicated or swapped with their neighbour
``sentences``  ``sentence_rate`` of the sentences deleted, and as many sentences of other documents inserted
``reorder``    ``reorder_rate`` of the sentences moved to another place
``affix``      a prefix or a suffix from another document, ``affix_rate`` (min, max) of the length added:
               the variant contains the source ("long contains short")
``convert``    Simplified <-> Traditional Chinese (OpenCC), whichever the source is not, plus ``noise``
``noise``      ``noise_rate`` of the punctuation changed (full/half width, dropped) and spaces inserted
``mixed``      ``chars`` + ``noise`` + one of ``sentences`` / ``affix``, each at its rate
=============  ==============================================================================================

Labels (LABELS.jsonl, one ``{"a", "b", "label", "kind"}`` per line):

* ``label 1``: a source and each of its variants (``kind`` = the recipe);
* ``label 0``: pairs of documents from different sources: for every source ``negatives`` pairs, half of
  them *hard* (the other source of the same length class sharing the most character bigrams among
  ``hard_pool`` random ones, or a variant of it) and half random.

Sources are chosen so that no two are near-duplicates themselves (character-bigram Jaccard and
containment below ``source_max_overlap``), which is what makes the label-0 pairs true negatives.
Everything is a pure function of the input documents and the seed.
"""
from __future__ import annotations

import random
import re
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any

from esdedup.errors import ConfigError
from esdedup.util.fieldtypes import check_fields

RECIPES = ("chars", "words", "sentences", "reorder", "affix", "convert", "noise", "mixed")
_SENT = re.compile(r"(?<=[。！？；!?;\n])")
_PUNCT_SWAP = {"，": ",", ",": "，", "。": ".", ".": "。", "：": ":", ":": "：", "；": ";", ";": "；",
               "！": "!", "!": "！", "？": "?", "?": "？", "、": ",", "（": "(", "(": "（", "）": ")", ")": "）"}
_PUNCT = set(_PUNCT_SWAP) | set("“”‘’《》「」『』…—")


@dataclass(frozen=True)
class SynthOptions:
    """How many documents to make and how strong each kind of edit is (shares of the text)."""

    sources: int = 1000
    variants: int = 2
    recipes: tuple[str, ...] = RECIPES
    char_rate: float = 0.03
    word_rate: float = 0.05
    sentence_rate: float = 0.10
    reorder_rate: float = 0.20
    affix_rate: tuple[float, float] = (0.10, 0.40)
    noise_rate: float = 0.10
    negatives: int = 4
    hard_pool: int = 40
    short_max: int = 100
    long_min: int = 2000
    source_max_overlap: float = 0.3
    seed: int = 0

    def __post_init__(self) -> None:
        check_fields(self, owner="SynthOptions field")
        bad = [r for r in self.recipes if r not in RECIPES]
        if bad or not self.recipes:
            raise ConfigError(f"unknown recipe(s) {bad}; choose from {', '.join(RECIPES)}")
        for name in ("char_rate", "word_rate", "sentence_rate", "reorder_rate", "noise_rate",
                     "source_max_overlap"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise ConfigError(f"{name} must be between 0 and 1, got {v}")
        lo, hi = self.affix_rate
        if not 0.0 <= lo <= hi:
            raise ConfigError(f"affix_rate must be (min, max) with 0 <= min <= max, got {self.affix_rate}")
        if self.sources < 2 or self.variants < 1 or self.negatives < 0:
            raise ConfigError("need sources >= 2, variants >= 1 and negatives >= 0")


@dataclass
class Benchmark:
    """What `make_benchmark` returns: documents (sources and variants) and labelled pairs."""

    docs: list[dict[str, Any]] = field(default_factory=list)
    labels: list[dict[str, Any]] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)

    def stats(self) -> dict[str, Any]:
        by_class = Counter(d["class"] for d in self.docs)
        pos = Counter(lab["kind"] for lab in self.labels if lab["label"] == 1)
        neg = Counter(lab["kind"] for lab in self.labels if lab["label"] == 0)
        return {"documents": len(self.docs), "by_class": dict(by_class), "positives": sum(pos.values()),
                "negatives": sum(neg.values()), "positives_by_recipe": dict(pos), "negatives_by_kind": dict(neg)}


def length_class(text: str, short_max: int = 100, long_min: int = 2000) -> str:
    n = len(text)
    return "short" if n < short_max else "long" if n >= long_min else "medium"


# -- text helpers ------------------------------------------------------------------------------------
def sentences(text: str) -> list[str]:
    """Split after sentence-ending punctuation (Chinese and ASCII) and newlines; pieces join back to text."""
    return [s for s in _SENT.split(text) if s]


_CLAUSE = re.compile(r"(?<=[，,、。！？；!?;\n])")


def _units(text: str) -> list[str]:
    """Sentences, or clauses when the text has fewer than four sentences."""
    sents = sentences(text)
    if len(sents) < 4:
        sents = [c for c in _CLAUSE.split(text) if c] or [text]
    return sents


def _sketch(grams: set[str]) -> set[str]:
    """The bigrams themselves, or for a long text the eighth of them whose CRC-32 is 0 mod 8 (the same
    eighth of every text, so overlaps of sketches estimate overlaps of the full sets)."""
    if len(grams) <= 400:
        return grams
    return {g for g in grams if zlib.crc32(g.encode("utf-8")) % 8 == 0}


def bigrams(text: str) -> set[str]:
    chars = [c for c in text if c.isalnum()]
    return {chars[i] + chars[i + 1] for i in range(len(chars) - 1)}


@lru_cache(maxsize=2)
def _converter(config: str):
    import opencc

    return opencc.OpenCC(config)


def convert_script(text: str) -> tuple[str, str]:
    """(converted text, direction): Traditional -> Simplified when the text has Traditional characters,
    else Simplified -> Traditional."""
    simplified = _converter("t2s").convert(text)
    if simplified != text:
        return simplified, "t2s"
    return _converter("s2t").convert(text), "s2t"


def _default_cut(text: str) -> list[str]:
    import jieba

    return jieba.lcut(text)


class _Editor:
    """The edit operations, all driven by one random generator."""

    def __init__(self, rng: random.Random, opts: SynthOptions, alphabet: str, donors: Sequence[str],
                 cut: Callable[[str], list[str]]) -> None:
        self.rng, self.opts, self.alphabet, self.donors, self.cut = rng, opts, alphabet, donors, cut

    def _count(self, n: int, rate: float) -> int:
        """round(n * rate), with the fraction decided at random (so short texts still get edits)."""
        x = n * rate
        k = int(x)
        return k + (1 if self.rng.random() < x - k else 0)

    def chars(self, text: str) -> str:
        chars = list(text)
        for _ in range(max(1, self._count(len(chars), self.opts.char_rate))):
            if not chars:
                break
            i = self.rng.randrange(len(chars))
            op = self.rng.random()
            if op < 0.5:
                chars[i] = self.rng.choice(self.alphabet)
            elif op < 0.75 and len(chars) > 1:
                del chars[i]
            else:
                chars.insert(i, self.rng.choice(self.alphabet))
        return "".join(chars)

    def words(self, text: str) -> str:
        words = self.cut(text)
        for _ in range(max(1, self._count(len(words), self.opts.word_rate))):
            if len(words) < 2:
                break
            i = self.rng.randrange(len(words) - 1)
            op = self.rng.random()
            if op < 0.4:
                del words[i]
            elif op < 0.7:
                words.insert(i, words[i])
            else:
                words[i], words[i + 1] = words[i + 1], words[i]
        return "".join(words)

    def sentences(self, text: str) -> str:
        """Delete or insert (a sentence of another document) ``sentence_rate`` of the sentences, at
        least one; a text of fewer than four sentences is cut at clauses (commas) instead."""
        sents = _units(text)
        for _ in range(max(1, self._count(len(sents), self.opts.sentence_rate))):
            if len(sents) > 1 and self.rng.random() < 0.5:
                del sents[self.rng.randrange(len(sents))]
            else:
                donor = _units(self.rng.choice(self.donors))
                sents.insert(self.rng.randrange(len(sents) + 1), self.rng.choice(donor))
        return "".join(sents)

    def reorder(self, text: str) -> str:
        sents = _units(text)
        if len(sents) < 2:
            return self.words(text)
        for _ in range(max(1, self._count(len(sents), self.opts.reorder_rate))):
            s = sents.pop(self.rng.randrange(len(sents)))
            sents.insert(self.rng.randrange(len(sents) + 1), s)
        return "".join(sents)

    def affix(self, text: str) -> tuple[str, str]:
        lo, hi = self.opts.affix_rate
        want = max(1, int(len(text) * self.rng.uniform(lo, hi)))
        extra = ""
        while len(extra) < want:
            extra += self.rng.choice(self.donors)
        extra = extra[:want]
        if self.rng.random() < 0.5:
            return extra + text, "prefix"
        return text + extra, "suffix"

    def noise(self, text: str) -> str:
        out = []
        for ch in text:
            if ch in _PUNCT and self.rng.random() < self.opts.noise_rate * 4:
                r = self.rng.random()
                if r < 0.6 and ch in _PUNCT_SWAP:
                    out.append(_PUNCT_SWAP[ch])
                elif r < 0.8:
                    continue  # dropped
                else:
                    out.append(ch + ch)
                continue
            out.append(ch)
            if self.rng.random() < self.opts.noise_rate / 4:
                out.append(self.rng.choice((" ", "  ", "\n", "\u3000")))
        return "".join(out)

    def apply(self, recipe: str, text: str) -> tuple[str, list[str]]:
        if recipe == "affix":
            out, where = self.affix(text)
            return out, [f"affix:{where}"]
        if recipe == "convert":
            out, direction = convert_script(text)
            return self.noise(out), [f"convert:{direction}", "noise"]
        if recipe == "mixed":
            out = self.noise(self.chars(text))
            if self.rng.random() < 0.5:
                return self.sentences(out), ["chars", "noise", "sentences"]
            out, where = self.affix(out)
            return out, ["chars", "noise", f"affix:{where}"]
        return getattr(self, recipe)(text), [recipe]


# -- choosing sources --------------------------------------------------------------------------------
def _pick_sources(texts: Sequence[str], opts: SynthOptions, rng: random.Random) -> list[int]:
    """Indexes of up to ``opts.sources`` documents, no two of them near-duplicates, short and long ones
    in proportion to what the corpus offers (medium ones are left out when both kinds exist)."""
    classes = [length_class(t, opts.short_max, opts.long_min) for t in texts]
    pools: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(classes):
        if texts[i].strip():
            pools[c].append(i)
    wanted = [c for c in ("short", "long") if pools[c]] or [c for c in pools if pools[c]]
    order: list[int] = []
    for c in wanted:
        idx = pools[c][:]
        rng.shuffle(idx)
        order.extend(idx)
    # Interleave the classes so a small --sources still gets both.
    per_class = {c: [i for i in order if classes[i] == c] for c in wanted}
    total = sum(len(v) for v in per_class.values())
    quota = {c: max(1, round(opts.sources * len(v) / total)) for c, v in per_class.items()} if total else {}
    if len(wanted) == 2:
        quota = {c: max(1, opts.sources // 2) for c in wanted}
    grams: dict[int, set[str]] = {}
    kept: list[int] = []
    for c in wanted:
        index: dict[str, list[int]] = defaultdict(list)  # bigram -> kept sources of this class
        n_kept = 0
        for i in per_class[c]:
            if n_kept >= quota.get(c, 0):
                break
            g = _sketch(bigrams(texts[i]))
            if len(g) < 2:
                continue
            shared: Counter[int] = Counter()
            for b in g:
                shared.update(index.get(b, ()))
            if any(n / len(g | grams[j]) >= opts.source_max_overlap or n / min(len(g), len(grams[j])) >= 0.5
                   for j, n in shared.items()):
                continue
            for b in g:
                index[b].append(i)
            grams[i] = g
            kept.append(i)
            n_kept += 1
    return kept


# -- the benchmark -----------------------------------------------------------------------------------
def make_benchmark(documents: Iterable[dict[str, Any] | str], options: SynthOptions | None = None, *,
                   cut: Callable[[str], list[str]] | None = None) -> Benchmark:
    """Make documents and labelled pairs from real ``documents`` (dicts with ``text`` and optionally
    ``id``, or plain strings). Deterministic for a given input and ``options.seed``."""
    opts = options or SynthOptions()
    rng = random.Random(opts.seed)
    records = [{"text": d} if isinstance(d, str) else d for d in documents]
    texts = [str(r.get("text") or "") for r in records]
    if len(texts) < 2:
        raise ConfigError("synth needs at least two source documents")
    chosen = _pick_sources(texts, opts, rng)
    if len(chosen) < 2:
        raise ConfigError("fewer than two usable, mutually distinct source documents")
    alphabet = "".join(sorted({ch for i in chosen for ch in texts[i] if ch.isalnum()})) or "的"
    donors = [texts[i] for i in range(len(texts)) if texts[i].strip()]
    editor = _Editor(rng, opts, alphabet, donors, cut or _default_cut)
    bench = Benchmark(options=asdict(opts))
    family: dict[str, list[str]] = {}
    cls_of: dict[str, str] = {}
    for n, i in enumerate(chosen):
        src_id = f"s{n:06d}"
        cls = length_class(texts[i], opts.short_max, opts.long_min)
        orig = records[i].get("id")
        doc = {"id": src_id, "text": texts[i], "family": src_id, "class": cls, "recipe": "source"}
        if orig is not None:
            doc["source_id"] = str(orig)
        bench.docs.append(doc)
        family[src_id] = [src_id]
        cls_of[src_id] = cls
        for v in range(opts.variants):
            recipe = opts.recipes[(n * opts.variants + v) % len(opts.recipes)]
            text, ops = editor.apply(recipe, texts[i])
            if text == texts[i]:  # an edit that changed nothing (rare): fall back to character edits
                text, ops = editor.chars(texts[i]), ["chars"]
            vid = f"{src_id}v{v}"
            bench.docs.append({"id": vid, "text": text, "family": src_id, "class": cls, "recipe": recipe,
                               "ops": ops})
            family[src_id].append(vid)
            bench.labels.append({"a": src_id, "b": vid, "label": 1, "kind": recipe, "class": cls})
    _add_negatives(bench, family, cls_of, {f"s{n:06d}": texts[i] for n, i in enumerate(chosen)}, opts, rng)
    return bench


def _add_negatives(bench: Benchmark, family: dict[str, list[str]], cls_of: dict[str, str],
                   source_text: dict[str, str], opts: SynthOptions, rng: random.Random) -> None:
    ids = sorted(family)
    by_class: dict[str, list[str]] = defaultdict(list)
    for s in ids:
        by_class[cls_of[s]].append(s)
    grams = {s: bigrams(t) for s, t in source_text.items()}
    seen: set[tuple[str, str]] = set()

    def add(a: str, b: str, kind: str, cls: str) -> None:
        key = (min(a, b), max(a, b))
        if a == b or key in seen:
            return
        seen.add(key)
        bench.labels.append({"a": key[0], "b": key[1], "label": 0, "kind": kind, "class": cls})

    for s in ids:
        cls = cls_of[s]
        peers = [p for p in by_class[cls] if p != s]
        if not peers:
            continue
        n_hard = opts.negatives // 2
        pool = rng.sample(peers, min(len(peers), opts.hard_pool))
        pool.sort(key=lambda p: (-len(grams[s] & grams[p]), p))
        for p in pool[:n_hard]:
            add(rng.choice(family[s]), rng.choice(family[p]), "hard", cls)
        for _ in range(opts.negatives - n_hard):
            p = rng.choice(peers)
            add(rng.choice(family[s]), rng.choice(family[p]), "random", cls)


def write_jsonl(rows: Iterable[dict[str, Any]], path) -> int:
    import json

    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
            n += 1
    return n
