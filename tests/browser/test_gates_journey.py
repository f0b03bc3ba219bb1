"""Acceptance gates in Chromium, with the demo as ``scripts/run`` leaves it once its
lab agent has run RFP-DEMO-2's campaigns (seeded here at once with ``seed_demo
--lab-validation``: real lab runs of both example bundles, lab validation
evaluated): the buyer opens the gate board and sees
Acme Flash PASS and Bolt Storage FAIL, opens Bolt's failing TTFT criterion and
reads a reason naming the claim, the measured interval and the band; vendor-b
sees its re-test obligation and vendor-a none; the buyer promotes Acme Flash and
the evaluator, a second buyer-side person, signs the promotion off."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from portal.demo import LAB_RFP
from tests.browser.lab import log_in

pytestmark = [pytest.mark.browser, pytest.mark.slow]

GATE = "lab-validation"
FAILING = "ttft-p99-warm-c32-b8"
RATIONALE = "Acme Flash reproduced every claim in our reference lab."


def log_out(page: Page) -> None:
    page.get_by_role("button", name="Log out").click()
    expect(page.locator("#id_username")).to_be_visible()


def open_board(page: Page) -> None:
    page.goto("/rfps/")
    row = page.get_by_test_id(f"rfp-row-{LAB_RFP}")
    row.get_by_role("link", name=LAB_RFP).click()
    page.get_by_test_id("tab-gates").click()
    expect(page.get_by_test_id("gate-board")).to_be_visible()


def verdict_of(page: Page, vendor: str) -> Any:
    return page.get_by_test_id(f"cell-{vendor}-{GATE}")


def test_buyer_reads_the_board_vendor_b_its_obligation_and_a_promotion_takes_two(
    demo_gates: None, page: Page
) -> None:
    # The buyer's board: the lab reproduced Acme Flash's claims, not Bolt's.
    log_in(page, "buyer")
    open_board(page)
    expect(verdict_of(page, "acme-flash")).to_contain_text("PASS")
    expect(verdict_of(page, "bolt-storage")).to_contain_text("FAIL")
    expect(
        verdict_of(page, "bolt-storage").get_by_test_id("obligations")
    ).to_contain_text("1 open re-test")

    # Bolt's failing criterion: a reason a procurement officer can quote.
    verdict_of(page, "bolt-storage").get_by_role("link").first.click()
    row = page.get_by_test_id(f"criterion-{FAILING}")
    expect(row).to_contain_text("FAIL")
    row.get_by_role("link", name=FAILING).click()
    head = page.get_by_test_id("criterion-head")
    expect(head).to_contain_text("claimed 2000 ms, accepted up to 2200 ms (+10 %)")
    expect(head).to_contain_text(re.compile(r"95 % interval \d+\.\d+.\d+\.\d+ ms"))
    expect(page.get_by_test_id("chart-criterion")).to_be_visible()
    log_out(page)

    # vendor-b owes the re-test; vendor-a owes nothing and sees nothing of Bolt.
    log_in(page, "vendor-b")
    page.get_by_test_id("retests-link").click()
    rows = page.get_by_test_id("retest-row")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text(LAB_RFP)
    rows.first.get_by_role("link", name=GATE).click()
    expect(page.get_by_test_id("retest-status")).to_contain_text("Open")
    expect(page.get_by_test_id("retest-reason")).to_contain_text("claimed 2000 ms")
    log_out(page)
    log_in(page, "vendor-a")
    page.get_by_test_id("retests-link").click()
    expect(page.get_by_test_id("retest-empty")).to_be_visible()
    expect(page.locator("body")).not_to_contain_text("Bolt")
    log_out(page)

    # The buyer promotes Acme Flash: it waits for a second sign-off ...
    log_in(page, "buyer")
    open_board(page)
    verdict_of(page, "acme-flash").get_by_role("link").first.click()
    form = page.get_by_test_id("decision-form")
    form.get_by_test_id("decision-kind-promote").check()
    form.get_by_test_id("decision-rationale").fill(RATIONALE)
    form.get_by_test_id("decision-submit").click()
    expect(page.get_by_test_id("decision-pending-mine")).to_be_visible()
    expect(page.get_by_test_id("decision-second")).to_have_count(0)
    log_out(page)

    # ... which the evaluator, another buyer-side person, gives.
    log_in(page, "evaluator")
    open_board(page)
    expect(verdict_of(page, "acme-flash").get_by_test_id("pending")).to_be_visible()
    verdict_of(page, "acme-flash").get_by_role("link").first.click()
    page.get_by_test_id("decision-second").click()
    expect(page.get_by_test_id("decision-in-effect")).to_contain_text("Promote")
    open_board(page)
    expect(verdict_of(page, "acme-flash").get_by_test_id("decision")).to_contain_text(
        "Promote · buyer + evaluator"
    )
