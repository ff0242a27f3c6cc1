"""esdedup.quality.synth: determinism, what each recipe does, and that the labels say what they should."""
from __future__ import annotations

import random
from collections import Counter

import pytest

from esdedup.errors import ConfigError
from esdedup.quality.synth import (
    RECIPES,
    SynthOptions,
    bigrams,
    convert_script,
    length_class,
    make_benchmark,
    sentences,
)

ALPHABET = "".join(chr(c) for c in range(0x4E00, 0x4E00 + 4000))


def _text(rng: random.Random, n: int) -> str:
    out = []
    for j in range(n):
        out.append(rng.choice(ALPHABET))
        if j % 11 == 10:
            out.append("，" if rng.random() < 0.6 else "。")
    return "".join(out) + "。"


@pytest.fixture(scope="module")
def corpus() -> list[dict]:
    rng = random.Random(42)
    short = [{"id": f"s{i}", "text": _text(rng, rng.randint(30, 80))} for i in range(80)]
    long_ = [{"id": f"l{i}", "text": _text(rng, rng.randint(2100, 2600))} for i in range(30)]
    medium = [{"id": f"m{i}", "text": _text(rng, 500)} for i in range(10)]
    return short + long_ + medium


def _cut(text: str) -> list[str]:  # two-character "words": keeps the tests free of jieba's start-up
    return [text[i:i + 2] for i in range(0, len(text), 2)]


def test_same_input_and_seed_give_the_same_benchmark(corpus):
    a = make_benchmark(corpus, SynthOptions(sources=40, seed=3), cut=_cut)
    b = make_benchmark(corpus, SynthOptions(sources=40, seed=3), cut=_cut)
    c = make_benchmark(corpus, SynthOptions(sources=40, seed=4), cut=_cut)
    assert a.docs == b.docs and a.labels == b.labels
    assert a.docs != c.docs


def test_labels_are_correct(corpus):
    opts = SynthOptions(sources=40, variants=3, negatives=4, seed=1)
    bench = make_benchmark(corpus, opts, cut=_cut)
    docs = {d["id"]: d for d in bench.docs}
    assert len(docs) == len(bench.docs)  # ids are unique
    sources = [d for d in bench.docs if d["recipe"] == "source"]
    assert len(sources) == 40
    assert Counter(d["class"] for d in sources) == {"short": 20, "long": 20}  # medium texts are left out
    assert all(d["class"] == length_class(d["text"]) for d in sources)
    pos = [lab for lab in bench.labels if lab["label"] == 1]
    neg = [lab for lab in bench.labels if lab["label"] == 0]
    assert len(pos) == 40 * 3 and len(neg) > 40 * 3
    for lab in pos:  # a source and one of its own variants
        a, b = docs[lab["a"]], docs[lab["b"]]
        assert a["recipe"] == "source" and b["family"] == a["id"] and b["recipe"] == lab["kind"]
        assert lab["class"] == a["class"]
        assert b["text"] != a["text"]
    for lab in neg:  # two documents of different sources
        assert docs[lab["a"]]["family"] != docs[lab["b"]]["family"]
        assert lab["a"] < lab["b"]
    assert {lab["kind"] for lab in neg} == {"hard", "random"}
    pairs = [(lab["a"], lab["b"]) for lab in bench.labels]
    assert len(pairs) == len(set(pairs))
    # every recipe was used, in turn
    assert {lab["kind"] for lab in pos} == set(RECIPES)
    # sources are not near-duplicates of each other
    grams = [bigrams(d["text"]) for d in sources]
    for i, g in enumerate(grams):
        for h in grams[i + 1:]:
            assert len(g & h) / len(g | h) < opts.source_max_overlap


def test_recipes_do_what_they_say(corpus):
    bench = make_benchmark(corpus, SynthOptions(sources=48, variants=2, seed=5, affix_rate=(0.2, 0.3)), cut=_cut)
    docs = {d["id"]: d for d in bench.docs}
    seen = set()
    for lab in (lab for lab in bench.labels if lab["label"] == 1):
        src, var = docs[lab["a"]]["text"], docs[lab["b"]]
        text, recipe = var["text"], var["recipe"]
        seen.add(recipe)
        if recipe == "affix":  # long contains short: the whole source survives, 20-30 % is added
            assert src in text
            assert 1.19 * len(src) <= len(text) <= 1.31 * len(src) + 1
        elif recipe == "reorder":
            assert sorted(sentences(text)) == sorted(sentences(src)) or Counter(text) == Counter(src)
        elif recipe == "convert":
            assert var["ops"][0] in ("convert:t2s", "convert:s2t")
        elif recipe == "chars":  # about char_rate of the characters changed: most bigrams survive
            assert len(bigrams(src) & bigrams(text)) / len(bigrams(src)) > 0.7
        elif recipe == "noise":  # only punctuation and whitespace change
            assert "".join(ch for ch in text if ch.isalnum()) == "".join(ch for ch in src if ch.isalnum())
    assert seen == set(RECIPES)


def test_convert_script_goes_both_ways():
    simplified, direction = convert_script("臺灣居民明日起持台胞證可通關")
    assert direction == "t2s" and simplified == "台湾居民明日起持台胞证可通关"
    traditional, direction = convert_script("台湾居民明日起持台胞证可通关")
    assert direction == "s2t" and traditional != "台湾居民明日起持台胞证可通关"


def test_rates_scale_the_edits(corpus):
    def changed(rate: float) -> float:
        bench = make_benchmark(corpus, SynthOptions(sources=30, variants=1, recipes=("chars",), char_rate=rate,
                                                    seed=2), cut=_cut)
        docs = {d["id"]: d["text"] for d in bench.docs}
        lost = [1 - len(bigrams(docs[lab["a"]]) & bigrams(docs[lab["b"]])) / len(bigrams(docs[lab["a"]]))
                for lab in bench.labels if lab["label"] == 1]
        return sum(lost) / len(lost)

    assert changed(0.01) < changed(0.05) < changed(0.15)


def test_bad_options_are_rejected(corpus):
    with pytest.raises(ConfigError):
        SynthOptions(recipes=("typo",))
    with pytest.raises(ConfigError):
        SynthOptions(char_rate=1.5)
    with pytest.raises(ConfigError):
        SynthOptions(affix_rate=(0.5, 0.1))
    with pytest.raises(ConfigError):
        make_benchmark([{"text": "只有一篇"}], SynthOptions(sources=5))
