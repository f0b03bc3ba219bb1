"""In the embedded default (SQLite broker, no server), ``labops`` starts a
campaign on each example bundle of the seeded RFP-DEMO-2 from the browser, watches
the progress bars move and the campaigns complete, and the Plotly charts render.
The lab (a real worker process on ``pool.local``) is ``tests/browser/lab.py``'s: a
pool whose policy names no fault hook and no block device, so every steady run
succeeds, and the bundles' failover and interference runs fail saying what the pool
lacks (the warm-up runs need nothing more)."""

from __future__ import annotations

import subprocess

import pytest
from playwright.sync_api import Page, expect

from tests.browser.lab import (
    CAMPAIGN_TIMEOUT_S,
    expect_campaign_done,
    expect_charts,
    log_in,
    start_campaign,
    watch_campaign,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

VENDORS = ("Acme Flash", "Bolt Storage")
CHARTS = ("latency", "throughput", "warm-cold", "spread")


@pytest.mark.timeout(CAMPAIGN_TIMEOUT_S * 2 + 120)
def test_labops_runs_both_example_bundles_and_sees_progress_and_charts(
    lab: subprocess.Popen[bytes], page: Page
) -> None:
    log_in(page, "labops")
    urls = [start_campaign(page, vendor) for vendor in VENDORS]

    progress = [watch_campaign(page, url) for url in urls]

    assert len(set(progress[0])) >= 2, f"the progress bar never moved: {progress}"
    for url in urls:
        expect_campaign_done(page, url)
        expect(page.get_by_test_id("campaign-progress")).to_have_attribute(
            "value", "100"
        )
        expect_charts(page, CHARTS)
    page.get_by_test_id("run-row").first.get_by_role("link").click()
    expect_charts(page, ("series",))
    assert lab.poll() is None, "the worker died"
