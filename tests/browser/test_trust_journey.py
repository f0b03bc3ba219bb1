"""Trust in what has landed, in Chromium with the demo seeded and a real worker:
``labops`` runs a campaign on acme-flash's bundle of RFP-DEMO-2; the fixity check
(the daily beat task) finds escrow intact and the auditor's dashboard says so; the
buyer's audit trail, filtered to RFP-DEMO-2, shows the vendors' bid and bundle
events; the evaluator scores, the buyer requests the award and the evaluator,
a second person, confirms it."""

from __future__ import annotations

import subprocess
from io import StringIO

import pytest
from django.core.management import call_command
from playwright.sync_api import Page, expect

from portal.demo import LAB_RFP
from tests.browser.lab import (
    CAMPAIGN_TIMEOUT_S,
    expect_campaign_done,
    log_in,
    start_campaign,
    watch_campaign,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RATIONALE = "Acme Flash reproduced its claims in our lab; best weighted total."


def log_out(page: Page) -> None:
    page.get_by_role("button", name="Log out").click()
    expect(page.locator("#id_username")).to_be_visible()


def open_lab_rfp(page: Page) -> None:
    page.goto("/rfps/")
    row = page.get_by_test_id(f"rfp-row-{LAB_RFP}")
    row.get_by_role("link", name=LAB_RFP).click()
    expect(page.get_by_role("heading", level=1)).to_contain_text(LAB_RFP)


def run_campaign(page: Page) -> None:
    log_in(page, "labops")
    url = start_campaign(page, "Acme Flash")
    watch_campaign(page, url)
    expect_campaign_done(page, url)
    log_out(page)


def expect_escrow_intact(page: Page) -> None:
    """What the daily fixity task does, then the auditor's dashboard."""
    out = StringIO()
    call_command("escrow_verify", stdout=out)  # a finding raises CommandError
    assert "Escrow is intact" in out.getvalue()
    log_in(page, "auditor")
    panel = page.get_by_test_id("panel-escrow")
    expect(panel.get_by_test_id("fixity-verdict")).to_have_text("intact")
    expect(panel.get_by_test_id("fixity-alert")).to_have_count(0)
    log_out(page)


def expect_vendor_events_in_trail(page: Page) -> None:
    log_in(page, "buyer")
    page.goto("/accounts/audit/")
    page.locator("select[name=rfp]").select_option(label=LAB_RFP)
    page.get_by_role("button", name="Filter").click()
    table = page.get_by_test_id("audit-table")
    for vendor in ("Acme Flash", "Bolt Storage"):
        for action in ("bid.submitted", "bundle.accepted"):
            rows = table.locator("tr", has_text=action).filter(has_text=vendor)
            expect(rows.first).to_be_visible()
    expect(table.locator("tr", has_text="RFP-DEMO-1")).to_have_count(0)
    log_out(page)


def score_bids(page: Page) -> None:
    log_in(page, "evaluator")
    open_lab_rfp(page)
    page.get_by_test_id("tab-evaluation").click()
    form = page.get_by_test_id("score-sheet-form")
    for slug, value in (("acme-flash", "8"), ("bolt-storage", "5")):
        bid = form.get_by_test_id(f"score-bid-{slug}")
        selects = bid.locator("select[data-testid^='score-']")
        notes = bid.locator("textarea[data-testid^='justification-']")
        for index in range(selects.count()):
            selects.nth(index).select_option(value)
            notes.nth(index).fill(f"{value}/10: lab runs checked against the claims.")
    form.get_by_test_id("submit-sheet").click()
    expect(page.get_by_role("status")).to_contain_text("Scores submitted and locked")
    log_out(page)


def request_award(page: Page) -> None:
    log_in(page, "buyer")
    open_lab_rfp(page)
    page.get_by_test_id("tab-award").click()
    expect(page.get_by_test_id("award-sheets")).to_contain_text("submitted")
    choice = page.get_by_test_id("award-bid")
    choice.select_option(
        choice.locator("option", has_text="Acme Flash").get_attribute("value")
    )
    page.get_by_test_id("award-rationale-input").fill(RATIONALE)
    page.get_by_test_id("award-submit").click()
    expect(page.get_by_test_id("award-pending-winner")).to_have_text("Acme Flash")
    expect(page.get_by_test_id("award-confirm")).to_have_count(0)
    log_out(page)


def confirm_award(page: Page) -> None:
    log_in(page, "evaluator")
    attention = page.get_by_test_id("panel-attention")
    attention.get_by_role("link", name="asks you to confirm the award").click()
    expect(page.get_by_test_id("award-pending-rationale")).to_have_text(RATIONALE)
    expect(page.get_by_test_id("award-summary-acme-flash")).to_be_visible()
    page.get_by_test_id("award-confirm").click()
    expect(page.get_by_test_id("award-winner")).to_have_text("Acme Flash")
    expect(page.get_by_test_id("award-requested-by")).to_contain_text("buyer")
    expect(page.get_by_test_id("award-confirmed-by")).to_contain_text("evaluator")


@pytest.mark.timeout(CAMPAIGN_TIMEOUT_S + 240)
def test_campaign_escrow_trail_and_two_person_award(
    lab: subprocess.Popen[bytes], page: Page
) -> None:
    run_campaign(page)

    expect_escrow_intact(page)
    expect_vendor_events_in_trail(page)
    score_bids(page)
    request_award(page)
    confirm_award(page)

    assert lab.poll() is None, "the worker died"
