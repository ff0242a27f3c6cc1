"""Export, from the INSTALLED Python packages, the tables the Java plugin needs to reproduce esdedup's
fingerprints bit for bit. Run at build time (Maven's generate-resources phase); nothing written here is
committed.

Why tables and not Java's own libraries:

* jieba's route choice compares sums of ``log(freq) - log(total)``; Java's ``Math.log`` may differ from
  the C library's ``log`` in the last bit, so every log-probability is exported as the double Python
  computed (one per distinct frequency) and Java only adds them, in the same order (IEEE addition is exact
  to reproduce).
* Python's ``unicodedata`` (NFKC, ``str.isalnum``, ``str.isspace``, ``str.casefold``) follows the Unicode
  version of the interpreter, the JVM its own; the tables carry Python's answers, so the plugin normalises
  as the Python that made them, whatever JVM the node runs.

Files (UTF-8 text, one record a line, ``#`` lines are headers; doubles and code points in hex):

* ``jieba.tsv``   ``#version``, ``#total``, ``#logtotal <bits>``, ``f <freq> <bits of log(freq)>`` lines,
  then ``<word>\\t<freq>`` for every key of jieba's prefix dictionary (0 = prefix only).
* ``hmm.tsv``     ``start <state> <bits>``, ``trans <from> <to> <bits>``, ``emit <state> <cp> <bits>``.
* ``unicode.tsv`` ``#unidata``, ``alnum``, ``assigned`` and ``junk`` ranges (``<lo> <hi>``), ``space <cp>``, ``fold <cp> <cp> ...``,
  ``ccc <cp> <class>``, ``nfkd <cp> <cp> ...`` (full compatibility decomposition, Hangul excluded: it is
  algorithmic), ``comp <first> <second> <composite>`` (primary composites).
* ``stopwords.txt`` the shipped stopword list after esdedup's normalisation, one word a line.

Usage: python export_tables.py OUT_DIR
"""
from __future__ import annotations

import struct
import sys
import unicodedata
from importlib.metadata import version
from pathlib import Path

MAX_CP = 0x110000
_HANGUL = range(0xAC00, 0xAC00 + 11172)


def bits(x: float) -> str:
    """The IEEE-754 bits of a double as 16 hex digits (Java: Long.parseUnsignedLong(s, 16))."""
    return struct.pack(">d", x).hex()


def export_jieba(out: Path) -> None:
    from math import log

    import jieba

    tok = jieba.Tokenizer()
    tok.initialize()  # the prefix dictionary exactly as jieba builds it (from its cache or dict.txt)
    freqs = sorted({f for f in tok.FREQ.values() if f > 0})
    with open(out / "jieba.tsv", "w", encoding="utf-8", newline="\n") as fh:
        fh.write(f"#version {version('jieba')}\n#total {tok.total}\n#logtotal {bits(log(tok.total))}\n")
        for f in freqs:
            fh.write(f"f {f} {bits(log(f))}\n")  # the value jieba's calc() takes: log(FREQ.get(w) or 1)
        for word, f in sorted(tok.FREQ.items()):
            if "\t" in word or "\n" in word:
                raise SystemExit(f"jieba word {word!r} holds a tab or newline; the table format cannot carry it")
            fh.write(f"{word}\t{f}\n")


def export_hmm(out: Path) -> None:
    from jieba.finalseg import emit_P, start_P, trans_P

    with open(out / "hmm.tsv", "w", encoding="utf-8", newline="\n") as fh:
        fh.write(f"#version {version('jieba')}\n")
        for s, p in sorted(start_P.items()):
            fh.write(f"start {s} {bits(p)}\n")
        for s, row in sorted(trans_P.items()):
            for t, p in sorted(row.items()):
                fh.write(f"trans {s} {t} {bits(p)}\n")
        for s, row in sorted(emit_P.items()):
            for ch, p in sorted(row.items()):
                fh.write(f"emit {s} {ord(ch):x} {bits(p)}\n")


def _ranges(flags: list[bool]) -> list[tuple[int, int]]:
    out, start = [], None
    for cp, on in enumerate([*flags, False]):
        if on and start is None:
            start = cp
        elif not on and start is not None:
            out.append((start, cp - 1))
            start = None
    return out


def _hex(s: str) -> str:
    return " ".join(f"{ord(c):x}" for c in s)


def export_unicode(out: Path) -> None:
    from esdedup.fingerprint.normalize import _JUNK

    chars = [chr(cp) for cp in range(MAX_CP)]
    surrogate = range(0xD800, 0xE000)
    with open(out / "unicode.tsv", "w", encoding="utf-8", newline="\n") as fh:
        fh.write(f"#unidata {unicodedata.unidata_version}\n#python {sys.version.split()[0]}\n")
        for lo, hi in _ranges([c.isalnum() for c in chars]):
            fh.write(f"alnum {lo:x} {hi:x}\n")
        for lo, hi in _ranges([unicodedata.category(c) != "Cn" for c in chars]):
            fh.write(f"assigned {lo:x} {hi:x}\n")  # only the tests use it (to compare with the JVM's NFKC)
        junk = _JUNK.fullmatch  # what esdedup.fingerprint.normalize removes before NFKC (controls, invisibles, surrogates)
        for lo, hi in _ranges([junk(c) is not None for c in chars]):
            fh.write(f"junk {lo:x} {hi:x}\n")
        for c in chars:
            if c.isspace():
                fh.write(f"space {ord(c):x}\n")
        for c in chars:
            if ord(c) not in surrogate and c.casefold() != c:
                fh.write(f"fold {ord(c):x} {_hex(c.casefold())}\n")
        for c in chars:
            if unicodedata.combining(c):
                fh.write(f"ccc {ord(c):x} {unicodedata.combining(c)}\n")
        for c in chars:
            if ord(c) in surrogate or ord(c) in _HANGUL:
                continue
            d = unicodedata.normalize("NFKD", c)
            if d != c:
                fh.write(f"nfkd {ord(c):x} {_hex(d)}\n")
        for c in chars:
            raw = unicodedata.decomposition(c)
            if not raw or raw.startswith("<") or ord(c) in _HANGUL:
                continue
            parts = [chr(int(p, 16)) for p in raw.split()]
            # A primary composite: a canonical pair that NFC composes back (composition exclusions,
            # singletons and non-starter decompositions fail this test).
            if len(parts) == 2 and unicodedata.normalize("NFC", c) == c:
                fh.write(f"comp {ord(parts[0]):x} {ord(parts[1]):x} {ord(c):x}\n")


def export_stopwords(out: Path) -> None:
    from esdedup.fingerprint.resources import parse_stopwords, shipped_stopwords

    words = sorted(parse_stopwords(shipped_stopwords()))
    with open(out / "stopwords.txt", "w", encoding="utf-8", newline="\n") as fh:
        fh.write(f"#esdedup {version('esdedup')}\n")
        for w in words:
            if "\n" in w:
                raise SystemExit(f"stopword {w!r} holds a newline")
            fh.write(w + "\n")


def main(argv: list[str]) -> None:
    if len(argv) != 1:
        raise SystemExit(__doc__.rsplit("Usage:", 1)[1].strip())
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    export_jieba(out)
    export_hmm(out)
    export_unicode(out)
    export_stopwords(out)


if __name__ == "__main__":
    main(sys.argv[1:])
