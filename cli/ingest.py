"""``esdedup ingest``: fingerprint and index articles, labelling near-duplicates as they arrive."""
import hashlib
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
    refuse_inert_thresholds,
    threshold_options,
)
from .output import Printer, for_people

app = typer.Typer()


def default_checkpoint(index: str, conn: Connection, paths: list[Path]) -> Path:
    """Checkpoints live in the local data folder, never in the working folder, one per server, index and
    set of inputs (by canonical path, so any spelling of the same inputs resumes the same run): runs over
    other inputs write the same index at once, each with its own checkpoint, and the same inputs twice at
    once meet on one checkpoint, which the second is refused."""
    from esdedup.readers.files import source_name
    from esdedup.store.local import default_data_dir

    base = conn.data_dir or default_data_dir()
    settings = conn.settings()
    where = "local" if settings is None else "es-" + hashlib.sha1(settings.url.encode()).hexdigest()[:10]
    inputs = hashlib.sha1("\0".join(sorted({source_name(p) for p in paths})).encode()).hexdigest()[:10]
    return base / "checkpoints" / f"{where}-{index}-{inputs}.json"


def spool_stdin(base: Path) -> Path:
    """Standard input (``-``) as a file of the data folder, named by the SHA-1 of what was read: the readers
    take files (a format is sniffed from the content), the dead letters and the checkpoint name it, and the
    same input piped again is the same file, which --resume continues."""
    import sys
    import tempfile

    folder = base / "stdin"
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha1()
    with tempfile.NamedTemporaryFile(dir=folder, delete=False) as out:
        while chunk := sys.stdin.buffer.read(1 << 20):
            digest.update(chunk)
            out.write(chunk)
    path = folder / digest.hexdigest()
    Path(out.name).replace(path)
    return path


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
    from esdedup.ingest import IngestOptions
    from esdedup.ingest import ingest as run_ingest

    printer = Printer(json_out=json_out, quiet=quiet)
    if Path("-") in paths:
        from esdedup.store.local import default_data_dir

        stdin = spool_stdin(conn.data_dir or default_data_dir())
        paths = [stdin if p == Path("-") else p for p in paths]
        if not (quiet or json_out):
            typer.echo(f"standard input read into {for_people(stdin)} (the name its records carry)", err=True)
    opts = IngestOptions(format=format.value, id_field=id_field, text_field=text_field, title_field=title_field,
                         on_duplicate=on_duplicate,
                         dead_letter=dead_letter or Path(f"{index}.dead-letter.jsonl"), workers=workers,
                         thresholds=thresholds.overrides(),
                         checkpoint=checkpoint or default_checkpoint(index, conn, paths), resume=resume)
    config = fp.config()
    with opened_store(index, conn, shards=shards, replicas=replicas) as store, printer.progress() as progress:
        refuse_inert_thresholds(store, opts.thresholds, creates=True, new_config=config)
        summary = run_ingest([str(p) for p in paths], store, config, opts, progress=progress)
    printer.summary(summary, conn.redact)
    if summary.error:
        typer.echo(f"Error: {for_people(conn.redact(summary.error))}", err=True)
        raise typer.Exit(3)
    if summary.failed:
        raise typer.Exit(1)
