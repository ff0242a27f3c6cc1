"""``esdedup compare``: similarity measures for every pair of a few files the user names."""
from pathlib import Path
from typing import Annotated

import typer

from .common import CompareFormat, FingerprintOptions, fingerprint_options, handles_errors
from .output import Printer

app = typer.Typer()


@app.command()
@handles_errors
@fingerprint_options
def compare(
    fp: FingerprintOptions,
    files: Annotated[list[Path], typer.Argument(help="Two or more text files (novels welcome; GBK is fine).")],
    max_ratio: Annotated[float, typer.Option(help="Skip pairs whose sizes differ more than this factor.")] = 1.5,
    format: Annotated[CompareFormat, typer.Option("--format", help="A table for people, or JSON lines.")
                      ] = CompareFormat.table,
) -> None:
    """Pairwise similarity table of design document 004: cosine, adjusted cosine, weighted Jaccard, average,
    Hamming.

    Example: esdedup compare 酒神.txt 酒神1.txt 莽荒纪.txt --weighting tf_length
    """
    from esdedup.api import compare_files

    if len(files) < 2:
        raise typer.BadParameter("give at least two files")
    rows = compare_files([str(f) for f in files], config=fp.config(), max_ratio=max_ratio)
    Printer().compare(rows, format.value)
