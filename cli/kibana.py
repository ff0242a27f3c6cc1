"""``esdedup kibana ...``: Kibana saved objects for an index (see `esdedup.es.kibana`)."""
from typing import Annotated

import typer

from .common import (
    Connection,
    FingerprintOptions,
    Index,
    connection_options,
    fingerprint_options,
    handles_errors,
    opened_store,
)

app = typer.Typer(
    name="kibana",
    help="Kibana saved objects that make an esdedup index readable in Kibana.\n\n"
         "Example: esdedup kibana export --index news --es http://127.0.0.1:9250 > saved_objects.ndjson",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _is_pattern(index: str) -> bool:
    return any(c in index for c in "*,")


@app.command("export")
@handles_errors
@connection_options
@fingerprint_options
def export(
    conn: Connection,
    fp: FingerprintOptions,
    index: Index,
    time_field: Annotated[str | None, typer.Option(
        "--time-field", help="Date field for the data view's time filter (default: none, show all).")] = None,
) -> None:
    """Print Kibana saved objects (NDJSON) for an index: a data view whose dedup.* fields carry labels and
    descriptions, a saved search "near-duplicate clusters", and tables of cluster sizes and of the most
    crowded band and MinHash LSH key values.

    The band fields come from the index's fingerprint config when the index exists, else from the
    fingerprint options (or the defaults). Import the file in Kibana 8 under Stack Management > Saved
    objects > Import, or with POST /api/saved_objects/_import.

    Example: esdedup kibana export --index news --es http://127.0.0.1:9250 > saved_objects.ndjson
    """
    from esdedup.errors import IndexNotFound
    from esdedup.es.kibana import saved_objects, to_ndjson
    from esdedup.fingerprint.config import FingerprintConfig
    from esdedup.store.names import mismatch_error

    given = fp.config()
    stored = None
    if not _is_pattern(index):
        with opened_store(index, conn) as store:
            try:
                stored = store.open(None, create=False).config
            except IndexNotFound:
                stored = None
    if stored is not None:
        if given is not None and not stored.compatible_with(given):
            raise mismatch_error(index, stored, given)
        config = stored
    else:
        what = "is a pattern" if _is_pattern(index) else "was not found"
        source = "the fingerprint options" if given is not None else "the default fingerprint config"
        typer.echo(f"note: index {index!r} {what}; the band fields follow {source}", err=True)
        config = given or FingerprintConfig()
    typer.echo(to_ndjson(saved_objects(index, config, time_field=time_field)), nl=False)
