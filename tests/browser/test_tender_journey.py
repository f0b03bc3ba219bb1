"""Acceptance 1 of the procurement issue: one RFP walked from a blank draft to an
award in Chromium, with two vendors and two evaluators, through the UI only.

Only two things happen outside the browser: a second evaluator is created through
the services (setup), and the procurement clock is moved past the submission
deadline with the ``clock`` fixture of tests/conftest.py, which lets the clock run
again at teardown (the live server runs in this process: it sees the same clock).
Screenshots of the key steps land in /tmp/shots-tender/.
"""

from __future__ import annotations

import re
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from accounts.models import Notification, Organisation, Role
from accounts.services.users import membership_grant, user_create
from portal.demo import DEMO_PASSWORD
from procurement.lib.defaults import DEFAULT_ARTIFACTS, DEFAULT_CRITERIA

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REFERENCE = "RFP-E2E-1"
TITLE = "NVMe-oF KV-cache tier, end-to-end journey"
SHOTS = Path(tempfile.gettempdir()) / "shots-tender"
VENDORS = {"acme-flash": "Acme Flash", "bolt-storage": "Bolt Storage"}
SECOND_EVALUATOR = "evaluator-2"
QUESTION = "May the benchmark traces be delivered as compressed Parquet files?"
ANSWER = "Yes: Parquet with zstd compression is accepted for all raw traces."
RATIONALE = (
    "Acme Flash ranks first on the consensus of both evaluators, with the more "
    "complete reproducibility evidence and the lower cost per million tokens."
)
SLOW_MS = 20_000  # a bounded wait for the heavier pages (evaluation, comparison)
HASH = re.compile(r"^[0-9a-f]{64}$")


# --- setup ----------------------------------------------------------------------


@pytest.fixture
def second_evaluator(demo_data: None, browser: Browser) -> str:
    """A second evaluator of Northwind AI, made through the services (setup only)."""
    user = user_create(
        username=SECOND_EVALUATOR,
        password=DEMO_PASSWORD,
        email=f"{SECOND_EVALUATOR}@northwind-ai.example",
        actor=None,
    )
    membership_grant(
        user=user,
        organisation=Organisation.objects.get(slug="northwind-ai"),
        role=Role.EVALUATOR,
        actor=None,
    )
    return SECOND_EVALUATOR


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def minutes(moment: datetime) -> str:
    """A ``datetime-local`` input's value (UTC: the editor's time zone)."""
    return moment.strftime("%Y-%m-%dT%H:%M")


# --- navigation -----------------------------------------------------------------


def log_in(page: Page, username: str) -> None:
    page.goto("/accounts/login/")
    page.locator("#id_username").fill(username)
    page.locator("#id_password").fill(DEMO_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_test_id("current-user")).to_have_text(username)


def log_out(page: Page) -> None:
    page.get_by_role("button", name="Log out").click()
    expect(page.locator("#id_username")).to_be_visible()


def open_rfp(page: Page, tab: str = "overview") -> None:
    """From the main navigation: RFPs → the journey's RFP → one of its tabs."""
    page.get_by_role("navigation", name="Main").get_by_role("link", name="RFPs").click()
    page.get_by_test_id(f"rfp-row-{REFERENCE}").get_by_role(
        "link", name=REFERENCE
    ).click()
    expect(page.get_by_role("heading", level=1)).to_contain_text(REFERENCE)
    if tab != "overview":
        page.get_by_test_id(f"tab-{tab}").click()
        expect(page.get_by_test_id(f"tab-{tab}")).to_have_attribute(
            "aria-current", "page"
        )


def expect_message(page: Page, text: str) -> None:
    expect(page.get_by_role("status")).to_contain_text(text)


# --- authoring ------------------------------------------------------------------


def create_draft(page: Page, questions_due: datetime, deadline: datetime) -> None:
    page.get_by_role("navigation", name="Main").get_by_role("link", name="RFPs").click()
    page.get_by_test_id("rfp-new").click()
    form = page.get_by_test_id("rfp-new-form")
    form.get_by_label("Reference").fill(REFERENCE)
    form.get_by_label("Title").fill(TITLE)
    form.get_by_label("Questions due").fill(minutes(questions_due))
    form.get_by_label("Submission deadline").fill(minutes(deadline))
    page.get_by_test_id("rfp-create").click()
    expect_message(page, f"Draft {REFERENCE} created")
    expect(page.get_by_test_id("step-basics")).to_have_attribute("aria-current", "step")


