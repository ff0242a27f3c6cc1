"""Everything the CLI prints: progress, summaries, tables, JSON. Colours and bars only on a terminal.

Ids, titles, paths and texts come from the user's data, and a terminal acts on some characters instead of
showing them (``ESC ] 0;...BEL`` retitles the window, ``ESC [2J`` clears it, U+202E reverses what follows).
Text for people passes through `for_people`, which writes such characters as escapes; JSON for programs
through `json_text`, which writes them as ``\\u`` escapes (the same values once parsed).
"""
import json
import math
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from itertools import chain, repeat
from typing import Any

import typer

#: What a terminal acts on instead of showing: C0 and C1 controls, DEL, the line and paragraph separators,
#: and the bidirectional marks, embeddings, overrides and isolates.
_ACTIVE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
#: The same less C0, which json.dumps escapes inside strings (a raw newline in JSON text is its indentation).
_ACTIVE_IN_JSON = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def for_people(value: Any) -> str:
    """``str(value)`` with every character a terminal would act on written as an escape (``\\x1b``,
    ``\\n``, ``\\u202e``)."""
    return _ACTIVE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), str(value))


#: `json.dumps(obj, ensure_ascii=False)`, without making an encoder at every call (`dups` prints a line a pair).
_JSON = json.JSONEncoder(ensure_ascii=False)


def json_text(obj: Any, *, indent: int | None = None) -> str:
    """JSON for programs: exact (it parses to the same values), non-ASCII text kept readable, and the
    characters a terminal acts on written as ``\\u`` escapes (json.dumps escapes only C0 controls)."""
    return _json_escapes(_JSON.encode(obj) if indent is None else json.dumps(obj, ensure_ascii=False, indent=indent))


def _is_tty() -> bool:
    return sys.stderr.isatty()


