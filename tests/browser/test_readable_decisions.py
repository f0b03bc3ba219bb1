"""Decisions readable on a 1280 x 800 laptop, with the demo seeded as
``scripts/run`` seeds it (``seed_demo --lab-validation``: real lab runs of both
example bundles on RFP-DEMO-2): the comparison shows each vendor's lab verdict
and the lab's figure beside the claim without sideways scrolling, and Bolt
Storage's failing gate page leads with its verdict and failing criteria in
under 1,500 px. Screenshots land in /tmp/shots-readable/."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from portal.demo import LAB_RFP
from procurement.models import Rfp
from tests.browser.lab import log_in

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SHOTS = Path(tempfile.gettempdir()) / "shots-readable"
VENDORS = {"acme-flash": "PASS", "bolt-storage": "FAIL"}
WIDTH, GATE_PAGE_MAX_PX = 1280, 1500


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def _inside_the_viewport(page: Page, testid: str) -> None:
    box = page.get_by_test_id(testid).bounding_box()
    assert box is not None, f"{testid} is not shown"
    assert box["x"] >= 0, testid
    assert box["x"] + box["width"] <= WIDTH, testid


def test_comparison_and_failing_gate_read_on_a_laptop(
    demo_gates: None,
    page: Page,
) -> None:
    rfp = Rfp.objects.get(reference=LAB_RFP)
    log_in(page, "buyer")

    page.goto(f"/rfps/{rfp.public_id}/comparison/")
    expect(page.get_by_test_id("comparison-summary")).to_be_visible()
    shot(page, "comparison")
    overflow = "document.documentElement.scrollWidth - window.innerWidth"
    assert page.evaluate(overflow) <= 0, "the comparison scrolls sideways"
    for vendor, verdict in VENDORS.items():
        expect(page.get_by_test_id(f"summary-verdict-{vendor}")).to_contain_text(
            verdict
        )
        figure = page.get_by_test_id(f"summary-reproduced-{vendor}")
        lab = figure.locator("strong .fig")  # rounded, the exact value on hover
        expect(lab).to_have_text(re.compile(r"^[\d,.]+ \S+$"))
        expect(lab).to_have_attribute("title", re.compile(r"^\d+\.?\d* \S+$"))
        for cell in ("summary-verdict", "summary-reproduced", "summary-cost"):
            _inside_the_viewport(page, f"{cell}-{vendor}")

    page.get_by_test_id("summary-verdict-bolt-storage").get_by_role("link").click()
    expect(page.get_by_test_id("gate-head")).to_contain_text("FAIL")
    shot(page, "gate-fail")
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height < GATE_PAGE_MAX_PX, f"the failing gate page is {height} px tall"
    failing = page.get_by_test_id("criteria-table").bounding_box()
    assert failing is not None
    assert failing["y"] < 800, "the failing criteria start below the first screen"
