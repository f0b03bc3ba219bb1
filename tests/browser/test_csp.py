"""The Content-Security-Policy in real Chromium: the main pages of each role, the
gate board, a criterion page whose Plotly chart draws, an htmx swap (the audit
trail's filter), the admin login and Swagger UI run with the policy enforced and
raise no ``securitypolicyviolation`` event and no console error or warning (an
unknown Permissions-Policy feature is a console warning). The control: an inline
script added at the end is refused and reported."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import ConsoleMessage, Page, expect

from benchmarks.models import Campaign
from gates.models import Evaluation
from procurement.models import Rfp
from tests.accounts.factories import PASSWORD
from tests.artifacts.ingest_support import upload_rfp  # noqa: F401 (fixture)
from tests.benchmarks.runner.support import runs_sent_to
from tests.gates.read_support import GATE, evaluated_fixture  # noqa: F401 (fixture)
from tests.gates.support import frozen_plan, gate_bundle, gate_campaign  # noqa: F401

pytestmark = pytest.mark.browser

CRITERION = "ttft-p99-cold-c1"
LISTEN = """
window.violations = 0;
document.addEventListener("securitypolicyviolation", (event) => {
  window.violations += 1;
  window.reportViolation(
    `${event.effectiveDirective} blocked ${event.blockedURI || "inline"}` +
    ` at ${event.sourceFile}:${event.lineNumber}`
  );
});
"""

INLINE_SCRIPT = """() => {
  const script = document.createElement("script");
  script.textContent = "window.inlineRan = true";
  document.head.appendChild(script);
}"""


@pytest.fixture
def lab_rows(transactional_db: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The gates' read fixtures commit here (live server): no run is sent."""
    runs_sent_to(monkeypatch, lambda **kwargs: None)


@pytest.fixture
def watched(page: Page) -> tuple[Page, list[str]]:
    """The page, and what it reported: violations, console errors and warnings,
    uncaught exceptions."""
    problems: list[str] = []

    def console(message: ConsoleMessage) -> None:
        if message.type in {"error", "warning"}:
            problems.append(f"console {message.type}: {message.text} ({page.url})")

    page.expose_function("reportViolation", lambda text: problems.append(text))
    page.add_init_script(LISTEN)
    page.on("console", console)
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    return page, problems


def log_in(page: Page, username: str) -> None:
    page.goto(reverse("accounts:login"))
    page.locator("#id_username").fill(username)
    page.locator("#id_password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_test_id("current-user")).to_have_text(username)


def log_out(page: Page) -> None:
    page.get_by_role("button", name="Log out").click()
    expect(page.locator("#id_username")).to_be_visible()


def lab_and_gate_pages(page: Page, rfp: Rfp, campaign: Campaign) -> None:
    """The campaign's charts (labops); the gate board and a criterion chart whose
    click opens the repetition's run (the buyer)."""
    log_in(page, "labops")
    page.goto(reverse("benchmarks:campaign_detail", args=[campaign.public_id]))
    expect(page.locator(".chart svg.main-svg").first).to_be_attached()
    log_out(page)

    log_in(page, "buyer")
    page.goto(reverse("gates:board", args=[rfp.public_id]))
    expect(page.get_by_test_id("gate-board")).to_be_visible()
    page.goto(
        reverse("gates:criterion", args=[rfp.public_id, "acme-flash", GATE, CRITERION])
    )
    chart = page.get_by_test_id("chart-criterion")
    expect(chart.locator("svg.main-svg").first).to_be_attached()
    # plotly.js's styles came from static/css/plotly.css, not a style element
    expect(chart.locator(".modebar").first).to_have_css("position", "absolute")
    page.wait_for_load_state("load")
    chart.locator(".scatterlayer .point").first.click(force=True)
    expect(page).to_have_url(re.compile(r"/lab/runs/[0-9a-f-]{36}/$"))
    log_out(page)


def audit_filter(page: Page) -> None:
    """The auditor filters the audit trail: htmx swaps the rows in, no reload."""
    log_in(page, "auditor")
    page.goto(reverse("accounts:audit_list"))
    expect(page.get_by_test_id("audit-table")).to_be_visible()
    page.evaluate("window.notReloaded = true")
    page.locator("#id_action").fill("no-such-action")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("#audit-rows")).to_contain_text("No events match.")
    expect(page).to_have_url(re.compile(r"\?(.*&)?action=no-such-action"))
    assert page.evaluate("window.notReloaded") is True


def test_pages_run_under_the_policy_without_a_violation(
    lab_rows: None,
    evaluated: dict[str, Evaluation],
    rfp: Rfp,
    evaluator: Any,
    auditor: Any,
    watched: tuple[Page, list[str]],
) -> None:
    page, problems = watched

    page.goto(reverse("api-docs"))
    expect(page.locator(".swagger-ui .opblock").first).to_be_visible()
    page.goto("/admin/login/")
    expect(page.locator("#id_username")).to_be_visible()
    for username in ("evaluator", "vendor-a"):
        log_in(page, username)
        log_out(page)
    lab_and_gate_pages(page, rfp, evaluated["a"].campaign)
    audit_filter(page)

    assert problems == [], "\n".join(problems)

    # The control: the policy is enforced (an inline script is refused, reported).
    page.evaluate(INLINE_SCRIPT)
    page.wait_for_function("window.violations > 0")
    assert page.evaluate("window.inlineRan") is None
    assert any(p.startswith("script-src-elem blocked inline") for p in problems)
