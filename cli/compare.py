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
    max_ratio: Annotated[float | None, typer.Option(
        help="Skip pairs whose texts differ more than this factor in length (default: 1.5 with three or more "
             "files; two files are always compared).")] = None,
    format: Annotated[CompareFormat, typer.Option("--format", help="A table for people, or JSON lines.")
                      ] = CompareFormat.table,
) -> None:
    """How alike every pair of a few text files is: the cosine and the length-adjusted cosine of their word
    counts, their weighted Jaccard, the average of those three, and the SimHash Hamming distance (0 to
    64: bits that differ). Each pair also shows how many times longer one text is than the other.

    Example: esdedup compare 酒神.txt 酒神1.txt 莽荒纪.txt --weighting tf_length
    """
    from esdedup.api import compare_files

    if len(files) < 2:
        raise typer.BadParameter("give at least two files")
    rows = compare_files([str(f) for f in files], config=fp.config(), max_ratio=max_ratio)
    Printer().compare(rows, format.value)
