"""Celery tasks of the artifacts app: thin wrappers over services."""

from __future__ import annotations

from celery import shared_task

from artifacts.models import FixityRun
from artifacts.services.fixity import fixity_run

FIXITY_TIME_LIMIT_S = 6 * 3600  # hashing a large store takes a while


@shared_task(name="artifacts.escrow_verify", soft_time_limit=FIXITY_TIME_LIMIT_S)
def escrow_verify_task() -> int:
    """The beat's fixity check (``CELERY_BEAT_SCHEDULE``, daily by default):
    records a run like ``manage.py escrow_verify``; its number of findings.
    Runs are independent, so a repeated delivery only checks once more."""
    return fixity_run(trigger=FixityRun.Trigger.SCHEDULE).findings_count
