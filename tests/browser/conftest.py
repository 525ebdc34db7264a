"""Browser tests: pytest-playwright driving Debian's Chromium (never a downloaded browser) against live_server.

Every page opened through `watched` fails the test on a JavaScript dialog, an uncaught page error, or a
Content-Security-Policy violation reported on the console.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.core.servers.basehttp import WSGIServer
from django.test.testcases import LiveServerThread

# The sync Playwright API runs an event loop in this thread; Django's ORM must still be usable from the tests.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
# Playwright must never fetch a browser of its own.
os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")

CHROMIUM = "/usr/bin/chromium"
PASSWORD = "correct horse battery staple"


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is not installed (make browser, or apt-get install chromium)")
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "args": [
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ],
    }


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict[str, Any]) -> dict[str, Any]:
    return {**browser_context_args, "viewport": {"width": 1400, "height": 900}}


class _SerialWSGIServer(WSGIServer):
    """The live server, one request at a time, in its own thread (which holds the test's connection)."""

    def __init__(self, *args: Any, connections_override: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)


@pytest.fixture(scope="session", autouse=True)
def _serial_live_server_on_sqlite() -> None:
    """On SQLite the test database is in memory: one connection, which the live server's threads would share, and
    two requests at once (two browsers, an htmx post beside a navigation) would interleave on it. There the live
    server answers one request at a time; the non-threaded server closes each connection after its response."""
    from django.conf import settings

    if not settings.IS_POSTGRES:
        LiveServerThread.server_class = _SerialWSGIServer  # type: ignore[assignment]  # the same constructor


@pytest.fixture(autouse=True)
def _live_database(transactional_db: None) -> None:
    """The live server reads what a test writes, so each browser test commits (and is flushed after)."""


@dataclass
class Problems:
    dialogs: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    csp_violations: list[str] = field(default_factory=list)

    def assert_none(self) -> None:
        assert self.dialogs == [], f"a script opened dialogs: {self.dialogs}"
        assert self.page_errors == [], f"page errors: {self.page_errors}"
        assert self.csp_violations == [], f"CSP violations: {self.csp_violations}"


@pytest.fixture
def problems(page: Any) -> Iterator[Problems]:
    found = Problems()

    def on_dialog(dialog: Any) -> None:
        found.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def on_console(message: Any) -> None:
        if message.type == "error" and "Content Security Policy" in message.text:
            found.csp_violations.append(message.text)

    page.on("dialog", on_dialog)
    page.on("pageerror", lambda error: found.page_errors.append(str(error)))
    page.on("console", on_console)
    yield found
    found.assert_none()


def sign_in(page: Any, base_url: str, username: str, next_path: str = "") -> None:
    page.goto(f"{base_url}/accounts/login/" + (f"?next={next_path}" if next_path else ""))
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_load_state("domcontentloaded")
