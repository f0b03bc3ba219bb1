"""Headless Chromium (Debian's, not Playwright's download) against ``live_server``.

Playwright's sync API runs an event loop in the test thread, so Django's ORM calls
made from that thread (seeding) need ``DJANGO_ALLOW_ASYNC_UNSAFE``; tests only.
Every request that leaves the loopback interface is aborted and recorded: all
assets are local, so the list must stay empty.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, Page, Route, sync_playwright

from tests.benchmarks.runner.support import runner_work_dir  # noqa: F401

# the embedded lab (a real Celery worker process) for the tests that run campaigns
from tests.browser.lab import lab, lab_queues, shared_database  # noqa: F401

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost"})
LOCAL_SCHEMES = frozenset({"data", "blob", "about"})
TIMEOUT_MS = 10_000


def _require_chromium() -> None:
    if CHROMIUM.exists():
        return
    reason = f"{CHROMIUM} is missing: apt-get install -y chromium"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI must run the browser tests, never skip them)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """One Chromium for the session. While it lives, Playwright's event loop runs in
    this thread, so Django's async-safety check is switched off for exactly that
    span; tests/conftest.py runs the browser tests last, after every other test."""
    _require_chromium()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
            )
            yield browser
            browser.close()


@pytest.fixture
def demo_data(transactional_db: None) -> None:
    """The demo accounts and RFP-DEMO-1, in the database ``live_server`` reads."""
    from portal.demo import demo_seed

    demo_seed()


@pytest.fixture
def external_requests() -> list[str]:
    """URLs the page tried to fetch from anywhere but loopback (all aborted)."""
    return []


@pytest.fixture
def page(
    browser: Browser, live_server: Any, external_requests: list[str]
) -> Iterator[Page]:
    def guard(route: Route) -> None:
        url = urlsplit(route.request.url)
        if url.scheme in LOCAL_SCHEMES or url.hostname in LOOPBACK_HOSTS:
            route.continue_()
        else:
            external_requests.append(route.request.url)
            route.abort()

    context = browser.new_context(
        base_url=live_server.url, viewport={"width": 1280, "height": 800}
    )
    context.set_default_timeout(TIMEOUT_MS)
    context.route("**/*", guard)
    page = context.new_page()
    yield page
    context.close()
    assert external_requests == [], "requests left the loopback interface"
