"""The ``esdedup`` command: a thin typer layer over the library.

Each command parses options, calls one library function and prints. Library errors (`EsdedupError`) are
turned into one ``Error: ...`` line and an exit code here, once: 0 ok, 1 failures in the data, 2 usage or
configuration, 3 server or connection.
"""
import functools
import json
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from esdedup import __version__
from esdedup.errors import EsdedupError

from . import options as o
from .output import Printer

app = typer.Typer(
    name="esdedup",
    help="Find near-duplicate articles (Chinese first) with SimHash bands and TF vectors, in an embedded "
         "store or in Elasticsearch.\n\nWithout --es (or ESDEDUP_ES_URL) everything runs on the embedded "
         "local store in --data-dir.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,
    rich_markup_mode=None,
)

F = TypeVar("F", bound=Callable[..., Any])


def handles_errors(fn: F) -> F:
    """Turn library errors into one line on stderr and the error's exit code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except EsdedupError as exc:
            typer.echo(f"Error: {exc}", err=True)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            typer.echo("Interrupted.", err=True)
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]


class _OneLineFormatter(logging.Formatter):
    """Log lines without stack traces: a library that logs an exception (the Elasticsearch transport
    does, on every retry) shows its type and message only, redacted."""

    def formatException(self, ei: Any) -> str:  # noqa: N802 (logging's name)
        from esdedup.redact import redact

        return redact(f"  caused by {ei[0].__name__}: {ei[1]}")

    def formatStack(self, stack_info: str) -> str:  # noqa: N802
        return ""


def _version(value: bool) -> None:
    if value:
        typer.echo(f"esdedup {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log what happens (to stderr).")] = False,
) -> None:
    # Logging is configured here and nowhere in the library; jieba announces its dictionary on
    # every start, which is noise for a command-line user.
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:
        if type(handler) is logging.StreamHandler:  # the one basicConfig made (not a test harness's)
            handler.setFormatter(_OneLineFormatter("%(levelname)s %(name)s: %(message)s"))
    import jieba

    jieba.setLogLevel(logging.WARNING)
    logging.getLogger("elastic_transport").setLevel(logging.INFO if verbose else logging.ERROR)


@contextmanager
def opened_store(index: str, conn: o.Connection, *, shards: int = 1, replicas: int | None = None) -> Iterator[Any]:
    from esdedup.api import open_store

    store = open_store(index, es_url=conn.es, data_dir=conn.data_dir, ca_certs=conn.ca_certs,
                       verify_certs=not conn.no_verify_certs, client_cert=conn.client_cert,
                       client_key=conn.client_key, shards=shards, replicas=replicas)
    try:
        yield store
    finally:
        store.close()


def default_checkpoint(index: str, conn: o.Connection) -> Path:
    """Checkpoints live in the local data folder, one per index and server, never in the working folder."""
    import hashlib

    from esdedup.connect import resolve_settings
    from esdedup.store.local import default_data_dir

    base = conn.data_dir or default_data_dir()
    settings = resolve_settings(conn.es)
    where = "local" if settings is None else "es-" + hashlib.sha1(settings.url.encode()).hexdigest()[:10]
    return base / "checkpoints" / f"{where}-{index}.json"


# -- ingest --------------------------------------------------------------------------------------------
@app.command()
@handles_errors
@o.connection_options
@o.fingerprint_options
def ingest(
    conn: o.Connection,
    fp: o.FingerprintOptions,
    paths: Annotated[list[Path], typer.Argument(help="Files or directories (read recursively).")],
    index: o.Index,
    format: Annotated[str, typer.Option("--format", help="auto, txt, jsonl, csv or tsv.")] = "auto",
    id_field: Annotated[str, typer.Option(help="JSONL/CSV field holding the document id.")] = "id",
    text_field: Annotated[str, typer.Option(help="JSONL/CSV field holding the text.")] = "text",
    title_field: Annotated[str, typer.Option(help="JSONL/CSV field holding the title.")] = "title",
    on_duplicate: Annotated[str, typer.Option(
        help="label: index everything and label near-duplicates; skip: do not index them; index: no labels."
    )] = "label",
    dead_letter: Annotated[Path | None, typer.Option(
        help="JSONL file for failed and skipped records (default: <index>.dead-letter.jsonl).")] = None,
    workers: Annotated[int, typer.Option(help="Fingerprinting processes (0 = one per CPU).")] = 0,
    resume: Annotated[bool, typer.Option(help="Continue an interrupted run from its checkpoint.")] = False,
    checkpoint: Annotated[Path | None, typer.Option(
        help="Checkpoint file (default: in the data folder, per index and server).")] = None,
    shards: Annotated[int, typer.Option(help="Shards, when the Elasticsearch index is created.")] = 1,
    replicas: Annotated[int | None, typer.Option(help="Replicas, when the Elasticsearch index is created.")] = None,
    hamming: o.Hamming = None,
    cosine: o.Cosine = None,
    jaccard: o.Jaccard = None,
    containment: o.Containment = None,
    json_out: o.JsonOut = False,
    quiet: o.Quiet = False,
) -> None:
    """Fingerprint and index articles, labelling near-duplicates as they arrive.

    Example: esdedup ingest ./articles --index news --on-duplicate label
    """
    from esdedup.ingest import IngestOptions
    from esdedup.ingest import ingest as run_ingest

    printer = Printer(json_out=json_out, quiet=quiet)
    opts = IngestOptions(format=format, id_field=id_field, text_field=text_field, title_field=title_field,
                         on_duplicate=on_duplicate,
                         dead_letter=dead_letter or Path(f"{index}.dead-letter.jsonl"), workers=workers,
                         thresholds=_thresholds(hamming, cosine, jaccard, containment),
                         checkpoint=checkpoint or default_checkpoint(index, conn), resume=resume)
    config = fp.config()
    with opened_store(index, conn, shards=shards, replicas=replicas) as store, printer.progress() as progress:
        summary = run_ingest([str(p) for p in paths], store, config, opts, progress=progress)
    printer.summary(summary, conn.redact)
    if summary.error:
        typer.echo(f"Error: {conn.redact(summary.error)}", err=True)
        raise typer.Exit(3)
    if summary.failed:
        raise typer.Exit(1)


def _thresholds(hamming: int | None, cosine: float | None, jaccard: float | None,
                containment: float | None) -> Any:
    """The threshold options given on the command line; the others come from the index's config."""
    from esdedup.thresholds import ThresholdOverrides

    given = {"hamming_k": hamming, "cosine": cosine, "jaccard": jaccard, "containment": containment}
    return ThresholdOverrides(**{k: v for k, v in given.items() if v is not None})


