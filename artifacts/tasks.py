"""Celery tasks of the artifacts app: thin wrappers over services."""

from __future__ import annotations

from celery import shared_task

from artifacts.models import FixityRun
from artifacts.services.blob_sweep import blob_sweep
from artifacts.services.fixity.run import fixity_run
from artifacts.services.transparency import checkpoint_publish_if_grown

FIXITY_TIME_LIMIT_S = 6 * 3600  # hashing a large store takes a while
SWEEP_TIME_LIMIT_S = 3600  # listing a large store takes a while


@shared_task(name="artifacts.escrow_verify", soft_time_limit=FIXITY_TIME_LIMIT_S)
def escrow_verify_task() -> int:
    """The beat's fixity check (``CELERY_BEAT_SCHEDULE``, daily by default):
    records a run like ``manage.py escrow_verify``; its number of findings.
    Runs are independent, so a repeated delivery only checks once more."""
    return fixity_run(trigger=FixityRun.Trigger.SCHEDULE).findings_count


@shared_task(name="artifacts.checkpoint_publish", soft_time_limit=60)
def checkpoint_publish_task() -> int | None:
    """The beat's checkpoint (every minute): signs one if the log grew since the
    latest (a deposit's own publication failed or is still to come); the new
    size, or None if there was nothing to sign."""
    checkpoint = checkpoint_publish_if_grown()
    return None if checkpoint is None else checkpoint.size


@shared_task(name="artifacts.blob_sweep", soft_time_limit=SWEEP_TIME_LIMIT_S)
def blob_sweep_task() -> int:
    """The beat's blob sweep (daily): deletes the objects under ``blobs/`` no row
    refers to, past the grace period; how many. A repeated delivery finds
    nothing more to delete."""
    return len(blob_sweep().deleted)
