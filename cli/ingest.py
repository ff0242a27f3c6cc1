"""``esdedup ingest``: fingerprint and index articles, labelling near-duplicates as they arrive."""
import sys
from pathlib import Path
from typing import Annotated

import typer

from .common import (
    Connection,
    FingerprintOptions,
    Index,
    InputFormat,
    JsonOut,
    Quiet,
    ThresholdOptions,
    connection_options,
    fingerprint_options,
    handles_errors,
    opened_store,
    threshold_options,
)
from .output import Printer, for_people
from .start import EARLY_SIGTERM

app = typer.Typer()


@app.command()
@handles_errors
@connection_options
@threshold_options
@fingerprint_options
def ingest(
    conn: Connection,
    thresholds: ThresholdOptions,
    fp: FingerprintOptions,
    paths: Annotated[list[Path], typer.Argument(
        help="Files or directories (read recursively); - reads standard input (kept in the data folder).")],
    index: Index,
    format: Annotated[InputFormat, typer.Option("--format", help="Input format (auto: by file name and content).")
                      ] = InputFormat.auto,
    id_field: Annotated[str, typer.Option(help="JSONL/CSV field holding the document id.")] = "id",
    text_field: Annotated[str, typer.Option(help="JSONL/CSV field holding the text.")] = "text",
    title_field: Annotated[str, typer.Option(help="JSONL/CSV field holding the title.")] = "title",
    on_duplicate: Annotated[str, typer.Option(
        help="label: index everything and label near-duplicates; skip: do not index them; index: no labels."
    )] = "label",
    dead_letter: Annotated[Path | None, typer.Option(
        help="JSONL file for failed and skipped records (default: <index>.dead-letter.jsonl).")] = None,
    workers: Annotated[int, typer.Option(min=0, help="Fingerprinting processes (0 = one per CPU).")] = 0,
    resume: Annotated[bool, typer.Option(help="Continue an interrupted run from its checkpoint.")] = False,
    checkpoint: Annotated[Path | None, typer.Option(
        help="Checkpoint file (default: in the data folder, per server, index and input paths).")] = None,
    shards: Annotated[int, typer.Option(min=1, help="Shards, when the Elasticsearch index is created.")] = 1,
    replicas: Annotated[int | None, typer.Option(
        min=0, help="Replicas, when the Elasticsearch index is created (default: one where a second data node can "
                    "hold it, none on one node: auto_expand_replicas 0-1).")] = None,
    json_out: JsonOut = False,
    quiet: Quiet = False,
) -> None:
    """Fingerprint and index articles, labelling near-duplicates as they arrive.

    Example: esdedup ingest ./articles --index news --on-duplicate label
    """
    from esdedup.api import refuse_inert_thresholds
    from esdedup.ingest import IngestOptions, Stop, default_checkpoint, default_dead_letter
    from esdedup.ingest import ingest as run_ingest
    from esdedup.readers.files import spool
    from esdedup.store.local import default_data_dir

    stop = Stop()  # SIGTERM stops the run, from the command's first line on (one then: nothing is read)
    with EARLY_SIGTERM.handed_to(stop):
        stop.refuse_if_asked()
        printer = Printer(json_out=json_out, quiet=quiet)
        if Path("-") in paths:
            stdin = spool(sys.stdin.buffer, (conn.data_dir or default_data_dir()) / "stdin")
            paths = [stdin if p == Path("-") else p for p in paths]
            if not (quiet or json_out):
                typer.echo(f"standard input read into {for_people(stdin)} (the name its records carry)", err=True)
        config = fp.config()
        with opened_store(index, conn, shards=shards, replicas=replicas) as store, printer.progress() as progress:
            opts = IngestOptions(format=format.value, id_field=id_field, text_field=text_field,
                                 title_field=title_field, on_duplicate=on_duplicate,
                                 dead_letter=dead_letter or default_dead_letter(index), workers=workers,
                                 thresholds=thresholds.overrides(),
                                 checkpoint=checkpoint or default_checkpoint(store, paths, data_dir=conn.data_dir),
                                 resume=resume)
            refuse_inert_thresholds(store, thresholds.overrides(), creates=True, new_config=config)
            summary = run_ingest([str(p) for p in paths], store, config, opts, progress=progress, stop=stop)
    printer.summary(summary, conn.redact)
    if summary.error:
        typer.echo(f"Error: {for_people(conn.redact(summary.error))}", err=True)
        raise typer.Exit(3)
    if summary.failed:
        raise typer.Exit(1)
