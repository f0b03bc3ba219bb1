"""Readable screens in real Chromium: the comparison matrix at a 1280-px laptop
(vendor column stays in view while the scroller moves, the scroller takes keyboard
focus and scrolls with the arrow keys, the page itself never scrolls sideways) and
the top navigation at 768 px (a tablet: every item inside the viewport, none
clipped by the bar). Screenshots land in /tmp/shots-layout/."""

from __future__ import annotations

import tempfile
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from accounts.models import Organisation, Role
from procurement.models import Rfp
from tests.accounts.factories import PASSWORD, MembershipFactory, UserFactory
from tests.procurement.factories_evaluation import (
    CostModelInputFactory,
    RequiredMetricFactory,
    opened_rfp,
    score_all,
    vendor_orgs,
)

pytestmark = [pytest.mark.browser]

SHOTS = Path(tempfile.gettempdir()) / "shots-layout"
CRITERIA = [
    ("Reproducibility of the evidence", 20),
    ("Time to first token", 15),
    ("Throughput under load", 15),
    ("Total cost of ownership", 15),
    ("Integration effort", 10),
    ("Support and roadmap", 10),
    ("Power and rack density", 10),
    ("Security posture", 5),
]
METRICS = [
    "ttft_ms",
    "e2e_latency_ms",
    "tokens_per_s",
    "read_iops",
    "read_bandwidth_gbps",
    "write_bandwidth_gbps",
    "cache_hit_rate",
    "kv_restore_ms",
    "power_w",
    "tail_latency_p999_ms",
]
MAIN_NAV = ["Dashboard", "RFPs", "Escrow", "Lab", "Audit trail", "Signing keys"]


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def log_in(page: Page, username: str) -> None:
    page.goto("/accounts/login/")
    page.locator("#id_username").fill(username)
    page.locator("#id_password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_test_id("current-user")).to_have_text(username)


@pytest.fixture
def matrix_rfp(
    transactional_db: None, buyer_org: Organisation, buyer: Any, evaluator: Any
) -> Rfp:
    """An opened RFP as a real tender has it: five vendors, eight criteria, ten
    required metrics each claimed at two percentiles, cost inputs, one submitted
    score sheet (so the buyer sees the consensus)."""
    vendors = vendor_orgs(5)
    for i, vendor in enumerate(vendors):
        vendor.name = f"Vendor {i} Storage Systems"
        vendor.save()
    rfp = opened_rfp(buyer_org, vendors, criteria=CRITERIA, reference="RFP-WIDE-1")
    for position, name in enumerate(METRICS):
        RequiredMetricFactory.create(rfp=rfp, name=name, position=position)
    for i, bid in enumerate(rfp.bids.all()):
        bid.claimed_metrics = [
            {
                "metric": name,
                "stat": stat,
                "value": round(10.0 + i + j * 3.7, 1),
                "unit": "ms",
                "scenario": "cold-c32-b8",
            }
            for j, name in enumerate(METRICS)
            for stat in ("p50", "p99")
        ]
        bid.save()
        CostModelInputFactory.create(
            bid=bid, hardware_cost=Decimal(1_000_000 + i * 75_000)
        )
    score_all(rfp, evaluator, {v.slug: 4 + i for i, v in enumerate(vendors)})
    return rfp


@pytest.fixture
def busy_user(buyer_org: Organisation, transactional_db: None) -> str:
    """A buyer who also sells (a vendor membership): the longest navigation."""
    user = UserFactory.create(username="procurement-lead-northwind")
    MembershipFactory.create(user=user, organisation=buyer_org, role=Role.BUYER)
    vendor = Organisation.objects.create(
        slug="side-vendor", name="Side Vendor", kind=Organisation.Kind.VENDOR
    )
    MembershipFactory.create(user=user, organisation=vendor, role=Role.VENDOR)
    return user.username


def _body_overflow(page: Page) -> int:
    return page.evaluate(
        "() => document.documentElement.scrollWidth"
        " - document.documentElement.clientWidth"
    )


# The matrix's scroller, whatever the markup: the table's nearest ancestor that
# scrolls sideways (the page itself when none does).
NEAREST_SCROLLER = """(el) => {
  for (let box = el.parentElement; box; box = box.parentElement) {
    const style = getComputedStyle(box).overflowX;
    if ((style === 'auto' || style === 'scroll') && box.scrollWidth > box.clientWidth) {
      box.dataset.layoutScroller = 'yes';
      return true;
    }
  }
  return false;
}"""
VENDOR_CELL = """(el) => {
  const r = el.getBoundingClientRect();
  const scroller = document.querySelector('[data-layout-scroller]')
    .getBoundingClientRect();
  const hit = document.elementFromPoint(r.left + 12, r.top + r.height / 2);
  return {left: r.left, right: r.right, scrollerLeft: scroller.left,
          hit: hit !== null && (hit === el || el.contains(hit))};
}"""


INTO_VIEW = "(el) => el.scrollIntoView({block: 'center', inline: 'nearest'})"
SCROLLER = "document.querySelector('[data-testid=comparison-scroller]')"


def _scroll_left(page: Page) -> float:
    return page.get_by_test_id("comparison-scroller").evaluate("(el) => el.scrollLeft")


def _settled_scroll_left(page: Page) -> float:
    """scrollLeft once a (smooth) keyboard scroll has come to rest."""
    last = -1.0
    for _ in range(50):
        now = _scroll_left(page)
        if now == last:
            return now
        last = now
        page.wait_for_timeout(100)
    return last


def _open_matrix(page: Page, rfp: Rfp) -> None:
    log_in(page, "buyer")
    page.goto(f"/rfps/{rfp.public_id}/comparison/")
    page.get_by_test_id("comparison-detail-toggle").click()  # the full matrix
    expect(page.get_by_test_id("comparison-table")).to_be_visible()


def test_matrix_keeps_the_vendor_column_in_view(page: Page, matrix_rfp: Rfp) -> None:
    _open_matrix(page, matrix_rfp)
    shot(page, "matrix-1280")
    table = page.get_by_test_id("comparison-table")
    assert table.evaluate(NEAREST_SCROLLER), "the matrix must be wider than its box"
    assert _body_overflow(page) <= 0, "the page scrolls sideways"
    scroller = page.locator("[data-layout-scroller]")

    scroller.evaluate("(el) => { el.scrollLeft = el.scrollWidth; }")
    scrolled = scroller.evaluate("(el) => el.scrollLeft")
    assert scrolled > 0
    shot(page, "matrix-1280-scrolled")

    for vendor in matrix_rfp.bids.values_list("vendor_organisation__slug", flat=True):
        row = page.get_by_test_id(f"comparison-row-{vendor}")
        name = row.locator(":is(td, th)", has_text="Storage Systems")
        for cell in (name, row.get_by_test_id("rank")):
            # rows with the lab's figures are tall: bring the row into the
            # viewport (vertically; the matrix stays scrolled to its right end)
            cell.evaluate(INTO_VIEW)
            box = cell.evaluate(VENDOR_CELL)
            assert box["left"] >= box["scrollerLeft"] - 0.5, f"{vendor} scrolled away"
            assert box["hit"], f"{vendor}: its first columns are covered or gone"
            assert scroller.evaluate("(el) => el.scrollLeft") == scrolled
    assert _body_overflow(page) <= 0, "the page scrolls sideways"

    page.set_viewport_size({"width": 768, "height": 1024})  # a tablet
    expect(scroller).to_be_visible()
    assert _body_overflow(page) <= 0, "the page scrolls sideways at 768 px"
    shot(page, "matrix-768")


def test_matrix_scroller_takes_focus_and_scrolls_with_the_keyboard(
    page: Page, matrix_rfp: Rfp
) -> None:
    _open_matrix(page, matrix_rfp)
    scroller = page.get_by_test_id("comparison-scroller")
    expect(scroller).to_have_attribute("role", "region")
    expect(scroller).to_have_attribute("tabindex", "0")
    assert scroller.get_attribute("aria-label")

    # the last control before the matrix: the toggle that opened it
    page.get_by_test_id("comparison-detail-toggle").focus()
    page.keyboard.press("Tab")
    expect(scroller).to_be_focused()
    outline = scroller.evaluate(
        "(el) => [getComputedStyle(el).outlineStyle, getComputedStyle(el).outlineWidth]"
    )
    assert outline[0] != "none"
    assert outline[1] != "0px", "no visible focus ring"
    shot(page, "matrix-1280-focused")

    for _ in range(6):
        page.keyboard.press("ArrowRight")
    page.wait_for_function(f"() => {SCROLLER}.scrollLeft > 0")
    moved = _settled_scroll_left(page)
    page.keyboard.press("ArrowLeft")
    assert _settled_scroll_left(page) < moved
    expect(scroller).to_be_focused()  # the arrows moved the matrix, not the focus
    assert _body_overflow(page) <= 0


HIT_TEST = """(el) => {
  const r = el.getBoundingClientRect();
  const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  const bar = el.closest('header').getBoundingClientRect();
  return {left: r.left, right: r.right, top: r.top, bottom: r.bottom,
          width: r.width, height: r.height, barBottom: bar.bottom,
          hit: hit !== null && (hit === el || el.contains(hit)),
          viewport: document.documentElement.clientWidth};
}"""


def _topbar_items(page: Page) -> list[Any]:
    bar = page.locator("header.topbar")
    return [
        *bar.get_by_role("navigation", name="Main").get_by_role("link").all(),
        bar.get_by_test_id("notifications-link"),
        bar.get_by_test_id("current-user"),
        bar.get_by_role("button", name="Log out"),
    ]


FOCUSED = """() => {
  const el = document.activeElement;
  return el && el.closest('header') ? el.textContent.trim() : null;
}"""


@pytest.mark.parametrize("width", [1280, 1024, 768])
def test_navigation_fits_without_clipping(
    page: Page, busy_user: str, width: int
) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, busy_user)
    nav = page.get_by_role("navigation", name="Main")
    for label in MAIN_NAV:
        expect(nav.get_by_role("link", name=label, exact=True)).to_be_visible()
    shot(page, f"nav-{width}")

    for item in _topbar_items(page):
        box = item.evaluate(HIT_TEST)
        name = item.inner_text()
        assert box["width"] > 0, name
        assert box["left"] >= 0, name
        assert box["right"] <= box["viewport"], f"{name} ends beyond the viewport"
        assert box["bottom"] <= box["barBottom"] + 0.5, f"{name} hangs out of the bar"
        assert box["hit"], f"{name} is covered or clipped"
    assert _body_overflow(page) <= 0