# -- similar ---------------------------------------------------------------------------------------------
@app.command()
@handles_errors
@o.connection_options
def similar(
    conn: o.Connection,
    index: o.Index,
    text: Annotated[str | None, typer.Option(help="Find near-duplicates of this text.")] = None,
    id: Annotated[str | None, typer.Option("--id", help="...of this stored document.")] = None,
    file: Annotated[Path | None, typer.Option(help="...of this file's text (any supported encoding).")] = None,
    hamming: o.Hamming = None,
    cosine: o.Cosine = None,
    jaccard: o.Jaccard = None,
    containment: o.Containment = None,
    top: Annotated[int, typer.Option(help="At most this many results.")] = 10,
    knn: Annotated[bool, typer.Option(help="Use the kNN vector path (short texts) instead of band lookups.")] = False,
    explain: Annotated[bool, typer.Option(help="Show shared bands, Hamming, cosine and top shared terms.")] = False,
    json_out: o.JsonOut = False,
) -> None:
    """Look up the near-duplicates of a text, a file or a stored document.

    Example: esdedup similar --index news --text "台湾居民明日起持台胞证可通关" --explain
    """
    from esdedup.api import similar_to

    if sum(x is not None for x in (text, id, file)) != 1:
        raise typer.BadParameter("give exactly one of --text, --id or --file")
    printer = Printer(json_out=json_out)
    with opened_store(index, conn) as store:
        results = similar_to(store, text=text, doc_id=id, path=str(file) if file else None,
                             top=top, knn=knn, explain=explain,
                             thresholds=_thresholds(hamming, cosine, jaccard, containment))
    printer.matches(results, explain=explain)


