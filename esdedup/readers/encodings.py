"""Encoding detection and strict decoding of input files.

Text encodings are never guessed into mojibake: a byte-order mark wins, then strict UTF-8, then
Shift-JIS/EUC-JP or EUC-KR when the text shows its own script (kana; Hangul words separated by spaces)
better than any Chinese reading, then UTF-16 without BOM, then GB18030 or Big5 (scored on common
characters when both decode). Bytes that decode under none of them are reported, never replaced.

Line-oriented files (JSONL, CSV) are decoded line by line with the encoding detected on their first
bytes (:func:`detect_line_encoding`), so one bad line costs one record: a few lines that carry NUL bytes
or do not decode do not condemn the file.

This module never prints and never configures logging.
"""
from __future__ import annotations

import codecs
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources as importlib_resources

from esdedup.errors import DecodeError

__all__ = ["SAMPLE_BYTES", "decode_bytes", "detect_encoding", "detect_line_encoding"]

logger = logging.getLogger(__name__)

#: Bytes read from the start of a file to detect its encoding.
SAMPLE_BYTES = 64 * 1024
# Heuristics look at this many decoded characters at most (strict decoding always covers everything).
_SCORE_CHARS = 32 * 1024
# Strict checks decode this many bytes at a time (at least 256 Ki characters: more than _SCORE_CHARS).
_DECODE_CHUNK = 1 << 20

UNDECODABLE = "cannot decode: not UTF-8/UTF-16/GB18030/Big5"
MIXED = "cannot decode: partly UTF-8, partly another encoding"
BINARY = "binary file (NUL bytes)"

#: Multi-byte legacy codecs: a line of such a file that is valid UTF-8 is read as UTF-8 (concatenated
#: files), since text in them is practically never valid UTF-8 by chance.
LEGACY_CODECS = frozenset({"gb18030", "big5", "cp950", "shift_jis", "cp932", "euc_jp", "euc_kr", "cp949"})

# Longest first: the UTF-32 LE BOM starts with the UTF-16 LE BOM.
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def _char_table(name: str) -> frozenset[str]:
    """A character list shipped in esdedup/data (whitespace and ``#`` comment lines ignored)."""
    text = importlib_resources.files("esdedup.data").joinpath(name).read_text("utf-8")
    return frozenset("".join("".join(line.split()) for line in text.splitlines() if not line.startswith("#")))


# About 1,170 of the most frequent Simplified characters, and the same list in Traditional (Taiwan)
# forms. Real text has most of its Han characters in its own list; text decoded with the wrong one of
# GB18030/Big5 has few, plus kana, Cyrillic, private-use and similar debris. Loaded once, at import.
_COMMON_SIMPLIFIED = _char_table("common_simplified.txt")
_COMMON_TRADITIONAL = _char_table("common_traditional.txt")
_COMMON_HAN = _COMMON_SIMPLIFIED | _COMMON_TRADITIONAL

_HIGH_BYTES = bytes(range(0x80, 0x100))
# A UTF-8 encoded character U+4000..U+9FFF (most Han characters).
_UTF8_HAN = re.compile(rb"[\xe4-\xe9][\x80-\xbf]{2}")
# Two Hangul syllables with one space between them: Korean separates words with spaces, Chinese and
# Chinese read as Korean do not.
_SPACED_HANGUL = re.compile("[\uac00-\ud7a3] [\uac00-\ud7a3]")
# C0 control bytes that text has no use for (NUL is counted apart; tab, LF, FF, CR and ESC are allowed).
_CONTROL_BYTES = bytes([*range(1, 9), 0x0B, *range(0x0E, 0x1B), *range(0x1C, 0x20)])

# Punctuation that both codecs produce for real text (full-width and CJK forms).
_CJK_PUNCTUATION = frozenset("，。、；：？！「」『』（）《》〈〉“”‘’…—·～　【】％＋－／＜＞＝")


def _is_debris(cp: int) -> bool:
    """Characters that real Chinese text rarely has but the wrong CJK codec produces a lot of."""
    return (
        0xE000 <= cp <= 0xF8FF  # private use (GB18030 user-defined areas)
        or 0x3040 <= cp <= 0x30FF  # kana
        or 0x0370 <= cp <= 0x04FF  # Greek, Cyrillic
        or 0x2500 <= cp <= 0x259F  # box drawing, blocks
        or 0x3100 <= cp <= 0x312F  # bopomofo
        or 0x02C0 <= cp <= 0x02FF  # spacing modifiers (tone marks)
        or 0x3200 <= cp <= 0x33FF  # enclosed CJK, CJK compatibility
        or 0x3400 <= cp <= 0x4DBF  # CJK extension A
        or 0x2E80 <= cp <= 0x2FDF  # radicals
        or 0xF900 <= cp <= 0xFAFF  # CJK compatibility ideographs
        or 0xFE30 <= cp <= 0xFE4F  # CJK compatibility forms
        or cp > 0xFFFF  # GB18030 four-byte sequences into the supplementary planes
    )


