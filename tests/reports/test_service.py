"""The report service without rendering: an evaluation and a recorded promotion
request their report by themselves, a request is idempotent, only recorded
promotions have certificates, the transitions follow the table with one audit row
each, a claimed report is never claimed again, a failure before rendering makes
the report failed with a readable reason (no server path), downloads are audited
in the downloader's side's trail."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from accounts.exceptions import InvalidTransition
from accounts.models import AuditEvent, Organisation
from gates.exceptions import GatesConflict
from gates.lib.signing.pades import PdfSigningError
from gates.lib.signing.pki import ReportKeyError
from gates.models import REPORT_TRANSITIONS, Decision, Evaluation, GatePlan, Report
from gates.services import reports as service
from gates.services.decisions import decision_record
from gates.services.reports import (
    KEYS_MISSING,
    failure_reason,
    report_download_record,
    report_generate,
    report_request,
    report_transition,
)
from tests.gates.support import LAB
from tests.transition_moves import Move

pytestmark = pytest.mark.django_db
S = Report.Status


def _actions(report: Report) -> list[str]:
    rows = AuditEvent.objects.filter(
        target_id=str(report.pk), action__startswith="report."
    )
    return list(rows.order_by("id").values_list("action", flat=True))


def test_an_evaluation_requests_its_report_by_itself(passed: Evaluation) -> None:
    report = Report.objects.get(evaluation=passed)

    assert (report.kind, report.status) == (Report.Kind.EVALUATION, S.QUEUED)
    assert report.requested_by is None
    assert report.rfp_id == passed.rfp_id
    assert report.vendor_organisation_id == passed.vendor_organisation_id
    row = AuditEvent.objects.get(action="report.requested")
    assert row.data["automatic"] is True
    assert row.data["evaluation"] == str(passed.public_id)
    assert row.actor is None


def test_the_task_is_enqueued_after_commit(
    passed: Evaluation,
    buyer: Any,
    django_capture_on_commit_callbacks: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sent: list[int] = []
    monkeypatch.setattr(service, "_generate_send", sent.append)
    with django_capture_on_commit_callbacks(execute=True):
        report = report_request(evaluation=passed, actor=buyer)

    assert sent == [report.pk]


def test_a_request_is_idempotent(passed: Evaluation, buyer: Any) -> None:
    first = Report.objects.get(evaluation=passed)

    again = report_request(evaluation=passed, actor=buyer)

    assert again.pk == first.pk
    assert Report.objects.filter(evaluation=passed).count() == 1
    assert AuditEvent.objects.filter(action="report.requested").count() == 1


def test_a_recorded_promotion_requests_its_certificate(
    promoted: Decision, passed: Evaluation
) -> None:
    certificate = Report.objects.get(kind=Report.Kind.CERTIFICATE)

    assert certificate.decision_id == promoted.pk
    assert certificate.evaluation_id == passed.pk
    assert certificate.status == S.QUEUED
    assert Report.objects.filter(evaluation=passed).count() == 2  # and the report


def test_a_pending_promotion_or_a_hold_has_no_certificate(
    passed: Evaluation, frozen_plan: GatePlan, buyer: Any
) -> None:
    pending = decision_record(
        plan=frozen_plan, gate=LAB, kind="promote", rationale="Go.", actor=buyer
    )
    assert not Report.objects.filter(kind=Report.Kind.CERTIFICATE).exists()

    with pytest.raises(GatesConflict) as refused:
        report_request(evaluation=passed, actor=buyer, decision=pending)

    assert refused.value.code == "not_certifiable"
    assert "waiting for a second sign-off" in refused.value.message
    assert not Report.objects.filter(kind=Report.Kind.CERTIFICATE).exists()


def test_transitions_follow_the_table_with_one_audit_row_each(
    passed: Evaluation,
) -> None:
    report = Report.objects.get(evaluation=passed)

    with pytest.raises(InvalidTransition):
        report_transition(report, S.READY, None)  # queued → ready skips rendering
    report_transition(report, S.FAILED, None, error="x")

    report.refresh_from_db()
    assert report.status == S.FAILED
    assert _actions(report) == ["report.requested", "report.failed"]
    row = AuditEvent.objects.get(action="report.failed")
    assert (row.data["from"], row.data["to"], row.data["error"]) == (
        "queued",
        "failed",
        "x",
    )


PRODUCED = service._Produced(
    pdf=b"%PDF-1.7 canned\n", statement=b"{}", pages=1, timestamped=False,
    signer_fingerprint="0" * 64,
)  # fmt: skip


def _made_ready(report: Report, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rendered by the task (its bytes canned): a ready report is complete."""
    with monkeypatch.context() as patch:
        patch.setattr(service, "_produce", lambda report: PRODUCED)
        service.report_generate(report_id=report.pk)


