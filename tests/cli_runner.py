"""The CLI under typer's test runner, with stdout and stderr kept apart."""
from __future__ import annotations

from typer.testing import CliRunner


def cli_runner() -> CliRunner:
    """stdout and stderr apart: click < 8.2 needs mix_stderr=False, click >= 8.2 always keeps them apart."""
    try:
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:
        return CliRunner()
