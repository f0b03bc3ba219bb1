"""The signed report panel in real Chromium, with the Content-Security-Policy
enforced: the evaluation page loads without waiting for the report, the panel
shows the queued report's progress and polls by itself (htmx), turns to "Ready"
once the worker has rendered, signed and deposited it (here: the real task's
service, run beside the page), and its "Download signed report" link downloads
the signed PDF the panel's digest names. No policy violation, console error or
request off loopback on the way."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from gates.models import Evaluation, Report
from gates.services.reports import report_generate
from procurement.models import Rfp
from tests.artifacts.ingest_support import upload_rfp  # noqa: F401 (fixture)
from tests.browser.test_csp import lab_rows, log_in, watched  # noqa: F401 (fixtures)
from tests.gates.read_support import evaluated_fixture  # noqa: F401 (fixture)
from tests.gates.support import frozen_plan, gate_bundle, gate_campaign  # noqa: F401

pytestmark = pytest.mark.browser


@pytest.fixture
def reports_not_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    """No worker here: the test renders the report itself, when it chooses."""
    from gates.services import reports

    monkeypatch.setattr(reports, "_generate_send", lambda report_id: None)


def _render_beside_the_page(report: Report) -> None:
    """The worker's part, in a thread of its own (no event loop of Playwright's
    around pyHanko's and kaleido's)."""
    done: list[Any] = []
    worker = threading.Thread(
        target=lambda: done.append(report_generate(report_id=report.pk))
    )
    worker.start()
    worker.join(timeout=120)
    assert done, "the report was not rendered within 2 minutes"
    assert done[0] is not None
    assert done[0].status == Report.Status.READY, done[0].error


def test_the_panel_follows_the_report_from_queued_to_a_signed_download(
    reports_not_sent: None,
    lab_rows: None,  # noqa: F811
    evaluated: dict[str, Evaluation],
    rfp: Rfp,
    buyer: Any,
    watched: tuple[Page, list[str]],  # noqa: F811
) -> None:
    page, problems = watched
    evaluation = evaluated["a"]
    report = Report.objects.get(evaluation=evaluation)
    assert report.status == Report.Status.QUEUED

    log_in(page, "buyer")
    page.goto(reverse("gates:evaluation", args=[evaluation.public_id]))
    panel = page.get_by_test_id("report-panel")
    expect(panel).to_have_attribute("data-status", "queued")
    expect(panel.get_by_test_id("report-progress")).to_be_visible()
    expect(panel).to_contain_text("This panel updates by itself.")

    _render_beside_the_page(report)

    # the panel's own polling brings the news, no reload
    page.evaluate("window.notReloaded = true")
    expect(panel).to_have_attribute("data-status", "ready", timeout=15_000)
    assert page.evaluate("window.notReloaded") is True
    report.refresh_from_db()
    expect(panel.get_by_test_id("report-pdf-sha")).to_have_text(report.pdf_sha256)
    expect(panel.get_by_test_id("report-log-index")).to_have_text(
        f"log entry #{report.deposit.log_index}"
    )

    with page.expect_download() as download:
        panel.get_by_test_id("report-download").click()
    data = Path(download.value.path()).read_bytes()
    assert data.startswith(b"%PDF-")
    assert hashlib.sha256(data).hexdigest() == report.pdf_sha256

    assert problems == [], "\n".join(problems)