def _move(report: Report, to: str) -> Report:
    """``to`` through its service: ready is the rendering's end (the deposit's
    row is the move's), the others ``report_transition``."""
    if to == S.READY:
        return service._ready_transition(report, PRODUCED)
    return report_transition(report, to, None)


@pytest.mark.parametrize("to", S.values)
@pytest.mark.parametrize("current", S.values)
def test_report_transition_follows_the_table(
    passed: Evaluation,
    current: str,
    to: str,
    monkeypatch: pytest.MonkeyPatch,
    transition_moves: list[Move],
) -> None:
    report = Report.objects.get(evaluation=passed)
    if current == S.READY:
        _made_ready(report, monkeypatch)
    Report.objects.filter(pk=report.pk).update(status=current)
    transition_moves.clear()
    allowed = to in REPORT_TRANSITIONS[current]
    rows = AuditEvent.objects.count()

    if allowed:
        _move(report, to)
    else:
        with pytest.raises(InvalidTransition):
            _move(report, to)

    report.refresh_from_db()
    assert report.status == (to if allowed else current)
    assert AuditEvent.objects.count() == rows + allowed  # one call, one row
    assert transition_moves == ([Move("gates.report", current, to)] if allowed else [])


def test_a_claimed_report_is_not_claimed_again(
    passed: Evaluation, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A redelivered message finds the report rendering and does nothing."""
    report = Report.objects.get(evaluation=passed)
    produced: list[int] = []

    def hang(claimed: Report) -> Any:
        produced.append(claimed.pk)
        # the message is delivered again while this one renders
        assert report_generate(report_id=claimed.pk).status == S.RENDERING
        raise RuntimeError("stopped")

    monkeypatch.setattr(service, "_produce", hang)

    done = report_generate(report_id=report.pk)

    assert produced == [report.pk]  # rendered once
    assert done is not None
    assert done.status == S.FAILED
    assert done.attempts == 1
    assert _actions(report) == [
        "report.requested",
        "report.rendering",
        "report.failed",
    ]
    assert report_generate(report_id=report.pk).status == S.FAILED  # as it is
    assert report_generate(report_id=10**9) is None


def test_missing_signer_fails_the_report_readably_and_it_can_be_tried_again(
    passed: Evaluation, settings: Any, tmp_path: Path, buyer: Any
) -> None:
    settings.REPROGATE_REPORT_SIGNER = str(tmp_path / "nowhere" / "signer.p12")
    report = Report.objects.get(evaluation=passed)

    failed = report_generate(report_id=report.pk)

    assert failed is not None
    assert failed.status == S.FAILED
    assert failed.error.startswith("The report signing keys could not be loaded")
    assert str(tmp_path) not in failed.error  # never a server path
    assert "Traceback" not in failed.error
    assert failed.finished_at is not None

    again = report_request(evaluation=passed, actor=buyer)

    assert again.pk == report.pk
    assert (again.status, again.error, again.progress_pct) == (S.QUEUED, "", 0)
    assert again.requested_by == buyer
    assert _actions(report)[-1] == "report.queued"
    row = AuditEvent.objects.filter(action="report.queued").get()
    assert row.data["previous_error"] == failed.error


def test_failure_reasons_are_readable() -> None:
    signing = PdfSigningError("the TSA at http://127.0.0.1:9/tsr did not answer")
    assert failure_reason(signing) == (
        "The PDF could not be signed: the TSA at http://127.0.0.1:9/tsr did not answer"
    )
    odd = OSError("cannot open /srv/reprogate/var/keys/x.pem\nline two")
    assert failure_reason(odd) == (
        "Rendering the report failed (OSError): cannot open … line two"
    )
    assert "…" in failure_reason(ValueError("x" * 2000))
    assert len(failure_reason(ValueError("x" * 2000))) < 600


def test_missing_keys_once_a_report_is_ready_name_the_fix(
    passed: Evaluation, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(service, "_signed_reports_exist", lambda: True)

    assert failure_reason(ReportKeyError("no key in /x/y")) == KEYS_MISSING
    assert "restore the report key directory" in KEYS_MISSING


def test_downloads_are_audited_in_the_downloaders_trail(
    passed: Evaluation,
    buyer: Any,
    vendor_a: Any,
    buyer_org: Organisation,
    vendor_a_org: Organisation,
) -> None:
    report = Report.objects.get(evaluation=passed)

    report_download_record(report=report, actor=vendor_a, part="pdf")
    report_download_record(report=report, actor=buyer, part="statement")

    vendor_row, buyer_row = AuditEvent.objects.filter(
        action="report.downloaded"
    ).order_by("id")
    assert vendor_row.organisation == vendor_a_org
    assert (vendor_row.actor, vendor_row.data["part"]) == (vendor_a, "pdf")
    assert buyer_row.organisation == buyer_org
    assert buyer_row.data["part"] == "statement"
    assert buyer_row.data["report"] == str(report.public_id)
    with pytest.raises(ValueError, match="no such part"):
        report_download_record(report=report, actor=buyer, part="zip")