def save_step(page: Page, step: str, following: str) -> None:
    expect(page.get_by_test_id(f"step-{step}-panel")).to_be_visible()
    page.get_by_test_id(f"step-{step}-panel").get_by_test_id("save-continue").click()
    expect(page.get_by_test_id(f"step-{following}")).to_have_attribute(
        "aria-current", "step"
    )


def walk_editor(page: Page) -> None:
    """Basics (a description, two bids minimum) and the pre-filled steps, saved."""
    basics = page.get_by_test_id("step-form")
    basics.get_by_label("Description").fill(
        "Tier the **KV cache** of a 16-GPU cluster to NVMe over Fabrics."
    )
    basics.get_by_label("Minimum number of bids").fill("2")
    save_step(page, "basics", "artifacts")
    rows = page.get_by_test_id("rows-artifacts").locator("tbody tr")
    expect(rows).to_have_count(len(DEFAULT_ARTIFACTS) + 1)  # and one blank row
    save_step(page, "artifacts", "workloads")
    save_step(page, "workloads", "criteria")
    expect(page.get_by_test_id("rows-criteria").locator("tbody tr")).to_have_count(
        len(DEFAULT_CRITERIA) + 1
    )
    save_step(page, "criteria", "terms")
    save_step(page, "terms", "invitations")


def invite_vendors(page: Page) -> None:
    for slug, name in VENDORS.items():
        page.get_by_label("Vendor organisation").select_option(slug)
        page.get_by_test_id("invite-vendor").click()
        expect(page.get_by_test_id(f"invited-{slug}")).to_contain_text(name)
    save_step(page, "invitations", "review")


def publish(page: Page) -> None:
    expect(page.get_by_test_id("publish-ready")).to_be_visible()
    summary = page.get_by_test_id("review-summary")
    for name in VENDORS.values():
        expect(summary).to_contain_text(name)
    shot(page, "01-review")
    page.get_by_test_id("rfp-publish").click()
    expect_message(page, f"{REFERENCE} published; 2 vendor(s) notified")
    expect(page.get_by_test_id("rfp-status")).to_have_text("Published")


# --- clarifications and bids ----------------------------------------------------


def ask_question(page: Page) -> None:
    open_rfp(page, "clarifications")
    page.get_by_test_id("question-input").fill(QUESTION)
    page.get_by_test_id("ask-submit").click()
    expect_message(page, "Question sent")
    pending = page.get_by_test_id("pending-questions")
    expect(pending.get_by_test_id("question-text")).to_have_text(QUESTION)


def answer_question(page: Page) -> None:
    open_rfp(page, "clarifications")
    expect(page.get_by_test_id("unanswered-count")).to_have_text("1 unanswered.")
    question = page.get_by_test_id("clarification")
    expect(question.get_by_test_id("question-text")).to_have_text(QUESTION)
    expect(page.get_by_test_id("questions-list")).not_to_contain_text("Acme")
    question.get_by_test_id("answer-input").fill(ANSWER)
    question.get_by_test_id("answer-submit").click()
    expect_message(page, "Answer published to every invited vendor")
    expect(page.get_by_test_id("answer-text")).to_contain_text(ANSWER)


def submit_bid(page: Page, costs: dict[str, str], claims: str) -> str:
    """The vendor's bid through the Bids tab; returns its commitment."""
    open_rfp(page, "bids")
    page.get_by_test_id("own-bid").get_by_test_id("bid-edit").click()
    form = page.get_by_test_id("bid-form")
    form.get_by_label("Cover note").fill(
        "Our offer: NVMe-oF KV-cache tier with the full evidence bundle."
    )
    form.get_by_label("Claimed key metrics").fill(claims)
    for name, value in costs.items():
        form.locator(f"#id_{name}").fill(value)
    page.get_by_test_id("bid-submit").click()
    commitment = page.get_by_test_id("receipt-commitment").inner_text()
    assert HASH.match(commitment), commitment
    page.get_by_test_id("tab-bids").click()
    expect(page.get_by_test_id("own-bid-status")).to_have_text("Submitted")
    return commitment


