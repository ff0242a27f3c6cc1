"""``esdedup label``: cluster labels for documents other programs wrote through the esdedup ingest pipeline."""
from typing import Annotated

import typer

from .common import (
    Connection,
    Index,
    JsonOut,
    ThresholdOptions,
    connection_options,
    handles_errors,
    opened_store,
    partition_store,
    threshold_options,
)
from .output import json_text

app = typer.Typer()


@app.command()
@handles_errors
@connection_options
@threshold_options
def label(
    conn: Connection,
    thresholds: ThresholdOptions,
    index: Index,
    partition: Annotated[str | None, typer.Option(
        "--partition", metavar="I/P",
        help="Only partition I of P (0 <= I < P): the unlabelled documents of its share (a range of content "
             "SHA-1s). Run I = 0 .. P-1 as P processes, on any machines, at once or one after another: together "
             "they leave the labels one run leaves. Progress and a summary go to stderr (JSON lines with "
             "--json).")] = None,
    json_out: JsonOut = False,
) -> None:
    """Label the documents that carry dedup fields but no cluster yet (written through the index's esdedup
    pipeline by any client), as esdedup ingest labels its own: run it after each load, or every few minutes;
    it is safe beside running writers, and a second run finds nothing to do.

    Example: esdedup label --index news --es http://127.0.0.1:9250
    """
    from esdedup.api import refuse_inert_thresholds
    from esdedup.ingest.label import LabelSummary, label_new

    if partition is not None:
        with partition_store(partition, json_out, index, conn, thresholds) as (part, store, lines):
            def progress(summary: LabelSummary) -> None:
                lines.progress(summary.to_dict())

            done = label_new(store, thresholds=thresholds.overrides(), partition=part, progress=progress)
        lines.line("summary", done.to_dict())
        return
    with opened_store(index, conn) as store:
        refuse_inert_thresholds(store, thresholds.overrides())
        summary = label_new(store, thresholds=thresholds.overrides())
    if json_out:
        typer.echo(json_text(summary.to_dict()))
        return
    typer.echo(f"{summary.found} unlabelled documents: {summary.labelled} labelled ({summary.duplicates} "
               f"near-duplicates), {summary.changed} changed meanwhile and left to the next run; "
               f"{summary.relabelled} documents labelled before moved to an earlier representative "
               f"({summary.seconds:.1f} s)")
