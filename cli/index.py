"""``esdedup mapping`` (the Elasticsearch mapping for a config) and ``esdedup info`` (what an index holds)."""
from typing import Annotated

import typer

from .common import (
    Connection,
    FingerprintOptions,
    Index,
    JsonOut,
    TextAnalyzer,
    connection_options,
    fingerprint_options,
    handles_errors,
    opened_store,
)
from .output import Printer, json_text

app = typer.Typer()
#: ``esdedup index ...``: the index itself.
index_app = typer.Typer(
    name="index",
    help="The index itself: create it (mapping, settings, fingerprint config) before any client writes to it.\n\n"
         "Example: esdedup index create --index news --es http://127.0.0.1:9250",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@index_app.command("create")
@handles_errors
@connection_options
@fingerprint_options
def create(
    conn: Connection,
    fp: FingerprintOptions,
    index: Index,
    shards: Annotated[int, typer.Option(min=1, help="Shards (Elasticsearch).")] = 1,
    replicas: Annotated[int | None, typer.Option(
        min=0, help="Replicas (Elasticsearch; default: one where a second data node can hold it, none on one "
                    "node: auto_expand_replicas 0-1).")] = None,
    text_analyzer: TextAnalyzer = None,
) -> None:
    """Create an empty index with the mapping and the fingerprint config (the options given, else the
    defaults), for `esdedup pipeline put` and for clients that write documents themselves. An index that
    exists already is left as it is (fingerprint options that differ from its config are refused).

    Example: esdedup index create --index news --es http://127.0.0.1:9250 --shards 2
    """
    from esdedup.api import create_index

    with opened_store(index, conn, shards=shards, replicas=replicas, text_analyzer=text_analyzer) as store:
        created = create_index(store, fp.config())
    typer.echo(f"created index '{index}'" if created else f"index '{index}' exists already; left as it is")


@app.command()
@handles_errors
@connection_options
@fingerprint_options
def mapping(
    conn: Connection,
    fp: FingerprintOptions,
    index: Index,
    template: Annotated[bool, typer.Option(help="Print an index template (index_patterns = the index name).")] = False,
    text_analyzer: TextAnalyzer = None,
) -> None:
    """Print the Elasticsearch mapping (with the fingerprint config in _meta) for an index: with --es, of the
    index's own config when it exists there; else of the fingerprint options (default: the default config).
    OpenSearch's (--engine opensearch, or an OpenSearch server) keeps the TF vector as a non-indexed float.

    Example: esdedup mapping --index news > news-mapping.json
    """
    from esdedup.errors import IndexNotFound
    from esdedup.fingerprint.config import FingerprintConfig
    from esdedup.schema import mapping_for, template_for

    config = fp.config()
    engine = conn.engine.value if conn.engine is not None else None
    if conn.settings() is not None:
        with opened_store(index, conn) as store:
            engine = getattr(getattr(store, "client", None), "engine", None) or engine
            try:
                config = store.open(config, create=False).config
            except IndexNotFound:
                pass
    config = config or FingerprintConfig()
    body = (template_for(config, [index], text_analyzer=text_analyzer) if template
            else {"mappings": mapping_for(config, text_analyzer=text_analyzer)})
    if engine == "opensearch":
        from esdedup.es.opensearch import opensearch_mapping

        holder = body["template"] if template else body
        holder["mappings"] = opensearch_mapping(holder["mappings"])
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