class Printer:
    def __init__(self, *, json_out: bool = False, quiet: bool = False) -> None:
        self.json_out, self.quiet = json_out, quiet

    # -- progress ------------------------------------------------------------------------------------
    @contextmanager
    def progress(self) -> Iterator[Callable[[Any], None] | None]:
        """A callback for the library's progress reports: a live bar on a terminal, a plain line every
        few seconds otherwise, nothing with --quiet or --json."""
        if self.quiet or self.json_out:
            yield None
            return
        if _is_tty():
            from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                          transient=True, console=None) as bar:
                task = bar.add_task("starting", total=None)

                def update(s: Any) -> None:
                    bar.update(task, description=_progress_line(s))

                yield update
            return
        last = [time.monotonic()]  # the first line after 5 s: short runs print only their summary

        def plain(s: Any) -> None:
            now = time.monotonic()
            if now - last[0] >= 5.0:
                last[0] = now
                typer.echo(_progress_line(s), err=True)

        yield plain

    # -- results -----------------------------------------------------------------------------------
    def summary(self, s: Any, redact: Callable[[str], str]) -> None:
        d = s.to_dict()
        if d.get("error"):
            d["error"] = redact(d["error"])
        if self.json_out:
            typer.echo(json_text(d))
            return
        if self.quiet and s.ok:
            return
        lines = [
            f"read {s.read} = indexed {s.indexed} (new {s.created}, updated {s.updated}"
            + (f", unchanged {s.unchanged}" if s.unchanged else "") + f") + skipped {s.skipped}"
            f" + failed {s.failed}",
            f"near-duplicates found: {s.duplicates}; retried sends: {s.retried}; "
            f"{d['docs_per_s'] or 0} docs/s, {d['mb_per_s'] or 0} MB/s in {s.seconds:.1f}s",
        ]
        if s.resumed_files:
            lines.append(f"resumed: {s.resumed_files} files already done were not read again")
        if (s.failed or s.skipped) and s.dead_letter:
            lines.append(f"failed and skipped records, with reasons: {for_people(s.dead_letter)}")
        typer.echo("\n".join(lines))

    def matches(self, result: Any, *, explain: bool = False) -> None:
        if self.json_out:
            typer.echo(json_text({"query": result.query, "matches": result.matches, "truncated": result.truncated}))
            return
        q = result.query
        typer.echo(f"query simhash {q['simhash']} ({q['tokens']} terms, {q['path']} lookup): "
                   f"{len(result.matches)} near-duplicate(s)")
        for m in result.matches:
            typer.echo(f"  {for_people(m['id'])}\t" + _measures(m, sep="\t"))
            if explain:
                if m.get("title"):
                    typer.echo(f"      title: {for_people(m['title'])}")
                if "shared_bands" in m:
                    typer.echo(f"      shared bands: {', '.join(m['shared_bands']) or '(none: found by vector)'}")
                    vectors = ("the vector cosine above compares the hashed vectors" if m["cosine"] is not None
                               else "the index stores no vectors, so no vector cosine is shown")
                    typer.echo(f"      exact TF cosine: {m['exact_cosine']:.4f} (every term counted; {vectors})")
                    typer.echo(f"      top shared terms: {for_people(' '.join(m['top_shared_terms']))}")
        if result.truncated:
            typer.echo("warning: the index holds more candidates for this text than one lookup fetches (a band "
                       "value shared by very many documents?); a near-duplicate may be among those not compared",
                       err=True)

    def prints_clusters(self, fmt: str) -> bool:
        """Whether `pairs` prints the number of clusters (the JSON object and the table do): what a report
        needs its pairs grouped for."""
        return self.json_out or fmt == "table"

    def pairs(self, report: Any, fmt: str) -> None:
        if self.json_out:
            # `json_text` of the whole object, its pairs written as the JSON lines write them.
            rest = json_text({"clusters": None if report.clusters is None else len(set(report.clusters.values())),
                              "crowded": [{"key": key, "documents": n} for key, n in report.crowded],
                              "labels_written": report.labels_written, "mended": report.mended})
            _write_text(['{"pairs": [', *_joined(pair_json_texts(report.pairs, ", "), ", "), "], ", rest[1:], "\n"])
            return
        if fmt == "jsonl":
            _write_text(_joined(pair_json_texts(report.pairs, "\n"), "\n", end="\n"))
        elif fmt == "csv":
            rows = _pair_texts(report.pairs, "\n", _column_csv_runs, _csv_lines)
            _write_text(chain([",".join(PAIR_COLUMNS) + "\n"], _joined(rows, "\n", end="\n", escape=False)))
        else:
            typer.echo(f"{'a':<24} {'b':<24} {'hamming':>7} {'vec_cos':>7} {'jaccard':>7} {'contain':>7}  decided")
            _echo_lines(_pair_texts(report.pairs, "\n", _column_table_runs, _table_rows))
            clustered = "" if report.clusters is None else f" in {len(set(report.clusters.values()))} clusters"
            typer.echo(f"{len(report.pairs)} pairs{clustered}")
            typer.echo("hamming: SimHash bits apart (- where a text has none: a short text that is not segmented); "
                       "vec_cos: cosine of the hashed TF vectors (- where the index stores none); jaccard, contain: "
                       "MinHash estimates of the character n-gram Jaccard and containment (- where a text has no "
                       "signature); decided: the measure that made the pair near-duplicates")
        for key, n in report.crowded:
            typer.echo(f"warning: band value {key} is shared by {n} documents (boilerplate?); only the first "
                       f"ones were compared", err=True)
        if report.mended:
            typer.echo(f"documents whose own dotted dedup keys were moved under input_fields: {report.mended}",
                       err=True)
        if report.labels_written is not None:  # said when 0 too: the labels were checked, none had to change
            typer.echo(f"cluster labels written: {report.labels_written}", err=True)

    def info(self, d: dict[str, Any]) -> None:
        if self.json_out:
            typer.echo(json_text(d))
            return
        typer.echo(f"index {d['index']} ({d['backend']}): {d['documents']} documents")
        typer.echo(f"rule: {d['rule']}")
        lay, config = d["band_layout"], d["config"]
        tables = f"{lay['tables']} tables, key widths {lay['key_widths']}, probe radius {lay['radius']}"
        if config["strategy"] == "simhash":
            typer.echo(f"band layout: {tables}, finds every pair within Hamming {lay['k']}")
        elif config["strategy"] == "auto":
            typer.echo(f"SimHash band keys, only for texts of {config['short_text_chars']} or more characters "
                       f"(candidates, which the rule above decides): {tables}")
        typer.echo(f"expected random candidates per lookup: {d['expected_random_candidates_per_lookup']}")
        typer.echo("config: " + for_people(json.dumps(d["config"], ensure_ascii=False, sort_keys=True)))
        for key, n in d["crowded_band_values"]:
            typer.echo(f"crowded band value: {key} ({n} documents)")

    def compare(self, rows: list[dict[str, Any]], fmt: str) -> None:
        from esdedup.api import MANY_FILES_MAX_RATIO

        if fmt == "jsonl":
            for r in rows:
                typer.echo(json_text(r))
            return
        typer.echo(f"{'a':<30} {'b':<30} {'cosine':>7} {'adj_cos':>7} {'w_jacc':>7} {'average':>7} {'hamming':>7} "
                   f"{'sizes':>7}")
        far = filtered = False
        for r in rows:
            names = f"{for_people(r['a']):<30} {for_people(r['b']):<30}"
            if "skipped" in r:
                typer.echo(f"{names} skipped: {for_people(r['skipped'])}")
                filtered = filtered or r["skipped"].startswith("size ratio")
                continue
            mark = "*" if r["size_ratio"] > MANY_FILES_MAX_RATIO else ""
            far = far or bool(mark)
            typer.echo(f"{names} {r['cosine']:>7.4f} {r['adjusted_cosine']:>7.4f} {r['weighted_jaccard']:>7.4f} "
                       f"{r['average']:>7.4f} {r['hamming']:>7} {r['size_ratio']:>6.2f}x{mark}")
        if far:
            typer.echo(f"* one text is more than {MANY_FILES_MAX_RATIO}x as long as the other: rarely the same "
                       "text, whatever the measures say")
        if filtered:
            typer.echo("pairs that differ more in length were skipped; --max-ratio sets the limit (compare two "
                       "files alone to measure them anyway)")


