"""Celery tasks of the runner.

Tasks take ids and call services. A run is not executed here: the message
``benchmarks.execute_run`` goes to the run's pool queue (``pool.<name>``) and the
pool's lab agents (``reprogate_agent``, the embedded default's included) execute
it through the runner API (``services.remote``)."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="benchmarks.reap_runs", soft_time_limit=120, ignore_result=True)
def reap_runs_task() -> dict[str, list[int]]:
    """The beat sweep: re-queue or fail runs whose worker is gone."""
    from benchmarks.services.reaper import run_reap

    return run_reap().as_dict()
