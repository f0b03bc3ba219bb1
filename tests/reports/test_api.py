"""The reports API: the buyer side and the vendor the report is about read its
status and download the PDF and the statement (each download audited), another
vendor and other organisations get 404, anonymous callers 401; downloads answer
409 in the error shape while the report is not ready; requesting is for who may
evaluate (403 for the vendor); certificates only for recorded promotions; the
statement key is public and 404 until a report is signed."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from rest_framework.test import APIClient

from accounts.models import AuditEvent
from artifacts.lib.transparency.keyfile import load_private_key
from gates.conf import report_settings
from gates.models import Decision, Evaluation, GatePlan, Report
from gates.services.decisions import decision_record
from gates.services.reports import report_generate, report_transition
from tests.gates.support import LAB

pytestmark = pytest.mark.django_db
S = Report.Status


def api(user: Any = None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def urls(evaluation: Evaluation) -> dict[str, str]:
    base = f"/api/v1/evaluations/{evaluation.public_id}"
    return {
        "status": f"{base}/report/",
        "pdf": f"{base}/report.pdf",
        "statement": f"{base}/statement.json",
    }


@pytest.fixture
def ready(passed: Evaluation, chromium: None) -> Report:
    report = report_generate(report_id=Report.objects.get(evaluation=passed).pk)
    assert report is not None
    assert report.status == S.READY, report.error
    return report


def test_buyer_and_vendor_download_the_report_each_download_audited(
    passed: Evaluation, ready: Report, buyer: Any, vendor_a: Any
) -> None:
    for user in (buyer, vendor_a):
        client = api(user)
        body = client.get(urls(passed)["status"]).json()
        assert body["status"] == "ready"
        assert body["pdf_sha256"] == ready.pdf_sha256
        assert body["log_index"] == ready.deposit.log_index
        assert body["urls"]["pdf"] == urls(passed)["pdf"]

        pdf = client.get(body["urls"]["pdf"])
        statement = client.get(body["urls"]["statement"])

        assert pdf.status_code == 200
        assert pdf["Content-Type"] == "application/pdf"
        assert pdf["Content-Disposition"].startswith("attachment; filename=")
        assert pdf["X-Content-SHA256"] == ready.pdf_sha256
        assert hashlib.sha256(pdf.content).hexdigest() == ready.pdf_sha256
        assert statement["Content-Type"] == "application/json"
        assert hashlib.sha256(statement.content).hexdigest() == ready.statement_sha256
        rows = AuditEvent.objects.filter(action="report.downloaded", actor=user)
        assert sorted(rows.values_list("data__part", flat=True)) == ["pdf", "statement"]


def test_another_vendor_and_outsiders_get_404_anonymous_401(
    passed: Evaluation, vendor_b: Any, outsider: Any
) -> None:
    for url in urls(passed).values():
        assert api(vendor_b).get(url).status_code == 404
        assert api(outsider).get(url).status_code == 404
        assert api().get(url).status_code == 401
    assert api(vendor_b).post(urls(passed)["status"]).status_code == 404
    assert not AuditEvent.objects.filter(action="report.downloaded").exists()


def test_downloads_answer_409_while_the_report_is_queued(
    passed: Evaluation, buyer: Any
) -> None:
    client = api(buyer)
    body = client.get(urls(passed)["status"]).json()
    assert (body["status"], body["urls"]["pdf"], body["pdf_sha256"]) == (
        "queued",
        None,
        "",
    )

    for part in ("pdf", "statement"):
        response = client.get(urls(passed)[part])
        assert response.status_code == 409
        assert response["Content-Type"] == "application/json"
        error = response.json()
        assert error["code"] == "report_not_ready"
        assert "queued" in error["message"]
    assert not AuditEvent.objects.filter(action="report.downloaded").exists()


def test_who_may_evaluate_requests_the_report_again(
    passed: Evaluation, buyer: Any, labops: Any, vendor_a: Any
) -> None:
    report = Report.objects.get(evaluation=passed)
    assert api(vendor_a).post(urls(passed)["status"]).status_code == 403
    same = api(labops).post(urls(passed)["status"])
    assert (same.status_code, same.json()["id"]) == (202, str(report.public_id))
    report_transition(report, S.FAILED, None)

    again = api(buyer).post(urls(passed)["status"])

    assert again.status_code == 202
    assert again.json()["status"] == "queued"
    assert AuditEvent.objects.filter(action="report.queued", actor=buyer).exists()


def test_certificates_are_of_recorded_promotions_only(
    promoted: Decision, frozen_plan: GatePlan, buyer: Any, vendor_a: Any
) -> None:
    base = f"/api/v1/decisions/{promoted.public_id}"
    body = api(vendor_a).get(f"{base}/certificate/").json()
    assert (body["kind"], body["status"]) == ("certificate", "queued")
    assert body["decision"] == str(promoted.public_id)
    assert api(buyer).get(f"{base}/certificate.pdf").status_code == 409
    hold = decision_record(
        plan=frozen_plan, gate=LAB, kind="hold", rationale="Wait.", actor=buyer
    )
    other = f"/api/v1/decisions/{hold.public_id}"

    assert api(buyer).get(f"{other}/certificate/").status_code == 404
    refused = api(buyer).post(f"{other}/certificate/")

    assert refused.status_code == 409
    assert refused.json()["code"] == "not_certifiable"


def test_the_statement_key_is_public_once_a_report_is_signed(
    passed: Evaluation, chromium: None
) -> None:
    missing = api().get("/api/v1/reports/key")
    assert missing.status_code == 404
    assert missing.json()["code"] == "no_report_signed"
    assert not report_settings().statement_key_path.exists()  # a GET makes none

    report_generate(report_id=Report.objects.get(evaluation=passed).pk)
    response = api().get("/api/v1/reports/key")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-pem-file"
    key = load_private_key(report_settings().statement_key_path, create=False)
    assert response.content == key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