# -- dups ------------------------------------------------------------------------------------------------
@app.command()
@handles_errors
@o.connection_options
def dups(
    conn: o.Connection,
    index: o.Index,
    hamming: o.Hamming = None,
    cosine: o.Cosine = None,
    jaccard: o.Jaccard = None,
    containment: o.Containment = None,
    format: Annotated[str, typer.Option("--format", help="jsonl or table.")] = "jsonl",
    write_clusters: Annotated[bool, typer.Option(help="Write cluster_id back to every document in a pair.")] = False,
    max_bucket: Annotated[int, typer.Option(help="Cap on documents compared per band value.")] = 1000,
) -> None:
    """List every near-duplicate pair of an index (band collisions, verified exactly).

    Example: esdedup dups --index news --format table --write-clusters
    """
    from esdedup.api import all_pairs

    if format not in ("jsonl", "table"):
        raise typer.BadParameter("--format must be jsonl or table")
    printer = Printer()
    with opened_store(index, conn) as store:
        report = all_pairs(store, max_bucket=max_bucket, write_clusters=write_clusters,
                           thresholds=_thresholds(hamming, cosine, jaccard, containment))
    printer.pairs(report, format)


# -- mapping / info -------------------------------------------------------------------------------------
@app.command()
@handles_errors
@o.fingerprint_options
def mapping(
    fp: o.FingerprintOptions,
    index: o.Index,
    template: Annotated[bool, typer.Option(help="Print an index template (index_patterns = the index name).")] = False,
) -> None:
    """Print the Elasticsearch mapping (with the fingerprint config in _meta) for an index.

    Example: esdedup mapping --index news > news-mapping.json
    """
    from esdedup.config import FingerprintConfig
    from esdedup.schema import mapping_for, template_for

    config = fp.config() or FingerprintConfig()
    body = template_for(config, [index]) if template else {"mappings": mapping_for(config)}
    typer.echo(json.dumps(body, ensure_ascii=False, indent=2))


@app.command()
@handles_errors
@o.connection_options
def info(
    conn: o.Connection,
    index: o.Index,
    json_out: o.JsonOut = False,
) -> None:
    """Show an index's document count, fingerprint config, band layout and most crowded band values.

    Example: esdedup info --index news
    """
    from esdedup.api import describe

    with opened_store(index, conn) as store:
        Printer(json_out=json_out).info(describe(store))


# -- compare ------------------------------------------------------------------------------------------
@app.command()
@handles_errors
@o.fingerprint_options
def compare(
    fp: o.FingerprintOptions,
    files: Annotated[list[Path], typer.Argument(help="Two or more text files (novels welcome; GBK is fine).")],
    max_ratio: Annotated[float, typer.Option(help="Skip pairs whose sizes differ more than this factor.")] = 1.5,
    format: Annotated[str, typer.Option("--format", help="table or jsonl.")] = "table",
) -> None:
    """Pairwise similarity table of design document 004: cosine, adjusted cosine, weighted Jaccard, average,
    Hamming.

    Example: esdedup compare 酒神.txt 酒神1.txt 莽荒纪.txt --weighting tf_length
    """
    from esdedup.api import compare_files

    if len(files) < 2:
        raise typer.BadParameter("give at least two files")
    rows = compare_files([str(f) for f in files], config=fp.config(), max_ratio=max_ratio)
    Printer().compare(rows, format)


def run() -> None:
    """Console-script entry point."""
    from . import extra  # noqa: F401  (registers the commands that live in other modules)

    app()


if __name__ == "__main__":  # pragma: no cover
    run()
    sys.exit(0)
