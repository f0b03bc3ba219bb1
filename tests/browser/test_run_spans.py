"""The run page in real Chromium draws a run's trace spans under the
Content-Security-Policy: the request waterfall's SVG bars lie where the spans
lie on the run's time axis, and the slowest requests list the telemetry
intervals they overlap, with no policy violation and no console error."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from benchmarks.models import Run
from tests.benchmarks.runner_api.conftest import (  # noqa: F401 (fixtures)
    _runner_settings,
    _uploads_in_the_tests_var_dir,
    agent,
    bundle,
    campaign,
    issued,
    lab_org,
    pool,
    runner_work_dir,
    sent_tasks,
    upload_rfp,
)
from tests.benchmarks.runner_api.test_artefacts import live  # noqa: F401 (fixture)
from tests.benchmarks.runner_api.test_run_page_spans import traced  # noqa: F401
from tests.browser.test_csp import log_in, watched  # noqa: F401 (fixture)

pytestmark = pytest.mark.browser


def test_the_run_page_draws_the_waterfall_and_the_slowest_requests(
    transactional_db: None,
    sent_tasks: list[dict[str, Any]],  # noqa: F811
    traced: Run,  # noqa: F811
    buyer: Any,
    watched: tuple[Page, list[str]],  # noqa: F811
) -> None:
    page, problems = watched
    log_in(page, buyer.username)

    page.goto(reverse("benchmarks:run_detail", args=[traced.public_id]))

    rows = page.get_by_test_id("waterfall-row")
    expect(rows).to_have_count(7)
    track = rows.nth(1).locator("svg.wf-svg").bounding_box()
    bar = rows.nth(1).locator("rect").bounding_box()
    assert track
    assert bar
    # the first request starts 100 ms into a 1900 ms window and lasts 1800 ms
    assert (bar["x"] - track["x"]) / track["width"] == pytest.approx(
        100 / 1900, abs=0.01
    )
    assert bar["width"] / track["width"] == pytest.approx(1800 / 1900, abs=0.01)
    slow = page.get_by_test_id("slow-request")
    expect(slow).to_have_count(3)
    intervals = slow.first.get_by_test_id("slow-interval")
    expect(intervals).to_have_count(2)
    expect(intervals.first).to_contain_text("512.0 read IOPS, await 0.742 ms")
    expect(page.get_by_test_id("spans-link")).to_be_visible()
    assert problems == [], "\n".join(problems)