def pair_json_lines(pairs: Iterable[Any]) -> Iterator[str]:
    """``json_text(p.to_dict())`` of each `esdedup.match.pairs.Pair`, written straight from its fields: the
    keys and rounding of `esdedup.match.measures.measures_row`, and what the standard JSON encoder writes of
    each value (the C string encoder, ``repr`` of a float, an int's digits), without a dict and an encoder's
    pass a pair (they were most of the time `dups` took to print 67,000 pairs). Only the escapes of the
    characters a terminal acts on are left to the caller (`_joined` writes them a chunk of lines at a time). A
    pair whose values are of any other type is written by `json_text` itself."""
    cosine, estimate = _measure_texts()
    string = _JSON_STRING
    for p in pairs:
        h, c, j, k, by = p.hamming, p.cosine, p.jaccard, p.containment, p.decided_by
        if not (type(p.a) is str and type(p.b) is str and type(by) is str and (h is None or type(h) is int)
                and (c is None or type(c) is float) and (j is None or type(j) is float)
                and (k is None or type(k) is float)):
            yield _JSON.encode(p.to_dict())
            continue
        line = (f'{{"a": {string(p.a)}, "b": {string(p.b)}, "hamming": {"null" if h is None else int.__repr__(h)}, '
                f'"cosine": {"null" if c is None else cosine(c)}')
        if j is not None:
            line += f', "jaccard": {estimate(j)}, "containment": {estimate(k or 0.0)}'
        yield f'{line}, "decided_by": {string(by)}}}' if by else line + "}"


#: Pairs held as columns written as one text (`pair_json_texts`).
RUN_ROWS = 4096


def pair_json_texts(pairs: Iterable[Any], sep: str) -> Iterator[str]:
    """`pair_json_lines` of ``pairs`` as texts that, joined by ``sep``, are their lines joined by ``sep``
    (`_pair_texts`)."""
    return _pair_texts(pairs, sep, _column_json_runs, pair_json_lines)


def _pair_texts(pairs: Iterable[Any], sep: str, runs: Callable[[Any, str, list[int]], list[str]],
                lines: Callable[[Iterable[Any]], Iterator[str]]) -> Iterator[str]:
    """The ``lines`` of ``pairs`` (a line a pair) as texts that, joined by ``sep``, are those lines joined by
    ``sep``: the pairs a `PairList` holds as columns over string ids in runs of at most `RUN_ROWS`, written from
    the arrays (``runs``: the texts of the runs between the cuts), every other pair alone."""
    from esdedup.match.pairtable import PairList

    if not isinstance(pairs, PairList) or pairs.columns is None:
        yield from lines(pairs)
        return
    columns, cuts = pairs.columns, pairs.cuts(RUN_ROWS)
    texts = (runs(columns, sep, cuts) if set(map(type, columns.ids)) <= {str} else
             [sep.join(lines(columns.rows(slice(lo, hi)))) for lo, hi in zip(cuts, cuts[1:], strict=False)])
    yield from pairs.interleaved(cuts, texts, lines(pairs.others))


