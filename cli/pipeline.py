"""``esdedup pipeline ...``: the ingest pipeline that fingerprints documents on the node (the esdedup plugin)."""
from typing import Annotated

import typer

from .common import Connection, Index, connection_options, handles_errors, opened_store

app = typer.Typer(
    name="pipeline",
    help="The ingest pipeline of an index (needs the esdedup Elasticsearch plugin on every node): documents "
         "written by any client get their dedup fields on the node.\n\n"
         "Example: esdedup pipeline put --index news --es http://127.0.0.1:9250",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@app.command("put")
@handles_errors
@connection_options
def put(
    conn: Connection,
    index: Index,
    field: Annotated[str, typer.Option("--field", help="The document field holding the text.")] = "text",
    name: Annotated[str | None, typer.Option(
        "--name", help="Pipeline name (default: esdedup-<index>).")] = None,
    default: Annotated[bool, typer.Option(
        "--default/--no-default", help="Make it the index's default pipeline (index.default_pipeline).")] = True,
) -> None:
    """Create the pipeline from the index's own fingerprint config and make it the index's default pipeline.

    Example: esdedup pipeline put --index news --es http://127.0.0.1:9250
    """
    from esdedup.ingest.pipeline import put_pipeline

    with opened_store(index, conn) as store:
        made = put_pipeline(store, name=name, field=field, default=default)
    typer.echo(made)
