"""``esdedup label``: cluster labels for documents other programs wrote through the esdedup ingest pipeline."""
import typer

from .common import (
    Connection,
    Containment,
    Cosine,
    Hamming,
    Index,
    Jaccard,
    JsonOut,
    connection_options,
    handles_errors,
    opened_store,
    refuse_inert_thresholds,
    threshold_overrides,
)
from .output import json_text

app = typer.Typer()


@app.command()
@handles_errors
@connection_options
def label(
    conn: Connection,
    index: Index,
    hamming: Hamming = None,
    cosine: Cosine = None,
    jaccard: Jaccard = None,
    containment: Containment = None,
    json_out: JsonOut = False,
) -> None:
    """Label the documents that carry dedup fields but no cluster yet (written through the index's esdedup
    pipeline by any client), as esdedup ingest labels its own: run it after each load, or every few minutes;
    it is safe beside running writers, and a second run finds nothing to do.

    Example: esdedup label --index news --es http://127.0.0.1:9250
    """
    from esdedup.ingest.label import label_new

    thresholds = threshold_overrides(hamming, cosine, jaccard, containment)
    with opened_store(index, conn) as store:
        refuse_inert_thresholds(store, thresholds)
        summary = label_new(store, thresholds=thresholds)
    if json_out:
        typer.echo(json_text(summary.to_dict()))
        return
    typer.echo(f"{summary.found} unlabelled documents: {summary.labelled} labelled ({summary.duplicates} "
               f"near-duplicates), {summary.changed} changed meanwhile and left to the next run; "
               f"{summary.relabelled} documents labelled before moved to an earlier representative "
               f"({summary.seconds:.1f} s)")
