"""A lab operator joins a host to a pool in Chromium: names it, copies the
agent's command (shown once), finds only the token's prefix after reloading,
then revokes it after confirming, and the token is refused; the page's script
runs under the Content-Security-Policy with no console error."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from benchmarks.services.host_tokens import HostTokenRefused, host_token_authenticate
from portal.demo import LAB_POOL
from tests.browser.lab import log_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]
SHOTS = Path(tempfile.gettempdir()) / "shots-pool-join"
TOKEN = re.compile(r"REPROGATE_HOST_TOKEN=(rgh_[A-Za-z0-9_-]+)")


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def test_lab_operator_joins_a_host_and_revokes_it(page: Page, demo_data: None) -> None:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    problems: list[str] = []  # console errors and warnings (CSP), page errors
    page.on(
        "console",
        lambda m: problems.append(m.text) if m.type in ("error", "warning") else None,
    )
    page.on("pageerror", lambda error: problems.append(str(error)))
    log_in(page, "labops")
    page.goto("/lab/pools/")
    pool = page.locator(f"[data-testid=pool][data-pool={LAB_POOL}]")
    expect(pool.get_by_test_id("tokens-empty")).to_be_visible()

    pool.get_by_test_id("join-name").fill("lab-07")
    pool.get_by_test_id("join-submit").click()

    command = pool.get_by_test_id("join-command")
    expect(command).to_contain_text("python -m reprogate_agent")
    text = command.locator("pre").inner_text()
    raw = TOKEN.search(text)
    assert raw is not None
    pool.get_by_test_id("join-copy").click()
    expect(pool.get_by_test_id("join-copy")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == text
    assert host_token_authenticate(raw[1]).name == "lab-07"
    shot(page, "joined")

    page.goto("/lab/pools/")
    expect(page.get_by_test_id("join-command")).to_have_count(0)
    assert raw[1] not in page.content()
    row = pool.locator("[data-testid=token-row][data-token=lab-07]")
    expect(row.get_by_test_id("token-status")).to_contain_text("active")
    expect(row).to_contain_text(raw[1][:12])

    row.get_by_text("Revoke…").click()
    shot(page, "revoke-confirm")
    row.get_by_test_id("token-revoke-confirm").click()

    expect(page.locator(".messages")).to_contain_text("revoked")
    expect(row.get_by_test_id("token-status")).to_contain_text("revoked")
    with pytest.raises(HostTokenRefused):
        host_token_authenticate(raw[1])
    shot(page, "revoked")
    assert problems == []
