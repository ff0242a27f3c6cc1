"""``esdedup eval`` (precision / recall / F1 against labelled pairs) and ``esdedup synth`` (make a labelled
benchmark from a real corpus)."""
from pathlib import Path
from typing import Annotated, Any

import typer

from .common import (
    Connection,
    FingerprintOptions,
    JsonOut,
    connection_options,
    fingerprint_options,
    handles_errors,
    opened_store,
)
from .output import for_people, json_text

app = typer.Typer()


def _numbers(text: str | None, what: str, number: type = float) -> list[Any] | None:
    """'0.5,0.6,off' -> [0.5, 0.6, None]; each value read with ``number`` (int: whole numbers only)."""
    if text is None:
        return None
    out: list[Any] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if part.lower() in ("off", "none"):
            out.append(None)
            continue
        try:
            out.append(number(part))
        except ValueError:
            kind = "a whole number" if number is int else "a number"
            raise typer.BadParameter(f"{what}: {part!r} is not {kind} (or 'off')") from None
    if not out:
        raise typer.BadParameter(f"{what}: give at least one value")
    return out


def _row_line(label: str, row) -> str:
    s = row.setting
    parts = [f"hamming<={s.hamming_k}", f"cosine>={s.cosine}", f"jaccard>={s.jaccard}",
             f"containment>={s.containment if s.containment is not None else 'off'}"]
    sc = row.overall
    line = (f"{label:<12} P {sc.precision:.4f}  R {sc.recall:.4f}  F1 {sc.f1:.4f}  "
            f"(tp {sc.tp} fp {sc.fp} fn {sc.fn} tn {sc.tn})  {'  '.join(parts)}")
    for c, cs in row.by_class.items():
        line += f"\n{'':<12}   {c:<7} P {cs.precision:.4f}  R {cs.recall:.4f}  F1 {cs.f1:.4f}  (n {cs.tp + cs.fp + cs.fn + cs.tn})"
    return line


@app.command("eval")
@handles_errors
@connection_options
@fingerprint_options
def eval_command(
    conn: Connection,
    fp: FingerprintOptions,
    pairs: Annotated[Path, typer.Option("--pairs", help="Labelled pairs: JSONL of {\"a\", \"b\", \"label\": 0|1}.")],
    docs: Annotated[list[Path] | None, typer.Option(
        "--docs", help="Documents to index first (JSONL/CSV/TXT, as for ingest); repeat for several files. "
                       "Without it --index must already hold them.")] = None,
    index: Annotated[str | None, typer.Option(
        "--index", "-i", help="Index/collection to use (default: a temporary one, deleted afterwards).")] = None,
    keep: Annotated[bool, typer.Option(help="Keep the temporary index.")] = False,
    cosines: Annotated[str | None, typer.Option(help="Cosine thresholds to sweep, e.g. 0.7,0.8,0.9.")] = None,
    jaccards: Annotated[str | None, typer.Option(help="Short-text Jaccard thresholds to sweep.")] = None,
    containments: Annotated[str | None, typer.Option(
        help="Short-text containment thresholds to sweep ('off' switches it off).")] = None,
    hammings: Annotated[str | None, typer.Option(
        help="Hamming distances to sweep (default 0..the index's hamming_k).")] = None,
    max_bucket: Annotated[int, typer.Option(min=2, help="Cap on documents compared per band value.")] = 1000,
    workers: Annotated[int, typer.Option(
        min=0, help="Fingerprinting processes while indexing (0 = one per CPU).")] = 0,
    id_field: Annotated[str, typer.Option(help="Document id field of --docs.")] = "id",
    text_field: Annotated[str, typer.Option(help="Text field of --docs.")] = "text",
    top: Annotated[int, typer.Option(min=1, help="Settings listed (best F1 first).")] = 5,
    json_out: JsonOut = False,
) -> None:
    """Precision, recall and F1 of near-duplicate detection against labelled pairs, over a sweep of
    thresholds, with the best setting (overall and per length class).

    Example: esdedup eval --pairs labels.jsonl --docs docs.jsonl --t2s --tokenizer rjieba
    """
    from esdedup.quality.evaluate import evaluate, read_labels, temporary_index

    labels = read_labels(pairs)
    config = fp.config()
    if index is None and not docs:
        raise typer.BadParameter("give --docs to index, or --index naming an index that holds the documents")
    axes = {"cosines": _numbers(cosines, "--cosines"), "jaccards": _numbers(jaccards, "--jaccards"),
            "containments": _numbers(containments, "--containments")}
    if axes["containments"]:  # 0 switches containment off, as --containment 0 does elsewhere
        axes["containments"] = [None if v == 0 else v for v in axes["containments"]]
    hs = _numbers(hammings, "--hammings", int)
    with opened_store(index or temporary_index(), conn) as store:
        report = evaluate(store, labels, docs=docs or [], config=config, hammings=hs, **axes,
                          drop=index is None and not keep, max_bucket=max_bucket, workers=workers,
                          id_field=id_field, text_field=text_field)
    if json_out:
        typer.echo(json_text(report.to_dict(top=top)))
        return
    typer.echo(f"{report.documents} documents in {for_people(report.index)} ({report.backend}); {report.labelled} labelled "
               f"pairs ({report.positives} duplicates); {report.candidates} candidate pairs")
    if report.missing_ids:
        typer.echo(f"warning: {report.missing_ids} labelled ids are not in the index", err=True)
    typer.echo(_row_line("configured", report.configured))
    typer.echo(_row_line("best", report.best))
    for rank, row in enumerate(report.rows[1:top], 2):
        typer.echo(_row_line(f"#{rank}", row))
    for key, n in report.crowded:
        typer.echo(f"warning: band value {key} is shared by {n} documents; only {max_bucket} were compared",
                   err=True)