def costs(hardware: str, tokens_per_s: str) -> dict[str, str]:
    return {
        "currency": "EUR",
        "hardware_cost": hardware,
        "amortisation_years": "4",
        "power_draw_kw": "3.2",
        "energy_price_per_kwh": "0.21",
        "rack_units": "4",
        "rack_unit_cost_per_year": "300",
        "support_cost_per_year": "15000",
        "delivered_tokens_per_s": tokens_per_s,
    }


def expect_sealed(page: Page, commitments: set[str]) -> None:
    """The buyer's Bids tab before opening: the count and the hashes, no names."""
    open_rfp(page, "bids")
    expect(page.get_by_test_id("bid-count")).to_have_text("2")
    hashes = page.get_by_test_id("bid-commitments").locator("code")
    expect(hashes).to_have_count(2)
    assert set(hashes.all_inner_texts()) == commitments
    main = page.locator("main")
    for name in VENDORS.values():
        expect(main).not_to_contain_text(name)
    shot(page, "04-sealed-bids")


# --- opening, evaluation and award ----------------------------------------------


def request_opening(page: Page) -> None:
    open_rfp(page, "bids")
    expect(page.get_by_test_id("rfp-status")).to_have_text("Closed")
    page.get_by_test_id("opening-request").click()
    expect_message(page, "Opening requested")
    expect(page.get_by_test_id("opening-confirm")).to_have_count(0)
    expect(page.get_by_test_id("opening-cancel")).to_be_visible()


def confirm_opening(page: Page) -> None:
    open_rfp(page, "bids")
    page.get_by_test_id("opening-confirm").click()
    expect_message(page, "Bids opened")
    expect(page.get_by_test_id("rfp-status")).to_have_text("Opened")
    expect(page.get_by_test_id("bid-row")).to_have_count(2)
    shot(page, "05-opened-bids")


def fill_scores(page: Page, scores: dict[str, int], evaluator: str) -> None:
    """Every criterion of every bid, with a justification, then submit the sheet."""
    open_rfp(page, "evaluation")
    form = page.get_by_test_id("score-sheet-form")
    expect(form).to_be_visible(timeout=SLOW_MS)
    for slug, value in scores.items():
        bid = form.get_by_test_id(f"score-bid-{slug}")
        # the bid's evidence, loaded after the sheet into its place
        expect(bid.get_by_test_id(f"evidence-{slug}")).to_contain_text("Completeness")
        selects = bid.locator("select[data-testid^='score-']")
        notes = bid.locator("textarea[data-testid^='justification-']")
        expect(selects).to_have_count(len(DEFAULT_CRITERIA))
        for index in range(selects.count()):
            selects.nth(index).select_option(str(value))
            notes.nth(index).fill(f"{evaluator}: {value}/10, evidence checked.")
    form.get_by_test_id("submit-sheet").click()
    expect_message(page, "Scores submitted and locked")
    expect(page.get_by_test_id(f"progress-{evaluator}")).to_contain_text("submitted")


def expect_ranking(page: Page) -> None:
    """The comparison after opening: vendor names and ranks in the summary, the
    full matrix one click away."""
    open_rfp(page, "comparison")
    summary = page.get_by_test_id("comparison-summary")
    expect(summary).to_be_visible(timeout=SLOW_MS)
    for rank, slug in enumerate(VENDORS, start=1):
        row = summary.get_by_test_id(f"summary-row-{slug}")
        expect(row).to_contain_text(VENDORS[slug])
        expect(row.get_by_test_id("summary-rank")).to_have_text(str(rank))
    page.get_by_test_id("comparison-detail-toggle").click()
    table = page.get_by_test_id("comparison-table")
    expect(table).to_be_visible()
    for rank, slug in enumerate(VENDORS, start=1):
        row = table.get_by_test_id(f"comparison-row-{slug}")
        expect(row.get_by_test_id("rank")).to_have_text(str(rank))
    expect(page.get_by_test_id("comparison-provisional")).to_have_count(0)
    shot(page, "07-comparison")