def _is_foreign_debris(cp: int) -> bool:
    """What a wrong Japanese or Korean reading produces: private use, half-width katakana, Greek,
    Cyrillic, box drawing."""
    return (0xE000 <= cp <= 0xF8FF or 0xFF61 <= cp <= 0xFF9F or 0x0370 <= cp <= 0x04FF
            or 0x2500 <= cp <= 0x259F)


def _is_kana(cp: int) -> bool:
    return 0x3041 <= cp <= 0x30FF


def _is_hangul(cp: int) -> bool:
    return 0xAC00 <= cp <= 0xD7A3


def _cjk_score(text: str, common: frozenset[str]) -> float:
    """Mean per non-ASCII character: +1 common character, +0.5 CJK punctuation, -1 debris."""
    total = 0
    score = 0.0
    for ch in text[:_SCORE_CHARS]:
        cp = ord(ch)
        if cp < 0x80:
            continue
        total += 1
        if ch in common:
            score += 1.0
        elif ch in _CJK_PUNCTUATION:
            score += 0.5
        elif _is_debris(cp):
            score -= 1.0
    return score / total if total else 0.0


def _japanese_score(text: str) -> float | None:
    """Like :func:`_cjk_score` with kana counted as letters; None unless kana make up a fifth of the
    non-ASCII characters (Japanese prose is a third to two thirds kana; Chinese read as Japanese has
    almost none)."""
    total = kana = 0
    score = 0.0
    for ch in text[:_SCORE_CHARS]:
        cp = ord(ch)
        if cp < 0x80:
            continue
        total += 1
        if _is_kana(cp):
            kana += 1
            score += 1.0
        elif ch in _COMMON_HAN:
            score += 1.0
        elif ch in _CJK_PUNCTUATION:
            score += 0.5
        elif _is_foreign_debris(cp) or _is_hangul(cp):
            score -= 1.0
    if not total or kana * 5 < total:
        return None
    return score / total


def _korean_score(text: str) -> float | None:
    """+1 per Hangul syllable, +0.5 punctuation, -1 debris; None unless half the non-ASCII characters
    are Hangul and the words are separated by spaces (GBK Chinese read as EUC-KR can be mostly
    Hangul, but never spaced)."""
    head = text[:_SCORE_CHARS]
    total = hangul = 0
    score = 0.0
    for ch in head:
        cp = ord(ch)
        if cp < 0x80:
            continue
        total += 1
        if _is_hangul(cp):
            hangul += 1
            score += 1.0
        elif ch in _CJK_PUNCTUATION:
            score += 0.5
        elif _is_foreign_debris(cp) or _is_kana(cp):
            score -= 1.0
    if not total or hangul * 2 < total or len(_SPACED_HANGUL.findall(head)) * 20 < hangul:
        return None
    return score / total


def _is_plausible_utf16_char(ch: str) -> bool:
    """Characters UTF-16 text of a Chinese-first corpus is made of (no Hangul, no private use)."""
    cp = ord(ch)
    if cp < 0x80:
        return ch.isprintable() or ch in "\t\n\r\f"
    return (
        0x00A0 <= cp <= 0x024F  # Latin-1 supplement, Latin extended
        or 0x2000 <= cp <= 0x206F  # general punctuation
        or 0x2190 <= cp <= 0x21FF  # arrows
        or 0x3000 <= cp <= 0x303F  # CJK symbols and punctuation
        or 0x3040 <= cp <= 0x30FF  # kana
        or 0x3400 <= cp <= 0x4DBF  # CJK extension A
        or 0x4E00 <= cp <= 0x9FFF  # CJK unified ideographs
        or 0xFF00 <= cp <= 0xFFEF  # half- and full-width forms
        or cp == 0xFEFF
    )