def _column_json_runs(pairs: Any, sep: str, cuts: list[int]) -> list[str]:
    """The lines of pairs held as columns (`esdedup.match.pairtable.PairColumns`) from each cut to the next
    (``cuts``), joined by ``sep``: each id and each distinct value of a measure written once, as
    `pair_json_lines` writes it (the same functions, given the `Pair`'s value), then the lines put together from
    those texts (`esdedup.match.native_kernels.text_rows`). Columns over ids that are not all strings are
    written pair by pair."""
    import numpy as np

    names = list(map(_JSON_STRING, pairs.ids))  # most ids are in a pair, and a map in C costs less than picking them
    cosine, estimate = _measure_texts()
    hamming = _distinct_texts(pairs.hamming, lambda v: "null" if v != v else int.__repr__(int(v)))
    cosines = ((np.zeros(len(pairs), dtype=np.int64), ["null"]) if pairs.cosine is None else
               _distinct_texts(pairs.cosine, lambda v: "null" if v != v else cosine(v)))
    jaccard = _distinct_texts(pairs.jaccard, lambda v: "" if v != v else f', "jaccard": {estimate(v)}')
    at, texts = _distinct_texts(pairs.containment, lambda v: f', "containment": {estimate(v if v == v and v else 0.0)}')
    at[np.isnan(pairs.jaccard)] = len(texts)  # shown with the Jaccard estimate only
    by, by_names = _names(pairs.decided_by)
    columns = [(pairs.a, names), (pairs.b, names), hamming, cosines, jaccard, (at, [*texts, ""]),
               (by, [f', "decided_by": {_JSON_STRING(name)}' if name else "" for name in by_names])]
    return _text_rows(['{"a": ', ', "b": ', ', "hamming": ', ', "cosine": ', "", "", "", "}"], columns, sep, cuts)


def _column_csv_runs(pairs: Any, sep: str, cuts: list[int]) -> list[str]:
    """`_csv_lines` of pairs held as columns, as `_column_json_runs` writes their JSON lines."""
    import numpy as np

    from esdedup.match.measures import COSINE_PLACES, ESTIMATE_PLACES, shown

    names = list(map(_csv_cell, pairs.ids))
    hamming = _distinct_texts(pairs.hamming, lambda v: "" if v != v else int.__repr__(int(v)))
    cosines = ((np.zeros(len(pairs), dtype=np.int64), [""]) if pairs.cosine is None else
               _distinct_texts(pairs.cosine, lambda v: "" if v != v else _csv_cell(shown(v, COSINE_PLACES))))
    jaccard = _distinct_texts(pairs.jaccard, lambda v: "" if v != v else _csv_cell(shown(v, ESTIMATE_PLACES)))
    at, texts = _distinct_texts(pairs.containment,
                                lambda v: _csv_cell(shown(v if v == v and v else 0.0, ESTIMATE_PLACES)))
    at[np.isnan(pairs.jaccard)] = len(texts)  # shown with the Jaccard estimate only
    by, by_names = _names(pairs.decided_by)
    columns = [(pairs.a, names), (pairs.b, names), hamming, cosines, jaccard, (at, [*texts, ""]),
               (by, [_csv_cell(name) if name else "" for name in by_names])]
    return _text_rows(["", ",", ",", ",", ",", ",", ",", ""], columns, sep, cuts)


def _column_table_runs(pairs: Any, sep: str, cuts: list[int]) -> list[str]:
    """`_table_rows` of pairs held as columns, as `_column_json_runs` writes their JSON lines."""
    import numpy as np

    names = [f"{i if i.isprintable() else for_people(i):<24}" for i in pairs.ids]
    hamming = _distinct_texts(pairs.hamming, lambda v: f"{'-' if v != v else int(v):>7}")

    def number(v: float) -> str:
        return f"{'-' if v != v else format(v, '.4f'):>7}"

    cosines = ((np.zeros(len(pairs), dtype=np.int64), [number(math.nan)]) if pairs.cosine is None else
               _distinct_texts(pairs.cosine, number))
    by, by_names = _names(pairs.decided_by)
    columns = [(pairs.a, names), (pairs.b, names), hamming, cosines, _distinct_texts(pairs.jaccard, number),
               _distinct_texts(pairs.containment, number), (by, by_names)]
    return _text_rows(["", " ", " ", " ", " ", " ", "  ", ""], columns, sep, cuts)