def test_navigation_is_walked_with_the_keyboard_on_a_tablet(
    page: Page, busy_user: str
) -> None:
    page.set_viewport_size({"width": 768, "height": 900})
    log_in(page, busy_user)
    page.locator("body").focus()
    reached: list[str] = []
    for _ in range(20):
        page.keyboard.press("Tab")
        label = page.evaluate(FOCUSED)
        if label:
            reached.append(label)
            box = page.evaluate(
                "() => document.activeElement.getBoundingClientRect().right"
            )
            assert box <= 768, f"{label} takes focus beyond the viewport"
    for label in [*MAIN_NAV, "API docs", "Log out"]:
        assert label in reached, f"{label} never takes focus"


SUMMARY_CELLS = ("summary-verdict", "summary-reproduced", "summary-cost")


def test_the_comparison_summary_fits_a_laptop_without_sideways_scroll(
    page: Page, matrix_rfp: Rfp
) -> None:
    log_in(page, "buyer")
    page.goto(f"/rfps/{matrix_rfp.public_id}/comparison/")
    summary = page.get_by_test_id("comparison-summary")
    expect(summary).to_be_visible()
    shot(page, "summary-1280")

    assert _body_overflow(page) <= 0, "the page scrolls sideways"
    assert summary.evaluate(NEAREST_SCROLLER) is False, "the summary scrolls sideways"
    width = page.viewport_size["width"] if page.viewport_size else 1280
    for vendor in matrix_rfp.bids.values_list("vendor_organisation__slug", flat=True):
        for cell in SUMMARY_CELLS:
            box = page.get_by_test_id(f"{cell}-{vendor}").bounding_box()
            assert box is not None, f"{cell} of {vendor} is not shown"
            assert box["x"] >= 0, (cell, vendor)
            assert box["x"] + box["width"] <= width, (cell, vendor)
    expect(page.get_by_test_id("comparison-table")).to_be_hidden()  # one click away
