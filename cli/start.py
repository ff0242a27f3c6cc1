"""The command line's entry point, `run`: the ``esdedup`` command, ``python -m esdedup_cli`` and ``python -m esdedup``.

It imports nothing but the standard library before it takes SIGTERM (`EARLY_SIGTERM`): the command's own imports
(typer, then the library: half a second or more) and its start (opening the store) would otherwise leave SIGTERM
its default action there, which ends the process without a word, where a SIGTERM a moment later ends an ingest
with one line and exit 143. What no code of ours can cover: the interpreter's own start before this module runs,
and under ``python -m esdedup`` the import of the library package too, which Python runs before the package's
``__main__`` (the ``esdedup`` command and ``python -m esdedup_cli`` start here).
"""
import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from typing import Any


class EarlySigterm:
    """SIGTERM from the command's first line until a command takes it (`handed_to`: ``ingest``, which stops the
    run as a SIGTERM during the run does) or gives it back (`release`: every other command, which SIGTERM ends
    as its default action does; one that came meanwhile does so at once)."""

    def __init__(self) -> None:
        self.received = False
        self.installed = False

    def install(self) -> None:
        """Take SIGTERM, where its default action is in place (a parent that ignores it keeps it ignored)."""
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, self._record)
            self.installed = True

    def _record(self, signum: int, frame: object) -> None:
        self.received = True

    @contextlib.contextmanager
    def handed_to(self, stop: Any) -> Iterator[None]:
        """SIGTERM handled by ``stop`` (an `esdedup.ingest.Stop`, asked already when one came before) while the
        block runs, then its default action again."""
        if not self.installed:
            yield
            return
        signal.signal(signal.SIGTERM, stop.handle)  # first: one that comes after this line is stop's
        self.installed = False
        if self.received:
            stop.asked = signal.SIGTERM.name
        try:
            yield
        finally:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)

    def release(self) -> None:
        """SIGTERM's default action back; one that came meanwhile ends the process now, as it would have."""
        if self.installed:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            self.installed = False
            if self.received:
                os.kill(os.getpid(), signal.SIGTERM)


EARLY_SIGTERM = EarlySigterm()


def run() -> None:
    """Console-script entry point."""
    EARLY_SIGTERM.install()
    try:
        from esdedup_cli.main import app

        app()
    finally:
        EARLY_SIGTERM.release()  # a command that never took it (--help, a usage error)
