"""``esdedup mapping`` (the Elasticsearch mapping for a config) and ``esdedup info`` (what an index holds)."""
from typing import Annotated

import typer

from .common import (
    Connection,
    FingerprintOptions,
    Index,
    JsonOut,
    connection_options,
    fingerprint_options,
    handles_errors,
    opened_store,
)
from .output import Printer, json_text

app = typer.Typer()


@app.command()
@handles_errors
@fingerprint_options
def mapping(
    fp: FingerprintOptions,
    index: Index,
    template: Annotated[bool, typer.Option(help="Print an index template (index_patterns = the index name).")] = False,
) -> None:
    """Print the Elasticsearch mapping (with the fingerprint config in _meta) for an index.

    Example: esdedup mapping --index news > news-mapping.json
    """
    from esdedup.fingerprint.config import FingerprintConfig
    from esdedup.schema import mapping_for, template_for

    config = fp.config() or FingerprintConfig()
    body = template_for(config, [index]) if template else {"mappings": mapping_for(config)}
    typer.echo(json_text(body, indent=2))


@app.command()
@handles_errors
@connection_options
def info(
    conn: Connection,
    index: Index,
    json_out: JsonOut = False,
) -> None:
    """Show an index's document count, fingerprint config, band layout and most crowded band values.

    Example: esdedup info --index news
    """
    from esdedup.api import describe

    with opened_store(index, conn) as store:
        Printer(json_out=json_out).info(describe(store))
