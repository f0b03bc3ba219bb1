"""The product's Celery application with a fast beat schedule, for the fault tests:
``celery -A tests.faults.beat_app beat``. The reaper and the checkpoint tick every
second (30 s and 60 s in config/settings.py), so that a tick after beat's restart
shows within a test's seconds; the tasks are the product's own."""

from __future__ import annotations

from config.celery import app

app.conf.update(
    beat_schedule={
        "benchmarks-reaper": {"task": "benchmarks.reap_runs", "schedule": 1.0},
        "log-checkpoint": {"task": "artifacts.checkpoint_publish", "schedule": 1.0},
    }
)

__all__ = ["app"]