def request_award(page: Page, winner: str) -> None:
    """The buyer requests; the award waits for a second person."""
    page.get_by_test_id("comparison").get_by_test_id("award-link").click()
    expect(page.get_by_test_id("award-sheets")).to_contain_text("All 2 evaluators")
    choice = page.get_by_test_id("award-bid")
    value = choice.locator("option", has_text=winner).get_attribute("value")
    choice.select_option(value)
    page.get_by_test_id("award-rationale-input").fill(RATIONALE)
    page.get_by_test_id("award-submit").click()
    expect_message(page, "Award requested. Another member of your team confirms it.")
    expect(page.get_by_test_id("award-pending-winner")).to_have_text(winner)
    expect(page.get_by_test_id("award-confirm")).to_have_count(0)
    expect(page.get_by_test_id("rfp-status")).to_have_text("Opened")
    shot(page, "08-award-requested")


def confirm_award(page: Page, winner: str) -> None:
    """The evaluator follows the dashboard item, reads what they sign, confirms."""
    attention = page.get_by_test_id("panel-attention")
    attention.get_by_role("link", name="asks you to confirm the award").click()
    summary = page.get_by_test_id("award-summary")
    expect(summary.get_by_test_id("award-summary-acme-flash")).to_contain_text("1")
    expect(summary.get_by_test_id("award-summary-bolt-storage")).to_contain_text("2")
    expect(page.get_by_test_id("award-pending-rationale")).to_have_text(RATIONALE)
    shot(page, "09-award-to-confirm")
    page.get_by_test_id("award-confirm").click()
    expect_message(page, "Awarded. Every bidder has been notified.")
    expect(page.get_by_test_id("award-winner")).to_have_text(winner)
    expect(page.get_by_test_id("award-requested-by")).to_contain_text("buyer")
    expect(page.get_by_test_id("award-confirmed-by")).to_contain_text("evaluator")
    expect(page.get_by_test_id("rfp-status")).to_have_text("Awarded")
    shot(page, "10-award")


def expect_award_notice(page: Page) -> None:
    """The loser's notice: in the app its title and link, in the message its own
    rank only (the in-app list shows no message bodies)."""
    page.get_by_test_id("notifications-link").click()
    notices = page.get_by_test_id("notification-list")
    notice = notices.locator("li", has_text=f"{REFERENCE} · {TITLE} has been awarded")
    expect(notice).to_have_count(1)
    expect(notice).not_to_contain_text(VENDORS["acme-flash"])
    body = Notification.objects.get(
        recipient__username="vendor-b", subject__endswith="has been awarded"
    ).body
    assert "ranked 2 of 2" in body
    assert VENDORS["acme-flash"] not in body
    shot(page, "11-loser-notifications")


# --- the journey ----------------------------------------------------------------


def test_rfp_from_draft_to_award_through_the_ui(
    page: Page, live_server: Any, clock: Any, second_evaluator: str
) -> None:
    start = clock.now()
    deadline = start + timedelta(days=5)

    log_in(page, "buyer")
    create_draft(page, start + timedelta(days=2), deadline)
    walk_editor(page)
    invite_vendors(page)
    publish(page)
    log_out(page)

    log_in(page, "vendor-a")
    ask_question(page)
    shot(page, "02-vendor-question")
    log_out(page)
    log_in(page, "buyer")
    answer_question(page)
    log_out(page)

    commitments = set()
    for vendor, offer, ttft_p99 in [
        ("vendor-a", costs("480000", "52000"), "180"),
        ("vendor-b", costs("560000", "41000"), "240"),
    ]:
        log_in(page, vendor)
        claims = f"ttft_ms p99 {ttft_p99} ms cold-c32\ngpu_util_pct mean 71 %"
        commitments.add(submit_bid(page, offer, claims))
        shot(page, f"03-bid-{vendor}")
        log_out(page)

    log_in(page, "buyer")
    expect_sealed(page, commitments)
    clock.travel_to(deadline + timedelta(hours=1))
    request_opening(page)
    log_out(page)
    log_in(page, "evaluator")
    confirm_opening(page)

    fill_scores(page, {"acme-flash": 8, "bolt-storage": 6}, "evaluator")
    shot(page, "06-evaluation-after-submit")
    log_out(page)
    log_in(page, second_evaluator)
    fill_scores(page, {"acme-flash": 7, "bolt-storage": 5}, second_evaluator)
    log_out(page)

    log_in(page, "buyer")
    expect_ranking(page)
    request_award(page, VENDORS["acme-flash"])
    log_out(page)
    log_in(page, "evaluator")
    confirm_award(page, VENDORS["acme-flash"])
    log_out(page)

    log_in(page, "vendor-b")
    expect_award_notice(page)
