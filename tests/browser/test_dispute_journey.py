"""A contested verdict in Chromium, with the demo seeded as ``scripts/run``
seeds it (``seed_demo --lab-validation``: Bolt Storage FAILs lab validation on
RFP-DEMO-2): vendor-b contests its FAIL from the evaluation page; vendor-a sees
nothing of it (an empty list, 404 on its page); the buyer finds it on the gate
board and upholds it, which schedules a re-test at the buyer's cost."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.lab import log_in
from tests.browser.test_gates_journey import log_out, open_board, verdict_of

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REASON = "The lab ran warm-c32-b8 on a host whose NVMe firmware we did not declare."


def test_vendor_b_contests_its_fail_and_the_buyer_upholds_it(
    demo_gates: None,
    page: Page,
) -> None:
    # vendor-b contests its FAIL from the evaluation page.
    log_in(page, "vendor-b")
    open_board(page)
    verdict_of(page, "bolt-storage").get_by_role("link").first.click()
    page.get_by_test_id("documents-link").click()
    form = page.get_by_test_id("contest-form")
    form.get_by_test_id("contest-reason").fill(REASON)
    form.get_by_test_id("contest-submit").click()
    expect(page).to_have_url(re.compile(r"/gates/disputes/[0-9a-f-]{36}/$"))
    expect(page.get_by_test_id("dispute-status")).to_have_text("open")
    dispute_url = page.url
    log_out(page)

    # vendor-a sees nothing of it.
    log_in(page, "vendor-a")
    page.get_by_test_id("disputes-link").click()
    expect(page.get_by_test_id("dispute-empty")).to_be_visible()
    response = page.goto(dispute_url)
    assert response is not None
    assert response.status == 404
    page.goto("/")
    log_out(page)

    # The buyer finds it on the board and upholds it: a re-test at its cost.
    log_in(page, "buyer")
    open_board(page)
    board_row = page.get_by_test_id("board-dispute")
    expect(board_row).to_contain_text("Bolt")
    board_row.get_by_role("link").click()
    expect(page.get_by_test_id("dispute-reason")).to_have_text(REASON)
    page.get_by_test_id("dispute-answer").fill("Agreed: the lab re-runs it.")
    page.get_by_test_id("dispute-uphold").click()
    expect(page.get_by_test_id("dispute-status")).to_have_text("upheld")
    expect(page.get_by_test_id("dispute-retest")).to_contain_text("the buyer")
