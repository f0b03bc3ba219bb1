from __future__ import annotations

from celery import shared_task

from procurement.services.deadlines import rfp_apply_all_deadlines


@shared_task(name="procurement.apply_deadlines", soft_time_limit=300)
def rfp_apply_deadlines_task() -> int:
    """The beat sweep (``CELERY_BEAT_SCHEDULE``, every minute): close every RFP
    whose deadline passed; see ``procurement.services.deadlines``. Idempotent."""
    return rfp_apply_all_deadlines()
