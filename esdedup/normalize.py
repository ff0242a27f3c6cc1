"""Text normalisation before tokenising: one function, pure, the same everywhere.

Steps, in order: drop lone surrogates and control characters (they are not text; keeping them would
make the same article hash differently depending on how a crawler mangled it), Unicode NFKC (which also
maps full-width Latin letters, digits and punctuation to half-width), optional Traditional-to-Simplified
conversion (OpenCC ``t2s``), case folding, and collapsing runs of whitespace to one space.
"""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

_WS = re.compile(r"\s+")
# C0/C1 controls except tab/newline/CR (which become whitespace), and lone surrogates.
_JUNK = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


@lru_cache(maxsize=1)
def _t2s():
    import opencc

    return opencc.OpenCC("t2s")


def normalize(text: str, *, t2s: bool = False) -> str:
    """Return the canonical form of ``text`` that tokenising starts from.

    >>> normalize("ＨＥＬＬＯ，　世界！\\u0000")
    'hello, 世界!'
    >>> normalize("臺灣居民", t2s=True)
    '台湾居民'
    """
    text = _JUNK.sub("", text)
    text = unicodedata.normalize("NFKC", text)
    if t2s:
        text = _t2s().convert(text)
    text = text.casefold()
    return _WS.sub(" ", text).strip()


def is_word_char(ch: str) -> bool:
    """True for letters, digits and CJK ideographs; False for punctuation, symbols, spaces, emoji."""
    cat = unicodedata.category(ch)
    return cat[0] in "LN"


def is_token(token: str) -> bool:
    """A token counts as a feature if it has at least one letter, digit or ideograph."""
    return any(is_word_char(c) for c in token)
