"""A lab operator produces a verdict in Chromium: with the buyer's gate plan for
Acme Flash frozen on RFP-DEMO-2 (not yet evaluated), ``labops`` opens the gate
board, the vendor's gate, clicks "Run this gate", submits the lab's campaign form
the gate page opened with the gate chosen, watches the campaign's runs end on the
embedded lab (a real worker, which also takes the gate's evaluation from the
default queue), and finds the new evaluation on the board."""

from __future__ import annotations

import re
import subprocess
import time

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from playwright.sync_api import Locator, Page, expect

from accounts.models import Organisation
from benchmarks.lib.queues import pool_queue
from gates.models import Evaluation, GatePlan
from gates.services.plans import plan_create_default, plan_freeze
from portal.demo import LAB_POOL, LAB_RFP
from procurement.models import Rfp
from tests.browser.lab import (
    CAMPAIGN_TIMEOUT_S,
    choose_pool,
    log_in,
    watch_campaign,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

GATE = "lab-validation"
VENDOR = "acme-flash"


@pytest.fixture
def lab_queues() -> tuple[str, ...]:
    """The lab's worker also evaluates the gate when the campaign ends."""
    return (pool_queue(LAB_POOL), "celery")


def freeze_default_plan() -> GatePlan:
    rfp = Rfp.objects.get(reference=LAB_RFP)
    vendor = Organisation.objects.get(slug=VENDOR)
    buyer = get_user_model().objects.get(username="buyer")
    plan = plan_create_default(rfp=rfp, vendor=vendor, actor=buyer)
    return plan_freeze(plan=plan, actor=buyer)


def board_cell(page: Page, rfp: Rfp) -> Locator:
    page.goto(reverse("gates:board", args=(rfp.public_id,)))
    return page.get_by_test_id(f"cell-{VENDOR}-{GATE}")


@pytest.mark.timeout(CAMPAIGN_TIMEOUT_S + 240)
def test_labops_runs_a_gate_from_its_page_and_the_board_shows_the_verdict(
    lab: subprocess.Popen[bytes], page: Page
) -> None:
    plan = freeze_default_plan()
    log_in(page, "labops")
    cell = board_cell(page, plan.rfp)
    expect(cell).to_contain_text("not evaluated")

    cell.get_by_role("link").first.click()
    page.get_by_test_id("run-gate-link").click()
    expect(page.locator("#id_gate option:checked")).to_contain_text(GATE)
    expect(page.locator("#id_pool option:checked")).to_have_text(
        re.compile(rf"^{LAB_POOL} · .*· 1 host online$")
    )  # the lab's worker: the pool whose runs will start comes first
    choose_pool(page, LAB_POOL)
    page.locator("#id_repetitions").fill("1")
    page.get_by_test_id("campaign-start-submit").click()
    expect(page).to_have_url(re.compile(r"/lab/campaigns/[0-9a-f-]{36}/$"))
    expect(page.get_by_test_id("campaign-gates")).to_contain_text(
        f"{GATE} of plan v{plan.version}"
    )
    watch_campaign(page, page.url)

    deadline = time.monotonic() + 120
    while not Evaluation.objects.filter(plan=plan, gate=GATE).exists():
        assert time.monotonic() < deadline, "the gate was not evaluated"
        assert lab.poll() is None, "the worker died"
        time.sleep(0.5)
    evaluation = Evaluation.objects.filter(plan=plan, gate=GATE).earliest("id")
    cell = board_cell(page, plan.rfp)
    expect(cell).not_to_contain_text("not evaluated")
    expect(cell).to_contain_text(f"plan v{plan.version}")
    expect(cell.get_by_test_id("verdict").first).to_have_text(
        re.compile(r"PASS|WARN|FAIL|INCONCLUSIVE|HALTED")
    )
    assert evaluation.campaign.pool.name == LAB_POOL
