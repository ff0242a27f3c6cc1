"""``esdedup similar`` (the near-duplicates of one text) and ``esdedup dups`` (every near-duplicate pair)."""
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from .common import (
    Connection,
    Index,
    JsonOut,
    PairsFormat,
    ThresholdOptions,
    connection_options,
    handles_errors,
    opened_store,
    partition_store,
    threshold_options,
)
from .output import Printer, for_people

app = typer.Typer()


class LshJoin(str, Enum):
    auto = "auto"
    memory = "memory"
    store = "store"


@app.command()
@handles_errors
@connection_options
@threshold_options
def similar(
    conn: Connection,
    thresholds: ThresholdOptions,
    index: Index,
    text: Annotated[str | None, typer.Option(help="Find near-duplicates of this text.")] = None,
    id: Annotated[str | None, typer.Option("--id", help="...of this stored document.")] = None,
    file: Annotated[Path | None, typer.Option(help="...of this file's text (any supported encoding).")] = None,
    top: Annotated[int, typer.Option(min=1, help="At most this many results.")] = 10,
    knn: Annotated[bool, typer.Option(help="Use the kNN vector path (short texts) instead of band lookups.")] = False,
    server_side: Annotated[bool, typer.Option(
        "--server-side", help="Let the Elasticsearch nodes verify the candidates (needs the esdedup plugin): one "
                              "request that returns only near-duplicates.")] = False,
    explain: Annotated[bool, typer.Option(
        help="Also show each match's title, shared band keys, exact TF cosine (every term counted) and top "
             "shared terms.")] = False,
    json_out: JsonOut = False,
) -> None:
    """Look up the near-duplicates of a text, a file or a stored document.

    Each match shows what the rule read: the Hamming distance of the SimHashes, the cosine of the hashed TF
    vectors and, when both texts have MinHash signatures (which then decide), the estimated character n-gram
    Jaccard and containment.

    Example: esdedup similar --index news --text "台湾居民明日起持台胞证可通关" --explain
    """
    from esdedup.api import refuse_inert_thresholds, similar_to

    if sum(x is not None for x in (text, id, file)) != 1:
        raise typer.BadParameter("give exactly one of --text, --id or --file")
    if knn and server_side:
        raise typer.BadParameter("--knn and --server-side are two different lookups: give one")
    printer = Printer(json_out=json_out)
    with opened_store(index, conn) as store:
        refuse_inert_thresholds(store, thresholds.overrides())
        results = similar_to(store, text=text, doc_id=id, path=str(file) if file else None, top=top, knn=knn,
                             explain=explain, thresholds=thresholds.overrides(), on_node=server_side)
    printer.matches(results, explain=explain)
    if results.query["empty"]:
        what = "the --text given" if text is not None else f"document {id!r}" if id is not None else f"file {file}"
        typer.echo(f"warning: {for_people(what)} has no words once normalised (it is empty, blank, or only "
                   "punctuation and stopwords), so only its exact copies match it; give a text with words to "
                   "find near-duplicates", err=True)


@app.command()
@handles_errors
@connection_options
@threshold_options
def dups(
    conn: Connection,
    thresholds: ThresholdOptions,
    index: Index,
    format: Annotated[PairsFormat, typer.Option(
        "--format", help="JSON lines for programs, a table for people, or CSV for spreadsheets.")
                      ] = PairsFormat.jsonl,
    write_clusters: Annotated[bool, typer.Option(
        help="Join the stored clusters of the documents each set of connected pairs holds into one (the "
             "earliest-written document represents it), writing only the labels that change; safe while "
             "ingests run.")] = False,
    max_bucket: Annotated[int, typer.Option(min=2, help="Cap on documents compared per band value.")] = 1000,
    lsh_join: Annotated[LshJoin, typer.Option(
        help="Where documents sharing a MinHash LSH key are grouped: memory (one scan, about 512 bytes a "
             "document), store (the index's key groups: terms aggregations of the shared keys, one partition of "
             "the keys at a time), auto (memory up to 2,000,000 documents). Same pairs either way.")] = LshJoin.auto,
    partition: Annotated[str | None, typer.Option(
        "--partition", metavar="I/P",
        help="Only partition I of P (0 <= I < P): its share of the index's shared keys, read from the index "
             "(the store's key groups, LSH keys too). Run I = 0 .. P-1 as P processes, on any machines: their "
             "pairs together are exactly those of one run, each pair in one partition only. Progress and a "
             "summary go to stderr.")] = None,
    json_out: Annotated[bool, typer.Option(
        "--json", help="Print one JSON object for programs instead: the pairs, the number of clusters, the "
                       "crowded band values, and with --write-clusters the labels written. With --partition: the pairs "
                       "stay JSON lines, and the progress and summary go to stderr as JSON lines, for schedulers."
                       )] = False,
) -> None:
    """List every near-duplicate pair of an index (band collisions, verified exactly).

    Each pair shows what the rule read: Hamming distance, the cosine of the hashed TF vectors and, when both
    texts have MinHash signatures (which then decide), the estimated character n-gram Jaccard and
    containment ("-" in the table, absent in JSON, when they do not).

    Example: esdedup dups --index news --format table --write-clusters
    """
    from esdedup.api import all_pairs, refuse_inert_thresholds

    printer = Printer()
    if partition is not None:
        if lsh_join is LshJoin.memory:
            raise typer.BadParameter("--partition reads the index's key groups: give --lsh-join store or auto")
        _partition(conn, thresholds, index, partition, format.value, max_bucket, json_out, printer, write_clusters)
        return
    if json_out and format != PairsFormat.jsonl:
        raise typer.BadParameter("--json prints one JSON object: give it without --format")
    printer = Printer(json_out=json_out)
    with opened_store(index, conn) as store:
        refuse_inert_thresholds(store, thresholds.overrides())
        report = all_pairs(store, max_bucket=max_bucket, write_clusters=write_clusters,
                           thresholds=thresholds.overrides(), lsh_join=lsh_join.value,
                           with_clusters=printer.prints_clusters(format.value))
    printer.pairs(report, format.value)


def _partition(conn: Connection, thresholds: ThresholdOptions, index: str, spec: str, fmt: str, max_bucket: int,
               json_out: bool, printer: Printer, write_clusters: bool) -> None:
    """``dups --partition``: the partition's pairs on stdout; progress, its summary or its error on stderr."""
    from esdedup.api import pairs_of_partition
    from esdedup.match.partitioned import PartitionStats

    with partition_store(spec, json_out, index, conn, thresholds) as (part, store, lines):
        def progress(stats: PartitionStats) -> None:
            lines.progress(stats.to_dict())

        # The clusters of its pairs hold an entry a document paired: grouped only when printed or written.
        report = pairs_of_partition(store, part, max_bucket=max_bucket, thresholds=thresholds.overrides(),
                                    progress=progress, write_clusters=write_clusters,
                                    with_clusters=printer.prints_clusters(fmt))
    with report:  # its pairs' temporary file goes, printed or not (a closed pipe, an interrupt)
        printer.pairs(report, fmt)
    lines.line("summary", {**report.stats.to_dict(),
                           **({"labels_written": report.labels_written} if write_clusters else {})})
