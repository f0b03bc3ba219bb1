"""The gates app's Celery tasks: thin, by id, idempotent; the receiver of
benchmarks' ``campaign_finished``, which queues the verdict path's task; and the
worker-process start that warms up the report renderers."""

from __future__ import annotations

import threading
from typing import Any

from celery import current_app, shared_task
from celery.signals import worker_process_init

from benchmarks.models import Campaign
from gates.conf import report_warm_up_queue
from gates.selectors.runs import campaign_awaits_judging
from gates.services.obligations import obligations_expire
from gates.services.pipeline import campaign_ended_judge
from gates.services.reports import GENERATE_TASK, report_generate, reports_reap


@shared_task(name="gates.expire_obligations", soft_time_limit=300)
def obligations_expire_task() -> int:
    """The beat sweep (``CELERY_BEAT_SCHEDULE``, hourly): persist the expiry of
    every re-test obligation past its deadline (a breach); idempotent."""
    return obligations_expire()


@shared_task(name="gates.campaign_finished", soft_time_limit=600)
def campaign_ended_judge_task(campaign_id: int) -> int:
    """The verdict path of an ended campaign (``campaign_ended_judge``,
    idempotent); how many evaluations were made."""
    campaign = Campaign.objects.filter(pk=campaign_id).first()
    if campaign is None:
        return 0
    return len(campaign_ended_judge(campaign=campaign))


def campaign_finished_received(sender: Any, campaign_id: int, **kwargs: Any) -> None:
    """benchmarks' ``campaign_finished`` (sent after commit already; connected in
    ``GatesConfig.ready()``): queue the verdict path when the campaign was run
    for a gate not judged yet. Nothing else."""
    if campaign_awaits_judging(campaign_id):
        campaign_ended_judge_task.delay(campaign_id)


@shared_task(name=GENERATE_TASK, soft_time_limit=300)
def report_generate_task(report_id: int) -> str:
    """Render, sign and deposit a queued signed report (a redelivered message
    finds it claimed and does nothing); never retried by itself: a failed
    report says why, and a user may request it again. Its status after."""
    report = report_generate(report_id=report_id)
    return report.status if report is not None else "missing"


@shared_task(name="gates.reap_reports", soft_time_limit=120)
def reports_reap_task() -> dict[str, int]:
    """The beat sweep (every minute): reports whose worker or message was lost
    are queued or sent again, or failed after their attempts."""
    outcome = reports_reap()
    return {
        "requeued": outcome.requeued,
        "failed": outcome.failed,
        "resent": outcome.resent,
    }


@worker_process_init.connect
def report_renderers_warm_up_received(**kwargs: Any) -> None:
    """Each process of a worker that takes the default queue (where signed reports
    are rendered) warms up the report renderers in a background thread
    (``renderers_warm_up``: Chromium for the charts, WeasyPrint's fonts), so its
    first report does not wait for them; the process takes tasks meanwhile, and a
    failure (no Chromium) is a warning. ``REPROGATE_REPORT_WARM_UP=False`` turns
    it off; workers of lab pools' queues alone never do it."""
    queue = report_warm_up_queue()
    if queue is None or queue not in current_app.amqp.queues.consume_from:
        return
    from gates.services.report_pdf import renderers_warm_up

    threading.Thread(
        target=renderers_warm_up, name="report-warm-up", daemon=True
    ).start()
