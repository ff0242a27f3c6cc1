"""Debian's chromium, driven by Playwright's Python package (never Playwright's own browser download), and
the review page served for it by uvicorn on a free loopback port.

Without chromium (or Playwright) the browser tests skip on a developer's machine and fail in CI (``CI`` set):
scripts/setup installs chromium (.ci/run runs it)."""
from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from esdedup.review import Review, Server, create_app


def chromium() -> str:
    """The chromium to drive: ``ESDEDUP_TEST_CHROMIUM``, else Debian's."""
    return os.environ.get("ESDEDUP_TEST_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
#: A folder to save a screenshot of each page into (docs/review is made so), or unset: none taken.
SHOTS = os.environ.get("ESDEDUP_REVIEW_SCREENSHOTS")


def _missing(what: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{what}: the browser tests must run in CI (scripts/setup installs chromium)")
    pytest.skip(what)


@contextmanager
def chromium_page(args: list[str] | None = None) -> Iterator[Any]:
    """A page of a fresh headless chromium (its own new profile); ``args``: more command-line switches (e.g.
    ``--host-resolver-rules``, to give a name another site's page would rebind to a loopback address)."""
    executable = chromium()
    if not Path(executable).is_file():
        _missing(f"no chromium at {executable} (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("Playwright's Python package is not installed (pip install playwright)")
    with tempfile.TemporaryDirectory(prefix="esdedup-chromium-") as profile, sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(profile, executable_path=executable, headless=True,
                                                        args=ARGS + (args or []), viewport={"width": 1280, "height": 900})
        try:
            page = context.pages[0] if context.pages else context.new_page()
            page.set_default_timeout(20_000)
            yield page
        finally:
            context.close()


@contextmanager
def served(review: Review, token: str | None = None) -> Iterator[str]:
    """The review app on a free loopback port; yields its URL."""
    server = Server(create_app(review, token=token), host="127.0.0.1", port=0, token=token)
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


def screenshot(page: Any, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)