def _names(values: Any) -> tuple[Any, list[str]]:
    """An object array of names as codes into the sorted distinct names."""
    import numpy as np

    names = sorted(set(values.tolist()))
    codes = np.zeros(len(values), dtype=np.int64)
    for code, name in enumerate(names):
        codes[values == name] = code
    return codes, names


def _distinct_texts(values: Any, show: Callable[[Any], str]) -> tuple[Any, list[str]]:
    """``show`` of each value of the array ``values`` (a Python number, as the pair's `Pair` holds it), once a
    distinct value, as a table of texts and where each value's text is in it: distinct by their bits, so that
    ``-0.0`` and ``0.0`` are two."""
    import numpy as np

    distinct, at = np.unique(values.view(f"i{values.itemsize}"), return_inverse=True)
    return at, [show(v) for v in distinct.view(values.dtype).tolist()]


def _text_rows(literals: list[str], columns: list[tuple[Any, list[str]]], sep: str, cuts: list[int]) -> list[str]:
    """The rows of ``columns`` (codes into a table of texts each) between ``literals``, those from each cut to the
    next joined by ``sep`` (`esdedup.match.native_kernels.text_rows`): in the extension when it is in use, else
    here."""
    import numpy as np

    from esdedup.match.native_kernels import text_rows

    codes, tables = [c for c, _ in columns], [t for _, t in columns]
    runs = text_rows(literals, codes, tables, sep, cuts)
    if runs is not None:
        return runs
    texts = [np.array(t, dtype=object)[c].tolist() for c, t in zip(codes, tables, strict=True)]
    parts = [part for column in zip(map(repeat, literals), texts, strict=False) for part in column]
    rows = ["".join(row) for row in zip(*parts, repeat(literals[-1]))]
    return [sep.join(rows[lo:hi]) for lo, hi in zip(cuts, cuts[1:], strict=False)]


def _measure_texts() -> tuple[Callable[[Any], str], Callable[[Any], str]]:
    """What a pair's cosine and its MinHash estimates are written as (`esdedup.match.measures.measures_row`'s
    rounding, then `_JSON`'s text), each distinct value worked out once."""
    from esdedup.match.measures import COSINE_PLACES, ESTIMATE_PLACES, shown

    return (_remembered(lambda value: _json_number(shown(value, COSINE_PLACES))),
            _remembered(lambda value: _json_number(shown(value, ESTIMATE_PLACES))))


def _json_number(value: Any) -> str:
    """``_JSON.encode(value)`` of a number: ``repr`` of a finite float, as its C encoder writes one, without the
    encoder's pass (a few microseconds, paid by each of the tens of thousands of estimates a large `dups`
    shows); the encoder itself for anything else."""
    if type(value) is float and value - value == 0.0:  # not NaN or an infinity
        return float.__repr__(value)
    return _JSON.encode(value)


def _remembered(show: Callable[[Any], str]) -> Callable[[Any], str]:
    """``show`` of each measure, remembered by the value (a large output shows tens of thousands of measures that
    take a few thousand values), at most 65,536 of them. Only a nonzero float is remembered: 0.0 and -0.0 are
    one key yet shown differently, NaN is equal to nothing, and 1 and 1.0 are one key."""
    seen: dict[float, str] = {}

    def remembered(value: Any) -> str:
        out = seen.get(value) if value else None
        if out is None:
            out = show(value)
            if value and value == value and type(value) is float and len(seen) < 1 << 16:
                seen[value] = out
        return out

    return remembered


#: What `_JSON` writes a string with (ensure_ascii off: the C encoder's ``encode_basestring``).
_JSON_STRING: Callable[[str], str] = json.encoder.encode_basestring  # type: ignore[attr-defined]


