"""``esdedup review``: the review page of an index (see `esdedup.review`), served until interrupted."""
import shlex
from pathlib import Path
from typing import Annotated, Any

import typer

from .common import Connection, Index, connection_options, handles_errors, threshold_flags
from .output import for_people

app = typer.Typer()


def _connection_args(conn: Connection) -> list[str]:
    from esdedup.util.redact import redact

    if conn.es:
        return ["--es", redact(conn.es)]
    return ["--data-dir", str(conn.data_dir)] if conn.data_dir else []


def apply_commands(index: str, conn: Connection, labels: Path) -> Any:
    """What the tuning page prints for the best thresholds: the command that relabels the index's clusters
    with them, and the evaluation that scores them against the labels file."""

    def commands(t: Any) -> list[str]:
        flags = threshold_flags(t)
        where = ["--index", index, *_connection_args(conn)]
        return [shlex.join(["esdedup", "dups", *where, *flags, "--write-clusters"]),
                shlex.join(["esdedup", "eval", *where, "--pairs", str(labels)])]

    return commands


@app.command()
@handles_errors
@connection_options
def review(
    conn: Connection,
    index: Index,
    labels: Annotated[Path | None, typer.Option(
        "--labels", help="Labels file (JSONL, as eval --pairs reads it); created on the first label "
                         "(default: <index>.labels.jsonl here). One review (or synth) writes a labels file at a "
                         "time (it holds <labels>.lock beside it while it runs); a symlink is written through.")] = None,
    host: Annotated[str, typer.Option(
        "--host", help="Address to listen on; any other than 127.0.0.1 / localhost needs --token. Without a "
                       "token, only requests addressed to this address (or localhost) are answered.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port (0: a free one).")] = 8765,
    token: Annotated[str | None, typer.Option(
        "--token", envvar="ESDEDUP_REVIEW_TOKEN", show_envvar=True,
        help="Access token every request must carry (at least 16 characters: ASCII letters, digits, - . _ ~).")] = None,
    new_token: Annotated[bool, typer.Option(
        "--new-token", help="Make a random access token (printed once, in the URL below).")] = False,
    max_bucket: Annotated[int, typer.Option(min=2, help="Cap on documents compared per band value.")] = 1000,
    max_pairs: Annotated[int, typer.Option(
        min=1, help="Candidate pairs read for the charts and the review queue, at most (an index of up to "
                    "20,000 documents; above, the candidates of 1,000 documents chosen at random).")] = 2_000_000,
) -> None:
    """A local web page over an index: its clusters, pairs to label (saved to a labels file), precision /
    recall / F1 of the labels over the thresholds, and a search beside its diversified hits.

    Example: esdedup review --index news --data-dir ./data
    """
    from esdedup.review import Review, Server, check_listen, create_app
    from esdedup.review.serve import new_token as make_token

    if new_token and token:
        raise typer.BadParameter("give --token or --new-token, not both")
    if new_token:
        token = make_token()
    try:
        check_listen(host, token)
    except Exception as exc:
        raise typer.BadParameter(f"{exc} (--token or --new-token)") from None
    labels_path = labels or Path(f"{index}.labels.jsonl")
    from esdedup.api import open_store

    store = open_store(index, connection=conn.settings(), data_dir=conn.data_dir)
    # The labels file is checked (readable, writable, UTF-8, owned by no other process) before the index is read.
    state = Review(store, labels_path, apply_command=apply_commands(index, conn, labels_path),
                   max_bucket=max_bucket, max_pairs=max_pairs)
    try:
        typer.echo(f"reading {for_people(index)}: its clusters, key values and candidate pairs ...", err=True)
        state.prepare()
        server = Server(create_app(state, token=token), host=host, port=port, token=token)
        server.bind()  # the URL is printed once the port is ours: a browser opened at it finds the page
        url = server.url + (f"?token={token}" if token else "")
        typer.echo(f"esdedup review of {for_people(index)}: {url}")
        typer.echo(f"labels are saved to {for_people(labels_path)}; Ctrl-C stops", err=True)
        server.run()
    finally:
        state.close()
