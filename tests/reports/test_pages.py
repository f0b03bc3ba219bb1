"""The report panels and page downloads: the evaluation page loads its "Signed
report" panel, which polls itself while queued, shows the downloads with their
digests and log entry when ready, and the reason with "Try again" (for who may
evaluate) when failed; the decision page loads a recorded promotion's
certificate panel. The buyer and the vendor download (audited), another vendor
and outsiders get 404, anonymous visitors the login page; 409 while queued."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from accounts.models import AuditEvent
from gates.models import Decision, Evaluation, GatePlan, Report
from gates.services.decisions import decision_record
from gates.services.reports import report_generate, report_transition
from tests.gates.support import LAB

pytestmark = pytest.mark.django_db
S = Report.Status
HTMX = {"HTTP_HX_REQUEST": "true"}


def panel(evaluation: Evaluation) -> str:
    return reverse("gates:evaluation_report", args=[evaluation.public_id])


def pdf_url(evaluation: Evaluation) -> str:
    return reverse("gates:evaluation_report_pdf", args=[evaluation.public_id])


def statement_url(evaluation: Evaluation) -> str:
    return reverse("gates:evaluation_report_statement", args=[evaluation.public_id])


def request_url(evaluation: Evaluation) -> str:
    return reverse("gates:evaluation_report_request", args=[evaluation.public_id])


def test_the_evaluation_page_loads_its_panel_which_polls_while_queued(
    passed: Evaluation, client_for: Any, buyer: Any
) -> None:
    client = client_for(buyer)
    page = client.get(reverse("gates:evaluation", args=[passed.public_id]))
    assert f'hx-get="{panel(passed)}" hx-trigger="load"' in page.content.decode()

    body = client.get(panel(passed), **HTMX).content.decode()

    assert 'data-status="queued"' in body
    assert f'hx-get="{panel(passed)}" hx-trigger="every 2s"' in body
    assert 'data-testid="report-progress"' in body
    assert 'data-testid="report-download"' not in body
    assert "<html" not in body  # the partial only
    # without htmx: a page of its own
    assert "<html" in client.get(panel(passed)).content.decode()


def test_a_ready_panel_offers_the_downloads_and_stops_polling(
    passed: Evaluation, client_for: Any, vendor_a: Any, chromium: None
) -> None:
    report = report_generate(report_id=Report.objects.get(evaluation=passed).pk)
    assert report is not None
    assert report.status == S.READY, report.error
    client = client_for(vendor_a)

    body = client.get(panel(passed), **HTMX).content.decode()

    assert 'data-status="ready"' in body
    assert "hx-trigger" not in body
    assert f'href="{pdf_url(passed)}"' in body
    assert f'href="{statement_url(passed)}"' in body
    assert report.pdf_sha256 in body
    assert report.statement_sha256 in body
    assert f"log entry #{report.deposit.log_index}" in body
    assert 'data-testid="report-request"' not in body

    pdf = client.get(pdf_url(passed))
    statement = client.get(statement_url(passed))

    assert (pdf.status_code, pdf["Content-Type"]) == (200, "application/pdf")
    assert hashlib.sha256(pdf.content).hexdigest() == report.pdf_sha256
    assert pdf["X-Content-SHA256"] == report.pdf_sha256
    assert hashlib.sha256(statement.content).hexdigest() == report.statement_sha256
    downloads = AuditEvent.objects.filter(action="report.downloaded", actor=vendor_a)
    assert downloads.count() == 2
    assert client.head(pdf_url(passed)).status_code == 405  # HEAD would download


def test_a_failed_panel_shows_the_reason_and_try_again_for_evaluators(
    passed: Evaluation, client_for: Any, buyer: Any, vendor_a: Any
) -> None:
    report = Report.objects.get(evaluation=passed)
    report.error = "The PDF could not be signed: the TSA did not answer."
    report_transition(report, S.FAILED, None, fields=("error",))

    buyer_body = client_for(buyer).get(panel(passed), **HTMX).content.decode()
    vendor_body = client_for(vendor_a).get(panel(passed), **HTMX).content.decode()

    assert "the TSA did not answer" in buyer_body
    assert "Try again" in buyer_body
    assert "csrfmiddlewaretoken" in buyer_body
    assert "the TSA did not answer" in vendor_body
    assert "Try again" not in vendor_body


def test_try_again_queues_it_and_redirects_or_answers_the_panel(
    passed: Evaluation, client_for: Any, buyer: Any, vendor_a: Any
) -> None:
    report = Report.objects.get(evaluation=passed)
    report_transition(report, S.FAILED, None)
    client = client_for(buyer)

    assert client_for(vendor_a).post(request_url(passed)).status_code == 403
    response = client.post(request_url(passed))

    assert response.status_code == 302
    assert response["Location"] == reverse("gates:evaluation", args=[passed.public_id])
    report.refresh_from_db()
    assert report.status == S.QUEUED
    again = client.post(request_url(passed), **HTMX).content.decode()
    assert 'data-status="queued"' in again  # the live one, unchanged
    assert Report.objects.filter(evaluation=passed).count() == 1


def test_other_vendors_and_outsiders_get_404_anonymous_the_login_page(
    passed: Evaluation, client_for: Any, vendor_b: Any, outsider: Any
) -> None:
    pages = [panel(passed), pdf_url(passed), statement_url(passed)]
    for user in (vendor_b, outsider):
        client = client_for(user)
        for url in pages:
            assert client.get(url).status_code == 404
        assert client.post(request_url(passed)).status_code == 404
    for url in [*pages, request_url(passed)]:
        response = Client().get(url)
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/")
    assert not AuditEvent.objects.filter(action="report.downloaded").exists()


def test_a_download_while_queued_answers_409(
    passed: Evaluation, client_for: Any, buyer: Any
) -> None:
    response = client_for(buyer).get(pdf_url(passed))

    assert response.status_code == 409
    assert "queued" in response.content.decode()
    assert not AuditEvent.objects.filter(action="report.downloaded").exists()


def test_the_decision_page_loads_the_certificate_panel_of_a_recorded_promotion(
    promoted: Decision, frozen_plan: GatePlan, client_for: Any, buyer: Any
) -> None:
    client = client_for(buyer)
    page = client.get(reverse("gates:decisions", args=[frozen_plan.public_id, LAB]))
    url = reverse("gates:decision_certificate", args=[promoted.public_id])
    assert f'hx-get="{url}"' in page.content.decode()

    body = client.get(url, **HTMX).content.decode()

    assert "Acceptance certificate" in body
    assert 'data-kind="certificate"' in body
    assert 'data-status="queued"' in body


def test_a_hold_has_no_certificate_panel(
    passed: Evaluation, frozen_plan: GatePlan, client_for: Any, buyer: Any
) -> None:
    hold = decision_record(
        plan=frozen_plan, gate=LAB, kind="hold", rationale="Wait.", actor=buyer
    )
    client = client_for(buyer)
    page = client.get(reverse("gates:decisions", args=[frozen_plan.public_id, LAB]))
    assert 'data-testid="report-panel-loader"' not in page.content.decode()

    url = reverse("gates:decision_certificate", args=[hold.public_id])
    body = client.get(url, **HTMX).content.decode()

    assert "Only a recorded promotion has an acceptance certificate." in body
    assert 'data-testid="report-request"' not in body
    refused = client.post(
        reverse("gates:decision_certificate_request", args=[hold.public_id])
    )
    assert refused.status_code == 302
    assert not Report.objects.filter(kind=Report.Kind.CERTIFICATE).exists()
