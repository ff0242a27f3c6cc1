"""`dups` prints its pairs as the plain per-pair code wrote them, byte for byte, in every format: JSON lines,
``--json``, CSV and the table. The printer writes from the pairs' fields with remembered roundings and
chunk-wide escapes; these pairs hold every shape a pair's values take (absent measures, zeros of both signs,
NaN, numbers seen twice, numpy floats) and ids with every kind of character a terminal acts on."""
from __future__ import annotations

import contextlib
import csv
import io
import json
import math

import numpy as np
import pytest
from esdedup_cli.output import PAIR_COLUMNS, Printer, for_people

from esdedup.api import PairsReport
from esdedup.match.measures import shown
from esdedup.match.pairtable import Pair, PairColumns, PairList

_ACTIVE_IN_JSON = "\x7f\x85\x9f\u061c\u200e\u200f\u2028\u2029\u202a\u202e\u2066\u2069"
IDS = ["p1", "台湾-1", "new\nline", "tab\tand,comma", 'quote"d', "esc\x1b]0;title\x07", "rtl\u202eabc",
       "del\x7f", "c1\x85", "ls\u2028ps\u2029", "zwj\u200d\u3000space", "soft\xadhyphen", "x" * 40]
MEASURES = [
    (3, None, 0.81234, None, "jaccard"),
    (None, None, 0.84375, 0.9153, "jaccard"),
    (None, None, 0.84375, 0.9153, "containment"),  # the same values again: remembered ones
    (0, 0.5, None, None, "hamming and cosine"),
    (1, -0.0, 0.0, -0.0, "jaccard"),
    (2, 0.0, -0.0, 0.0, "jaccard"),
    (5, 1.23e-05, 1e-07, 0.00005, "x"),
    (7, 0.99999951, 1.0, 1.0, ""),
    (None, math.nan, math.nan, math.nan, "nan"),
    (None, math.inf, 0.5, -math.inf, "inf"),
    (None, np.float64(0.123456789), np.float64(0.25), np.float64(0.5), "numpy"),
    (2**70, None, 0.33333333, None, "big"),
]


def _pairs() -> list[Pair]:
    out = [Pair(a, b, *m) for m in MEASURES for a, b in zip(IDS, IDS[1:] + IDS[:1], strict=True)]
    return out + out[::-1]


def _to_dict(p: Pair) -> dict[str, object]:
    """`Pair.to_dict` as it was written first: `round` each time."""
    row: dict[str, object] = {"a": p.a, "b": p.b, "hamming": p.hamming,
                              "cosine": None if p.cosine is None else round(p.cosine, 6)}
    if p.jaccard is not None:
        row["jaccard"] = round(p.jaccard, 4)
        row["containment"] = round(p.containment or 0.0, 4)
    if p.decided_by:
        row["decided_by"] = p.decided_by
    return row


def _json(obj: object) -> str:
    text = json.dumps(obj, ensure_ascii=False)
    return "".join(f"\\u{ord(ch):04x}" if ch in _ACTIVE_IN_JSON else ch for ch in text)


def _number(v: float | None) -> str:
    return "-" if v is None else f"{v:.4f}"


def _expected(pairs: list[Pair], fmt: str) -> str:
    if fmt == "json":
        return _json({"pairs": [_to_dict(p) for p in pairs], "clusters": 2, "crowded": [], "labels_written": None,
                      "mended": 0}) + "\n"
    if fmt == "jsonl":
        return "".join(_json(_to_dict(p)) + "\n" for p in pairs)
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        for row in [PAIR_COLUMNS, *([_to_dict(p).get(c) for c in PAIR_COLUMNS] for p in pairs)]:
            writer.writerow("" if v is None else for_people(v) if isinstance(v, str) else v for v in row)
        return buf.getvalue()
    head = f"{'a':<24} {'b':<24} {'hamming':>7} {'vec_cos':>7} {'jaccard':>7} {'contain':>7}  decided\n"
    return head + "".join(
        f"{for_people(p.a):<24} {for_people(p.b):<24} {'-' if p.hamming is None else p.hamming:>7} "
        f"{_number(p.cosine):>7} {_number(p.jaccard):>7} {_number(p.containment):>7}  {p.decided_by}\n"
        for p in pairs)