def _strict(data: bytes, codec: str, final: bool, *, refuse_nul: bool = False) -> str | None:
    """The start of ``data`` decoded strictly (at least its first _SCORE_CHARS characters, which is all
    the heuristics look at), or None when any of it does not decode (a multi-byte character cut at the
    end is allowed unless ``final``) or, with ``refuse_nul``, decodes to a NUL character.

    Decoded chunk by chunk, so checking a large document never holds a second copy of it as text.
    """
    decoder = codecs.getincrementaldecoder(codec)("strict")
    view = memoryview(data)
    head: str | None = None
    try:
        for start in range(0, max(len(data), 1), _DECODE_CHUNK):
            end = start + _DECODE_CHUNK
            part = decoder.decode(view[start:end], final and end >= len(data))
            if refuse_nul and "\x00" in part:
                return None
            if head is None:
                head = part
    except UnicodeDecodeError:
        return None
    return head


def _first_strict(data: bytes, names: tuple[str, ...], final: bool) -> tuple[str, str] | None:
    """``(codec, text)`` for the first of ``names`` that decodes ``data`` strictly (the plain codec
    before its vendor superset: big5 before cp950)."""
    for codec in names:
        text = _strict(data, codec, final)
        if text is not None:
            return codec, text
    return None


def _guess_utf16(sample: bytes, final: bool, *, threshold: float) -> str | None:
    """'utf-16-le'/'utf-16-be' when the sample is plausible UTF-16 without a BOM."""
    if final and len(sample) % 2:
        return None
    even_nuls = sample[0::2].count(0)
    odd_nuls = sample[1::2].count(0)
    # ASCII in UTF-16-LE has its zero byte at odd positions; try the likelier order first.
    order = ("utf-16-le", "utf-16-be") if odd_nuls >= even_nuls else ("utf-16-be", "utf-16-le")
    for codec in order:
        text = _strict(sample, codec, final, refuse_nul=True)
        if not text:
            continue
        head = text[:_SCORE_CHARS]
        plausible = sum(1 for ch in head if _is_plausible_utf16_char(ch))
        if plausible >= threshold * len(head):
            return codec
    return None


def _refuse_mixed(sample: bytes) -> None:
    """Raise when the sample is largely UTF-8 Han characters among other bytes.

    GB18030 decodes most UTF-8 Han text as well (into mojibake). Real GBK/Big5 text has few byte runs
    that happen to be UTF-8 Han characters; a file that is largely made of them has been assembled from
    differently encoded parts.
    """
    head = sample[:4 * _SCORE_CHARS]
    non_ascii = len(head) - len(head.translate(None, _HIGH_BYTES))
    utf8_han = len(_UTF8_HAN.findall(head))
    if utf8_han >= 4 and 3 * utf8_han >= 0.4 * non_ascii:
        raise DecodeError(MIXED)


def _chinese_readings(sample: bytes, final: bool) -> dict[str, float]:
    """Codec -> score for GB18030 and Big5 (or cp950, Microsoft's Big5) where they decode strictly."""
    scores: dict[str, float] = {}
    gb = _strict(sample, "gb18030", final)
    if gb is not None:
        scores["gb18030"] = _cjk_score(gb, _COMMON_SIMPLIFIED)
    big5 = _first_strict(sample, ("big5", "cp950"), final)
    if big5 is not None:
        scores[big5[0]] = _cjk_score(big5[1], _COMMON_TRADITIONAL)
    return scores


def _guess_cjk(sample: bytes, final: bool) -> str:
    """Choose between GB18030 and Big5 (or cp950, Microsoft's Big5) for non-UTF text."""
    _refuse_mixed(sample)
    scores = _chinese_readings(sample, final)
    if not scores:
        raise DecodeError(UNDECODABLE)
    logger.debug("Chinese readings scored %s", scores)
    # A tie goes to GB18030 (the Simplified reading comes first).
    return max(scores, key=lambda codec: (scores[codec], codec == "gb18030"))


_JAPANESE_KOREAN: tuple[tuple[tuple[str, ...], Callable[[str], float | None]], ...] = (
    (("shift_jis", "cp932"), _japanese_score),
    (("euc_jp",), _japanese_score),
    (("euc_kr", "cp949"), _korean_score),
)


def _guess_japanese_korean(sample: bytes, final: bool) -> str | None:
    """Shift-JIS/cp932, EUC-JP or EUC-KR/cp949 when one of them reads as its own script and scores
    better than every Chinese reading; None otherwise.

    Asked before the BOM-less UTF-16 guess: Shift-JIS byte pairs read as UTF-16 are Han characters.
    """
    best: str | None = None
    best_score = 0.0
    for names, score in _JAPANESE_KOREAN:
        decoded = _first_strict(sample, names, final)
        value = score(decoded[1]) if decoded is not None else None
        if decoded is not None and value is not None and value > best_score:
            best, best_score = decoded[0], value
    if best is None or any(s >= best_score for s in _chinese_readings(sample, final).values()):
        return None
    _refuse_mixed(sample)
    return best


