"""The gates app's Celery tasks: thin, by id, idempotent."""

from __future__ import annotations

from celery import shared_task

from benchmarks.models import Campaign
from gates.services.obligations import obligations_expire
from gates.services.runs import gate_campaign_finished


@shared_task(name="gates.expire_obligations", soft_time_limit=300)
def obligations_expire_task() -> int:
    """The beat sweep (``CELERY_BEAT_SCHEDULE``, hourly): persist the expiry of
    every re-test obligation past its deadline (a breach); idempotent."""
    return obligations_expire()


@shared_task(name="gates.campaign_finished", soft_time_limit=600)
def gate_campaign_finished_task(campaign_id: int) -> int:
    """Evaluate the gates a finished campaign was run for (idempotent); how many
    evaluations were made."""
    campaign = Campaign.objects.filter(pk=campaign_id).first()
    if campaign is None:
        return 0
    return len(gate_campaign_finished(campaign=campaign))


@shared_task(name="gates.report_generate", soft_time_limit=300)
def report_generate_task(report_id: int) -> str:
    """Render, sign and deposit a queued signed report (a redelivered message
    finds it claimed and does nothing); never retried by itself: a failed
    report says why, and a user may request it again. Its status after."""
    from gates.services.reports import report_generate

    report = report_generate(report_id=report_id)
    return report.status if report is not None else "missing"


@shared_task(name="gates.reap_reports", soft_time_limit=120)
def reports_reap_task() -> dict[str, int]:
    """The beat sweep (every minute): reports whose worker or message was lost
    are queued or sent again, or failed after their attempts."""
    from gates.services.reports import reports_reap

    outcome = reports_reap()
    return {
        "requeued": outcome.requeued,
        "failed": outcome.failed,
        "resent": outcome.resent,
    }
