"""Text normalisation before tokenising: one function, pure, the same everywhere.

Steps, in order: drop lone surrogates, control characters and invisible format characters (they are not
text; keeping them would make the same article hash differently depending on how a crawler mangled it, and
some sites scatter zero-width spaces through their text against scrapers), Unicode NFKC (which also
maps full-width Latin letters, digits and punctuation to half-width), optional Traditional-to-Simplified
conversion (OpenCC ``t2s``), case folding, and collapsing runs of whitespace to one space.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import lru_cache

import numpy as np

_WS = re.compile(r"\s+")
#: Invisible characters of the BMP that only steer rendering (Unicode "default ignorable" format characters):
#: soft hyphen, combining grapheme joiner, Arabic letter mark, Khmer and Mongolian invisible vowels and
#: selectors, zero-width space/non-joiner/joiner, direction marks, embeddings, overrides and isolates, word
#: joiner and invisible operators, variation selectors, the byte order mark (zero-width no-break space).
#: Dropped, so "北\u200b京" is "北京". (config schema 3)
INVISIBLE_RANGES = ((0xAD, 0xAD), (0x34F, 0x34F), (0x61C, 0x61C), (0x17B4, 0x17B5), (0x180B, 0x180F),
                    (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF))
#: The same beyond the BMP: shorthand format controls, musical formatting controls, tag characters and the
#: ideographic variation selectors (a glyph variant of a CJK character is the same character).
INVISIBLE_WIDE_RANGES = ((0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF))
_WIDE_CLASS = "".join(rf"\U{lo:08x}-\U{hi:08x}" for lo, hi in INVISIBLE_WIDE_RANGES)  # regex class body
_WIDE_JUNK = re.compile(f"[{_WIDE_CLASS}]")
# C0/C1 controls except tab/newline/CR (which become whitespace), lone surrogates, invisible characters.
_JUNK = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff"
                   + "".join(rf"\u{lo:04x}-\u{hi:04x}" for lo, hi in INVISIBLE_RANGES) + _WIDE_CLASS + "]")


@lru_cache(maxsize=1)
def _t2s():
    import opencc

    return opencc.OpenCC("t2s")


def t2s_version() -> str | None:
    """The installed OpenCC's version, whose dictionaries decide what ``t2s`` converts; None when OpenCC is not
    installed."""
    try:
        import opencc
    except ImportError:
        return None
    version = getattr(opencc, "__version__", None)
    return version if isinstance(version, str) else None


def normalize(text: str, *, t2s: bool = False) -> str:
    """Return the canonical form of ``text`` that tokenising starts from.

    >>> normalize("ＨＥＬＬＯ，　世界！\\u0000")
    'hello, 世界!'
    >>> normalize("臺灣居民", t2s=True)
    '台湾居民'
    """
    if len(text) > _BLOCK_CHARS:  # a long text goes block by block, which bounds the temporary memory
        blocks = map(_clean_nfkc, _safe_blocks(text))
        if t2s:  # OpenCC converts phrases, which may straddle a block border: convert the whole text
            return _join_words([_t2s().convert("".join(blocks)).casefold()])
        return _join_words(b.casefold() for b in blocks)
    return _after_clean(_clean_nfkc(text), t2s)


def _after_clean(text: str, t2s: bool) -> str:
    """The steps of `normalize` after `_clean_nfkc`: t2s, case folding, whitespace."""
    if t2s:
        text = _t2s().convert(text)
    return _fold(text)


def normalize_many(texts: Sequence[str], *, t2s: bool = False,
                   clean_many: Callable[[list[str]], list[str | None]] | None = None,
                   fold_many: Callable[[list[str]], list[str | None]] | None = None,
                   t2s_many: Callable[[list[str]], list[str | None]] | None = None) -> list[str]:
    """`normalize` of each text. ``clean_many``, when given, does `_clean_nfkc` for a batch of texts, giving
    None for a text it leaves to `_clean_nfkc`; ``t2s_many`` likewise does OpenCC's t2s conversion, and
    ``fold_many`` the case folding and whitespace of `_after_clean` (``" ".join(text.casefold().split())``),
    None for a text it leaves to Python (the native core, `esdedup.fingerprint.native_steps.clean_step`,
    `t2s_step` and `fold_step`). Texts longer than `_BLOCK_CHARS` go through `normalize` itself."""
    if clean_many is None:
        return [normalize(t, t2s=t2s) for t in texts]
    short = [t for t in texts if len(t) <= _BLOCK_CHARS]
    done = _each(clean_many, short, _clean_nfkc)
    if t2s:
        done = _each(t2s_many, done, _t2s().convert)
    folded = iter(_each(fold_many, done, _fold))
    return [normalize(t, t2s=t2s) if len(t) > _BLOCK_CHARS else next(folded) for t in texts]


def _each(step: Callable[[list[str]], list[str | None]] | None, texts: list[str],
          one: Callable[[str], str]) -> list[str]:
    """``step`` of a batch of texts, ``one`` of each text it leaves to Python (gives None for); ``one`` of
    every text when there is no ``step``."""
    if step is None:
        return [one(t) for t in texts]
    return [one(t) if r is None else r for t, r in zip(texts, step(texts), strict=True)]


def _fold(text: str) -> str:
    """The case folding and whitespace of `_after_clean`."""
    # str.split() splits on exactly the characters that ``\s`` matches in a str pattern (str.isspace), so
    # this is ``_WS.sub(" ", text).strip()`` without running a regular expression over the text.
    return " ".join(text.casefold().split())


@lru_cache(maxsize=1)
def fold_tables() -> tuple[list[tuple[int, str]], list[int]]:
    """What `_after_clean`'s ``casefold`` and ``split`` do to each code point, for the native core:
    (code point, ``chr(c).casefold()``) of every code point case folding changes, and the code points
    ``str.split`` splits on (``str.isspace``). Read from this interpreter, 256 code points at a time: a
    block that folds to itself has no code point that folds (a fold is never empty, so equal lengths mean
    one character each), and a block that ``split`` leaves whole has no whitespace."""
    folds: list[tuple[int, str]] = []
    spaces: list[int] = []
    every = np.arange(0x110000, dtype="<u4").tobytes().decode("utf-32-le", "surrogatepass")
    for start in range(0, 0x110000, 256):
        block = every[start:start + 256]
        if block.casefold() != block:
            folds.extend((c, chr(c).casefold()) for c in range(start, start + 256) if chr(c).casefold() != chr(c))
        if block.split() != [block]:
            spaces.extend(c for c in range(start, start + 256) if chr(c).isspace())
    return folds, spaces


#: Texts longer than this many characters are normalised in blocks of about this size.
_BLOCK_CHARS = 1 << 20


def _safe_blocks(text: str, size: int | None = None) -> Iterator[str]:
    """Consecutive slices of ``text``, each (but the first) starting at a SAFE character (see below),
    where NFKC may be applied to either side separately; casefolding is per character anyway."""
    size = size or _BLOCK_CHARS
    classes, _ = _tables()
    start, n = 0, len(text)
    while start < n:
        end = start + size
        while end < n and classes[min(ord(text[end]), 0x10000)] != _SAFE:
            end += 1
        yield text[start:end]
        start = end


def _join_words(pieces: Iterable[str]) -> str:
    """``" ".join("".join(pieces).split())`` without building the joined text twice."""
    out: list[str] = []
    space = False  # whitespace seen since the last word written
    for piece in pieces:
        words = piece.split()
        if not words:
            space = space or bool(piece)
            continue
        if out and (space or piece[0].isspace()):
            out.append(" ")
        out.append(" ".join(words))
        space = piece[-1].isspace()
    return "".join(out)


# -- fast junk removal + NFKC -----------------------------------------------------------------------
# ``_clean_nfkc(text) == unicodedata.normalize("NFKC", _JUNK.sub("", text))`` for every str (the unit
# tests check it on every BMP code point in context and on random text). Most real text is already NFKC
# except for a few characters (full-width punctuation and digits in Chinese text), and running NFKC over
# the whole text costs as much as segmenting it, so each code point is classified with a table:
#   SAFE   NFKC-stable, canonical combining class 0 and never the second of a composition (quick check
#          "Yes"): nothing before it can change it or be changed by it, so NFKC may be applied to the
#          text on either side of it separately;
#   MAP1   combining class 0 and NFKC maps it, in any context, to one SAFE character (full-width forms,
#          U+3000 and other spaces): replaced through a table, which leaves NFKC's result unchanged
#          (a character and its compatibility decomposition normalise alike);
#   JUNK   what ``_JUNK`` removes;
#   OTHER  everything else (combining marks, ligatures, "…", Hangul, non-BMP, ...): each run of them is
#          normalised with the SAFE character before it, by unicodedata itself.
_SAFE, _MAP1, _OTHER, _JUNK_CLASS = 0, 1, 2, 3
# Blocks whose characters may be SAFE or MAP1 (each one still checked); none holds a character of class
# 0 that can be the second of a canonical composition (those are Hangul jamo and some Indic vowel signs).
_CANDIDATE_BLOCKS = ((0x09, 0x0D), (0x20, 0x7E), (0xA0, 0x24F), (0x370, 0x4FF), (0x2000, 0x2BFF),
                     (0x3000, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xFF00, 0xFFEF))


@lru_cache(maxsize=1)
def _tables() -> tuple[np.ndarray, np.ndarray]:
    """(class of each BMP code point, plus one entry for "above the BMP"; MAP1 replacement table)."""
    classes = np.full(0x10001, _OTHER, dtype=np.uint8)
    replace = np.arange(0x10000, dtype=np.uint32)
    candidates = [c for lo, hi in _CANDIDATE_BLOCKS for c in range(lo, hi + 1)]
    for c in candidates:
        ch = chr(c)
        if unicodedata.combining(ch) == 0 and unicodedata.normalize("NFKC", ch) == ch:
            classes[c] = _SAFE
    for c in candidates:
        ch = chr(c)
        if classes[c] == _SAFE or unicodedata.combining(ch) != 0:
            continue
        target = unicodedata.normalize("NFKC", ch)
        if len(target) == 1 and ord(target) < 0x10000 and classes[ord(target)] == _SAFE:
            classes[c] = _MAP1
            replace[c] = ord(target)
    for c in (*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), *range(0x7F, 0xA0), *range(0xD800, 0xE000),
              *(c for lo, hi in INVISIBLE_RANGES for c in range(lo, hi + 1))):
        classes[c] = _JUNK_CLASS
    return classes, replace


def _clean_nfkc(text: str) -> str:
    """Remove junk characters, then NFKC (see the table above)."""
    if text.isascii():  # ASCII is NFKC already; only control characters can go
        return _JUNK.sub("", text) if not text.isprintable() and _JUNK.search(text) else text
    cp = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    # The table covers the BMP; invisible characters beyond it go first. (numpy's max, not ``max(text)``,
    # which makes a string per character: a third of the whole normalisation of a long text.)
    if cp.max() > 0xFFFF:
        text = _WIDE_JUNK.sub("", text)
        cp = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    classes, replace = _tables()
    cls = classes.take(cp, mode="clip")  # code points past the BMP clip to the last entry, _OTHER
    n_safe, n_map1, n_other, n_junk = np.bincount(cls, minlength=4).tolist()
    if n_safe == len(cls):
        return text
    if n_junk:
        keep = cls != _JUNK_CLASS
        cp, cls = cp[keep], cls[keep]
    if n_map1:
        mapped = cls == _MAP1
        cp = cp.copy()
        cp[mapped] = replace[cp[mapped]]
    out = cp.tobytes().decode("utf-32-le")
    if not n_other:
        return out
    other = np.flatnonzero(cls == _OTHER)
    cut = np.flatnonzero(np.diff(other) > 1)
    starts = other[np.concatenate(([0], cut + 1))].tolist()
    ends = (other[np.concatenate((cut, [len(other) - 1]))] + 1).tolist()
    parts, prev = [], 0
    for a, b in zip(starts, ends, strict=True):
        a = max(a - 1, prev)  # the SAFE starter before the run may compose with it
        parts.append(out[prev:a])
        parts.append(unicodedata.normalize("NFKC", out[a:b]))
        prev = b
    parts.append(out[prev:])
    return "".join(parts)


def is_word_char(ch: str) -> bool:
    """True for letters, digits and CJK ideographs (general category L* or N*); False for punctuation,
    symbols, marks, spaces, emoji. For one character that is exactly ``str.isalnum`` (the tests check
    every code point), which runs in C."""
    return ch.isalnum()


def is_token(token: str) -> bool:
    """A token counts as a feature if it has at least one letter, digit or ideograph."""
    return any(map(str.isalnum, token))
