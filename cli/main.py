"""The ``esdedup`` command: a thin typer layer over the library.

Each command module (`ingest`, `label`, `duplicates`, `index`, `compare`, `quality`, `review`, `kibana`,
`pipeline`) has its own
``typer.Typer()``; this module composes them under one root, and nothing imports it (Typer's
one-file-per-command layout). Each command parses options, calls one library function and prints. Library
errors (`EsdedupError`) are turned into one ``Error: ...`` line and an exit code in `common.handles_errors`,
once: 0 ok, 1 failures in the data, 2 usage or configuration, 3 server or connection, 4 a worker process of
the run killed.
"""
import logging
from typing import Annotated, Any

import typer

from esdedup._version import __version__

from . import compare, duplicates, index, ingest, kibana, label, pipeline, quality, review
from .output import for_people
from .start import EARLY_SIGTERM, run  # noqa: F401 - run: the entry point older installs name here

app = typer.Typer(
    name="esdedup",
    help="Find near-duplicate articles (Chinese first) with MinHash over character n-grams and SimHash "
         "bands, in an embedded store or in Elasticsearch.\n\nWithout --es (or ESDEDUP_ES_URL) everything "
         "runs on the embedded local store in --data-dir.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,
    rich_markup_mode=None,
)
# Added without a name, a module's commands sit at the root (esdedup ingest, esdedup dups, ...);
# kibana's and pipeline's Typers carry their own names and stay groups (esdedup kibana export).
for module in (ingest, label, duplicates, index, compare, quality, review):
    app.add_typer(module.app)
app.add_typer(kibana.app)
app.add_typer(pipeline.app)
app.add_typer(index.index_app)


class _OneLineFormatter(logging.Formatter):
    """Log lines without stack traces: a library that logs an exception (the Elasticsearch transport
    does, on every retry) shows its type and message only, redacted."""

    def formatException(self, ei: Any) -> str:  # noqa: N802 (logging's name)
        from esdedup.util.redact import redact

        return redact(f"  caused by {ei[0].__name__}: {ei[1]}")

    def formatStack(self, stack_info: str) -> str:  # noqa: N802
        return ""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802
        # A message may quote a file name or a field of the input: what a terminal would act on in it
        # (escape sequences that retitle the window or move the cursor) is shown as escapes, as on Error lines.
        record.message = for_people(record.message)
        return super().formatMessage(record)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"esdedup {__version__}")
        raise typer.Exit()


def _warnings_and_above(record: logging.LogRecord) -> bool:
    return record.levelno >= logging.WARNING


@app.callback()
def main(
    ctx: typer.Context,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log what happens (to stderr).")] = False,
) -> None:
    if ctx.invoked_subcommand != "ingest":  # ingest takes SIGTERM over (esdedup_cli.start), to stop as a run does
        EARLY_SIGTERM.release()
    # Logging is configured here and nowhere in the library; jieba announces its dictionary on
    # every start, which is noise for a command-line user.
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:
        if type(handler) is logging.StreamHandler:  # the one basicConfig made (not a test harness's)
            handler.setFormatter(_OneLineFormatter("%(levelname)s %(name)s: %(message)s"))
    # A filter, not jieba.setLogLevel: it stays on jieba's logger when jieba sets its level on import, so
    # jieba is imported only by the commands that tokenize, not by every command's start.
    logging.getLogger("jieba").addFilter(_warnings_and_above)
    for transport in ("elastic_transport", "opensearch"):  # the clients' request logs: each error is ours to say
        logging.getLogger(transport).setLevel(logging.INFO if verbose else logging.ERROR)


if __name__ == "__main__":  # pragma: no cover
    run()