def _joined(lines: Iterable[str], sep: str, *, end: str = "", chunk: int = 4096, size: int = 1 << 20,
            escape: bool = True) -> Iterator[str]:
    """``lines`` joined by ``sep`` (then ``end``, if there was a line), a chunk of lines (or about ``size``
    characters of them) at a time; ``escape``: with the characters a terminal acts on written as ``\\u`` escapes as
    `json_text` writes them (the lines are JSON text: only their strings can hold such characters, and the
    escape is the same whatever surrounds it)."""
    escapes = _json_escapes if escape else str
    batch: list[str] = []
    first = True
    held = 0
    for line in lines:
        batch.append(line)
        held += len(line)
        if len(batch) >= chunk or held >= size:
            yield ("" if first else sep) + escapes(sep.join(batch))
            batch, first, held = [], False, 0
    if batch:
        yield ("" if first else sep) + escapes(sep.join(batch))
        first = False
    if not first:
        yield end


def _json_escapes(text: str) -> str:
    if text.isascii() and "\x7f" not in text:  # two scans in C, several times faster than the pattern's
        return text
    return _ACTIVE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _write_text(parts: Iterable[str]) -> None:
    """Write ``parts`` to standard output as they come (a large output in a few large writes)."""
    for part in parts:
        typer.echo(part, nl=False)


def _echo_lines(lines: Iterable[str], chunk: int = 1000) -> None:
    """Print lines a chunk at a time: `typer.echo` asks the terminal about colours on every call, which
    cost more than the pairs of a large `dups` themselves."""
    batch: list[str] = []
    for line in lines:
        batch.append(line)
        if len(batch) >= chunk:
            typer.echo("\n".join(batch))
            batch = []
    if batch:
        typer.echo("\n".join(batch))


#: The columns of `dups --format csv`: the JSON lines' keys, every one on every row.
PAIR_COLUMNS = ("a", "b", "hamming", "cosine", "jaccard", "containment", "decided_by")


def _csv_lines(pairs: Iterable[Any]) -> Iterator[str]:
    """The CSV row of each pair (`_csv_cell` of each of `PAIR_COLUMNS`), without its newline."""
    for p in pairs:
        yield ",".join(map(_csv_cell, map(p.to_dict().get, PAIR_COLUMNS)))


def _csv_cell(value: Any) -> str:
    """A cell as `csv.writer` (the excel dialect) writes it among others: a measure not computed is empty, a
    float its ``repr``; a str passes through `for_people`, as in the table (a terminal the output reaches acts
    on none of its characters, and no line break is left in it), and is quoted when it holds a comma or a
    quote."""
    if value is None:
        return ""
    if isinstance(value, float):
        return float.__repr__(value)
    if not isinstance(value, str):
        return str(value)
    text = value if value.isprintable() else for_people(value)
    return '"' + text.replace('"', '""') + '"' if "," in text or '"' in text else text


def _table_rows(pairs: Iterable[Any]) -> Iterator[str]:
    """The table's row of each pair (`Printer.pairs`)."""
    number = _remembered(_number)
    for p in pairs:
        a, b = p.a, p.b
        if not (type(a) is str and type(b) is str and (a + b).isprintable()):
            a, b = for_people(a), for_people(b)
        yield (f"{a:<24} {b:<24} {'-' if p.hamming is None else p.hamming:>7} {number(p.cosine):>7} "
               f"{number(p.jaccard):>7} {number(p.containment):>7}  {p.decided_by}")


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _measures(m: dict[str, Any], *, sep: str) -> str:
    """A match's measures, named: what the rule read to call it a near-duplicate."""
    parts = [f"hamming {'-' if m['hamming'] is None else m['hamming']}", f"vector cosine {_number(m['cosine'])}"]
    if m.get("jaccard") is not None:
        parts += [f"jaccard {m['jaccard']:.4f}", f"containment {m['containment']:.4f}"]
    if m.get("decided_by"):
        parts.append(f"decided by {m['decided_by']}")
    return sep.join(parts)


def _progress_line(s: Any) -> str:
    rate = s.read / s.seconds if s.seconds else 0.0
    mb = s.bytes / 1e6 / s.seconds if s.seconds else 0.0
    return (f"read {s.read}  indexed {s.indexed}  duplicates {s.duplicates}  failed {s.failed}  "
            f"{rate:.0f} docs/s  {mb:.2f} MB/s")
