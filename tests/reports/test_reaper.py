"""The report reaper (beat): a report whose worker was lost mid-render is queued
again and sent, up to its attempts, then failed with a reason; a queued report
whose message was lost is sent again; a report still within its lease, or done,
is left alone."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.models import AuditEvent
from gates.models import Evaluation, Report
from gates.services import reports as service
from gates.services.reports import (
    RENDER_LEASE,
    REPORT_MAX_ATTEMPTS,
    report_generate,
    reports_reap,
)
from gates.tasks import reports_reap_task

pytestmark = pytest.mark.django_db
S = Report.Status


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The report ids the reaper sends to the rendering task."""
    ids: list[int] = []
    monkeypatch.setattr(service, "_generate_send", ids.append)
    return ids


def _lost_worker(report: Report, monkeypatch: pytest.MonkeyPatch) -> Report:
    """Claim the report the way a worker does, then lose that worker (its
    rendering never ends)."""

    class WorkerKilled(BaseException):  # not an Exception: nothing catches it
        pass

    def killed(claimed: Report) -> Any:
        raise WorkerKilled

    with monkeypatch.context() as patch:
        patch.setattr(service, "_produce", killed)
        with pytest.raises(WorkerKilled):
            report_generate(report_id=report.pk)
    report.refresh_from_db()
    assert report.status == S.RENDERING
    return report


def _actions(report: Report) -> list[str]:
    rows = AuditEvent.objects.filter(
        target_id=str(report.pk), action__startswith="report."
    )
    return list(rows.order_by("id").values_list("action", flat=True))


def test_a_report_within_its_lease_is_left_alone(
    passed: Evaluation,
    clock: Any,
    sent: list[int],
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    report = _lost_worker(Report.objects.get(evaluation=passed), monkeypatch)
    clock.advance(seconds=RENDER_LEASE.total_seconds() - 5)

    with django_capture_on_commit_callbacks(execute=True):
        outcome = reports_reap()

    assert (outcome.requeued, outcome.failed, outcome.resent) == (0, 0, 0)
    report.refresh_from_db()
    assert report.status == S.RENDERING
    assert sent == []


def test_a_lost_worker_is_queued_again_then_failed_after_its_attempts(
    passed: Evaluation,
    clock: Any,
    sent: list[int],
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    report = Report.objects.get(evaluation=passed)
    for attempt in range(1, REPORT_MAX_ATTEMPTS + 1):
        report = _lost_worker(report, monkeypatch)
        assert report.attempts == attempt
        clock.advance(seconds=RENDER_LEASE.total_seconds() + 1)
        with django_capture_on_commit_callbacks(execute=True):
            outcome = reports_reap()
        report.refresh_from_db()
        if attempt < REPORT_MAX_ATTEMPTS:
            assert outcome.requeued == 1
            assert report.status == S.QUEUED
            assert report.progress_step == "Queued again: worker lost"
            assert sent[-1] == report.pk  # sent to a worker again
        else:
            assert outcome.failed == 1
            assert report.status == S.FAILED

    assert report.error == (
        f"The worker rendering the report stopped {REPORT_MAX_ATTEMPTS} times "
        "before it was done."
    )
    assert _actions(report) == [
        "report.requested",
        *["report.rendering", "report.queued"] * (REPORT_MAX_ATTEMPTS - 1),
        "report.rendering",
        "report.failed",
    ]
    requeued = AuditEvent.objects.filter(
        target_id=str(report.pk), action="report.queued"
    ).first()
    assert requeued is not None
    assert requeued.data["reason"] == "worker_lost"


def test_a_queued_report_whose_message_was_lost_is_sent_again(
    passed: Evaluation,
    clock: Any,
    sent: list[int],
    django_capture_on_commit_callbacks: Any,
) -> None:
    report = Report.objects.get(evaluation=passed)  # requested, never sent
    with django_capture_on_commit_callbacks(execute=True):
        assert reports_reap().resent == 0  # too young: its message may be on its way
    clock.advance(seconds=RENDER_LEASE.total_seconds() + 1)

    with django_capture_on_commit_callbacks(execute=True):
        result = reports_reap_task.apply().get()

    assert result == {"requeued": 0, "failed": 0, "resent": 1}
    assert sent == [report.pk]
    report.refresh_from_db()
    assert report.status == S.QUEUED
    assert _actions(report) == ["report.requested"]  # sending is no state change


def test_failed_and_ready_reports_are_never_reaped(
    passed: Evaluation, clock: Any, sent: list[int]
) -> None:
    report = Report.objects.get(evaluation=passed)
    Report.objects.filter(pk=report.pk).update(status=S.FAILED, error="x")
    clock.advance(days=1)

    outcome = reports_reap()

    assert (outcome.requeued, outcome.failed, outcome.resent) == (0, 0, 0)
    assert sent == []