@app.command()
@handles_errors
def synth(
    paths: Annotated[list[Path], typer.Argument(help="Real corpus: files or directories (JSONL/CSV/TXT).")],
    docs_out: Annotated[Path, typer.Option("--docs-out", help="Where to write DOCS.jsonl.")],
    labels_out: Annotated[Path, typer.Option("--labels-out", help="Where to write LABELS.jsonl.")],
    sources: Annotated[int, typer.Option(help="Source documents to sample.")] = 1000,
    variants: Annotated[int, typer.Option(help="Variants per source.")] = 2,
    recipes: Annotated[str | None, typer.Option(
        help="Comma-separated recipes (default all): chars, words, sentences, reorder, affix, convert, noise, "
             "mixed.")] = None,
    char_rate: Annotated[float, typer.Option(help="Share of characters edited.")] = 0.03,
    word_rate: Annotated[float, typer.Option(help="Share of words deleted, duplicated or swapped.")] = 0.05,
    sentence_rate: Annotated[float, typer.Option(help="Share of sentences deleted or inserted.")] = 0.10,
    reorder_rate: Annotated[float, typer.Option(help="Share of sentences moved.")] = 0.20,
    affix_min: Annotated[float, typer.Option(help="Smallest prefix/suffix, as a share of the length.")] = 0.10,
    affix_max: Annotated[float, typer.Option(help="Largest prefix/suffix, as a share of the length.")] = 0.40,
    noise_rate: Annotated[float, typer.Option(help="Strength of whitespace and punctuation noise.")] = 0.10,
    negatives: Annotated[int, typer.Option(help="Label-0 pairs per source (half hard, half random).")] = 4,
    short_max: Annotated[int, typer.Option(help="Texts shorter than this are 'short'.")] = 100,
    long_min: Annotated[int, typer.Option(help="Texts at least this long are 'long'.")] = 2000,
    seed: Annotated[int, typer.Option(help="Random seed (same input + seed = same output).")] = 0,
    text_field: Annotated[str, typer.Option(help="JSONL/CSV field holding the text.")] = "text",
    id_field: Annotated[str, typer.Option(help="JSONL/CSV field holding the id.")] = "id",
    json_out: JsonOut = False,
) -> None:
    """Make a labelled near-duplicate benchmark (DOCS.jsonl + LABELS.jsonl) from a real corpus: variants
    with character and word edits, sentence deletions/insertions, reordering, a prefix or suffix,
    Traditional/Simplified conversion, whitespace and punctuation noise; plus hard and random negatives.

    Example: esdedup synth corpus.jsonl --docs-out docs.jsonl --labels-out labels.jsonl --sources 2000
    """
    from esdedup.quality.labelsfile import owned_labels, write_labels
    from esdedup.quality.synth import RECIPES, SynthOptions, make_benchmark, write_jsonl
    from esdedup.readers import Record, read_records

    # Checked before any input is read, and owned while written: a review page that owns the file refuses
    # this, and this refuses a review page meanwhile.
    with owned_labels(labels_out, "esdedup synth writing it") as target:
        chosen = tuple(r.strip() for r in recipes.split(",") if r.strip()) if recipes else RECIPES
        opts = SynthOptions(sources=sources, variants=variants, recipes=chosen, char_rate=char_rate,
                            word_rate=word_rate, sentence_rate=sentence_rate, reorder_rate=reorder_rate,
                            affix_rate=(affix_min, affix_max), noise_rate=noise_rate, negatives=negatives,
                            short_max=short_max, long_min=long_min, seed=seed)
        records = [{"id": r.id, "text": r.text}
                   for r in read_records([str(p) for p in paths], text_field=text_field, id_field=id_field)
                   if isinstance(r, Record)]
        bench = make_benchmark(records, opts)
        write_jsonl(bench.docs, docs_out)
        write_labels(target, bench.labels)
    stats = bench.stats()
    if json_out:
        typer.echo(json_text(stats))
    else:
        typer.echo(f"{stats['documents']} documents ({stats['by_class']}) -> {for_people(docs_out)}; "
                   f"{stats['positives']} duplicate and {stats['negatives']} non-duplicate pairs -> "
                   f"{for_people(labels_out)}")