def _printed(pairs: list[Pair], fmt: str) -> str:
    report = PairsReport(pairs, {"p1": "p1", "x": "x"})
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        Printer(json_out=fmt == "json").pairs(report, "jsonl" if fmt == "json" else fmt)
    text = out.getvalue()
    if fmt == "table":  # the count and the legend below the rows are written as before, unchanged
        text = text[:text.index(f"{len(pairs)} pairs in 2 clusters\n")]
    return text


@pytest.mark.parametrize("fmt", ["jsonl", "json", "csv", "table"])
def test_every_format_prints_what_the_per_pair_code_printed(fmt: str) -> None:
    pairs = _pairs()
    assert _printed(pairs, fmt) == _expected(pairs, fmt)
    many = pairs * 30  # several chunks of lines (4,096 a chunk)
    assert _printed(many, fmt) == _expected(many, fmt)


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_no_pairs_print_no_lines(fmt: str) -> None:
    assert _printed([], fmt) == ("" if fmt == "jsonl" else ",".join(PAIR_COLUMNS) + "\n")


def test_shown_rounds_as_round_does_whatever_it_saw_before() -> None:
    for value in (0.0, -0.0, 0.84375, -0.0, 0.0, 1, 1.0, True, math.nan, math.inf, np.float64(0.84375), 0.84375):
        for places in (4, 6):
            got, want = shown(value, places), round(value, places)
            assert type(got) is type(want) and repr(got) == repr(want), (value, places)


@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_delete_is_escaped_in_an_ascii_output(fmt: str) -> None:
    """DEL is ASCII, and a terminal may act on it: escaped in an output of nothing but ASCII too."""
    pairs = [Pair("del\x7f", "plain", 1, None, 0.5, 0.5, "jaccard")]
    assert _printed(pairs, fmt) == _expected(pairs, fmt) and "\\u007f" in _printed(pairs, fmt)


def _pair_list() -> PairList:
    """Pairs as all-pairs search gives them: most as columns (every shape of value, every id above), a few
    found otherwise between them."""
    ids = sorted(IDS)
    rows = [(a, b) for a in range(len(ids)) for b in range(a + 1, len(ids))]
    values = [m for m in MEASURES if m[0] is None or m[0] < 2**63]  # a Hamming column holds int64 or NaN
    hamming = np.array([np.nan if values[x % len(values)][0] is None else values[x % len(values)][0]
                        for x in range(len(rows))])

    def column(at: int) -> np.ndarray:
        return np.array([np.nan if values[x % len(values)][at] is None else values[x % len(values)][at]
                         for x in range(len(rows))], dtype=np.float64)

    def made(hamming: np.ndarray, cosine: np.ndarray | None) -> PairColumns:
        return PairColumns(ids, np.array([a for a, _ in rows]), np.array([b for _, b in rows]), hamming, cosine,
                           column(2), column(3), np.array([values[x % len(values)][4] for x in range(len(rows))],
                                                          dtype=object))

    with_floats = made(hamming, column(1))
    return PairList([with_floats.rows(slice(0, 40)), Pair(ids[0], ids[0] + "\x00", 1, None),
                     with_floats.rows(slice(40, None)), Pair(ids[-1], ids[-1] + "z", None, 0.5, 0.25, None, "x")])


@pytest.mark.parametrize("fmt", ["jsonl", "json", "csv", "table"])
def test_pairs_held_as_columns_print_as_their_pairs_do(fmt: str) -> None:
    """A `PairList`'s columns are written from their arrays, the same bytes as their `Pair`s one at a time."""
    pairs = _pair_list()
    assert _printed(pairs, fmt) == _expected(list(pairs), fmt)
    ints = PairColumns(sorted(IDS), np.array([0, 1]), np.array([2, 3]), np.array([0, 64]), None,
                       np.array([0.5, np.nan]), np.array([-0.0, 0.25]), np.array(["jaccard", ""], dtype=object))
    assert _printed(PairList([ints]), fmt) == _expected(list(ints), fmt)


@pytest.mark.parametrize("fmt", ["jsonl", "json", "csv", "table"])
def test_columns_naming_ids_that_are_not_strings_print_as_their_pairs_do(fmt: str) -> None:
    numbered = PairColumns([1, 2, 3], np.array([0, 1]), np.array([2, 2]), np.array([1, 2]), None,  # type: ignore[arg-type]
                           np.array([0.5, 0.75]), np.array([0.5, 1.0]), np.array(["jaccard", "jaccard"], dtype=object))
    assert _printed(PairList([numbered]), fmt) == _expected(list(numbered), fmt)