def detect_encoding(sample: bytes, *, final: bool = True) -> str:
    """Return the Python codec that decodes ``sample`` strictly, or raise :class:`DecodeError`.

    ``final=False`` says the sample is the start of a longer file, so a multi-byte character cut
    at its end is not an error. Order: BOM (UTF-8, UTF-16, UTF-32), strict UTF-8, Japanese/Korean
    (only with their script's evidence), UTF-16 without BOM, then GB18030 or Big5. NUL bytes outside
    UTF-16/32 mean a binary file. Returns one of 'utf-8', 'utf-8-sig', 'utf-16' (BOM), 'utf-16-le',
    'utf-16-be', 'utf-32' (BOM), 'gb18030', 'big5', 'cp950' (Big5 with Microsoft's extensions, only
    when plain Big5 fails), 'shift_jis', 'cp932', 'euc_jp', 'euc_kr' or 'cp949' (the vendor supersets
    again only when the plain codec fails).
    """
    for bom, codec in _BOMS:
        if sample.startswith(bom):
            if _strict(sample, codec, final) is None:
                label = {"utf-8-sig": "UTF-8", "utf-16": "UTF-16", "utf-32": "UTF-32"}[codec]
                raise DecodeError(f"cannot decode: invalid {label} after a {label} byte-order mark")
            return codec
    if b"\x00" in sample:
        # ASCII-heavy UTF-16 has many NUL bytes on one side; anything else with NULs is binary.
        # Text with a few stray NULs can pass as plausible UTF-16 (pairs of ASCII bytes read as
        # Han characters), so sparse NULs in what is otherwise UTF-8 mean binary as well.
        sparse = max(sample[0::2].count(0), sample[1::2].count(0)) < 0.25 * (len(sample) // 2)
        guess = None
        if not (sparse and _strict(sample.replace(b"\x00", b""), "utf-8", final) is not None):
            guess = _guess_utf16(sample, final, threshold=0.9)
        if guess is None:
            raise DecodeError(BINARY)
        return guess
    if _strict(sample, "utf-8", final) is not None:
        return "utf-8"
    other = _guess_japanese_korean(sample, final)
    if other is not None:
        return other
    # UTF-16 of almost pure Han text has no NUL bytes at all; GBK and Big5 byte pairs read as
    # UTF-16 give Hangul, Yi, surrogates and private use, so a high threshold separates them.
    guess = _guess_utf16(sample, final, threshold=0.95)
    if guess is not None:
        return guess
    return _guess_cjk(sample, final)


def decode_bytes(data: bytes) -> tuple[str, str]:
    """Decode a whole document strictly: ``(text, encoding)``; raise :class:`DecodeError`."""
    encoding = detect_encoding(data, final=True)
    try:
        return data.decode(encoding), encoding
    except UnicodeDecodeError as exc:  # detect_encoding already checked; kept as a safety net
        raise DecodeError(f"cannot decode as {encoding}: {exc.reason} at byte {exc.start}") from exc


# ---------------------------------------------------------------------------------------------
# Line-oriented files (JSONL, CSV)
# ---------------------------------------------------------------------------------------------

def _complete_lines(sample: bytes, final: bool) -> list[bytes]:
    lines = sample.split(b"\n")
    if not final and len(lines) > 1:
        lines = lines[:-1]  # possibly cut by the end of the sample
    return lines


def _decodes_as_text(line: bytes) -> bool:
    return _strict(line, "utf-8", True) is not None or any(
        _strict(line, codec, True) is not None for codec in ("gb18030", "big5", "shift_jis", "euc_kr"))


def _text_lines_with_nuls(sample: bytes, final: bool) -> bool:
    """Whether a sample with NUL bytes is text lines of which some are damaged, not a binary file.

    It is when at least half of its non-blank lines carry no NUL, nine in ten of those decode as text,
    and the sample has next to no other control bytes. Binary formats fail the last two tests (their
    bytes are not text); UTF-16 that was not recognised fails the first (every line has NULs).
    """
    lines = [line for line in _complete_lines(sample, final) if line.strip(b" \t\r\x00")]
    clean = [line for line in lines if b"\x00" not in line]
    if not lines or len(clean) * 2 < len(lines):
        return False
    stripped = sample.replace(b"\x00", b"")
    controls = len(stripped) - len(stripped.translate(None, _CONTROL_BYTES))
    if controls * 100 > len(stripped):
        return False
    return sum(1 for line in clean if _decodes_as_text(line)) * 10 >= len(clean) * 9


def detect_line_encoding(sample: bytes, final: bool) -> str:
    """The encoding of a line-oriented file (JSONL, CSV) from its first bytes.

    Lines are decoded one by one, so a few undecodable lines must not condemn the whole file, nor a
    few lines that carry NUL bytes (JSON and CSV text has no raw NUL: those lines are rejected one by
    one, the others are read). UTF-8 lines inside a legacy-encoded file are decoded as UTF-8 (files get
    concatenated), so the choice among GB18030, Big5, Shift-JIS, ... is made on the lines that are not
    UTF-8. Raises :class:`DecodeError` for a binary file or a bad byte-order mark.
    """
    try:
        name: str | None = detect_encoding(sample, final=final)
    except DecodeError as exc:
        if exc.reason == BINARY and _text_lines_with_nuls(sample, final):
            return detect_line_encoding(sample.replace(b"\x00", b""), final)
        if exc.reason not in (UNDECODABLE, MIXED):
            raise
        name = None
    if name in ("utf-16-le", "utf-16-be") and b"\x00" not in sample:
        # UTF-16 lines end in a newline that carries a NUL byte: a sample without any is not UTF-16
        # (long runs of ASCII pairs such as "[[" merely read as Han characters).
        name = None
    if name is not None and name not in LEGACY_CODECS:
        return name
    return _legacy_line_encoding(sample, final)


def _legacy_line_encoding(sample: bytes, final: bool) -> str:
    """The legacy codec of the sample's lines that are not UTF-8 ('utf-8' when there are none)."""
    lines = sample.split(b"\n")
    candidates: list[tuple[bytes, bool]] = []  # (line, complete): the sample may cut its last line
    for n, line in enumerate(lines):
        complete = final or n < len(lines) - 1
        if line.isascii() or _strict(line, "utf-8", complete) is not None:
            continue
        if any(_strict(line, codec, complete) is not None for codec in LEGACY_CODECS):
            candidates.append((line, complete))
    if not candidates:
        return "utf-8"  # the non-UTF-8 lines decode in nothing: each is rejected on its own
    try:
        name = detect_encoding(b"\n".join(line for line, _ in candidates), final=candidates[-1][1])
    except DecodeError:
        name = None
    if name in LEGACY_CODECS:
        return name
    # Some lines decode only as GB18030 and others only as Big5: the majority wins.
    gb = sum(_strict(line, "gb18030", complete) is not None for line, complete in candidates)
    big5 = sum(_first_strict(line, ("big5", "cp950"), complete) is not None for line, complete in candidates)
    if gb == big5 == 0:
        return "utf-8"  # no Chinese reading either: each of those lines is rejected on its own
    return "gb18030" if gb >= big5 else "big5"


@dataclass
class LineCodec:
    """How to split and decode one file's lines (mutable: a pure-ASCII start may be re-decided)."""

    name: str  # what detection said; reported in Record.encoding
    codec: str  # per-line codec, without BOM handling
    bom: int  # BOM length: line splitting starts there
    newline: bytes  # the newline code unit; its length is the code unit size
    provisional: bool = False  # chosen from pure ASCII: a later non-UTF-8 line may switch it

    @property
    def unit(self) -> int:
        return len(self.newline)

    def read_line(self, line: bytes) -> None:
        """``line`` was read in this codec (decoded, or read as UTF-8 by orjson): a non-ASCII line settles a
        choice made from pure ASCII."""
        if self.provisional and not line.isascii():
            self.provisional = False


def line_codec(name: str, sample: bytes) -> LineCodec:
    """The :class:`LineCodec` for an encoding ``name`` found by :func:`detect_line_encoding`."""
    if name == "utf-8-sig":
        return LineCodec(name, "utf-8", 3, b"\n")
    if name == "utf-16":
        le = sample.startswith(codecs.BOM_UTF16_LE)
        return LineCodec(name, "utf-16-le" if le else "utf-16-be", 2, b"\n\x00" if le else b"\x00\n")
    if name == "utf-32":
        le = sample.startswith(codecs.BOM_UTF32_LE)
        return LineCodec(name, "utf-32-le" if le else "utf-32-be", 4,
                         b"\n\x00\x00\x00" if le else b"\x00\x00\x00\n")
    if name == "utf-16-le":
        return LineCodec(name, name, 0, b"\n\x00")
    if name == "utf-16-be":
        return LineCodec(name, name, 0, b"\x00\n")
    # UTF-8 and the legacy CJK codecs never use 0x0A inside a multi-byte character.
    return LineCodec(name, name, 0, b"\n", provisional=name == "utf-8" and sample.isascii())
