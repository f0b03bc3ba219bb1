"""Idempotent delivery: a run is claimed once per attempt, whatever the number
of deliveries of its task."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.models import LabHost, LabPool, Run
from benchmarks.services.pools import host_register
from benchmarks.services.runs import run_claim, run_report
from tests.benchmarks.runner.support import runs_of, start, worker

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(bundle: Any, pool: LabPool, labops: Any) -> Run:
    return runs_of(start(bundle, pool, labops))[0]


@pytest.fixture
def host(pool: LabPool) -> LabHost:
    return host_register(pool=pool, worker=worker())


def test_claim_takes_a_queued_run_once(run: Run, host: LabHost) -> None:
    first = run_claim(run_id=run.pk, attempt=1, host=host)
    second = run_claim(run_id=run.pk, attempt=1, host=host)

    assert first is not None
    assert (first.state, first.host, first.worker_name) == (
        "preparing",
        host,
        "w1@lab-host",
    )
    assert second is None


def test_claim_refuses_another_attempt(run: Run, host: LabHost) -> None:
    assert run_claim(run_id=run.pk, attempt=2, host=host) is None
    assert Run.objects.get(pk=run.pk).state == Run.State.QUEUED


def test_claim_refuses_a_cancelled_run(run: Run, host: LabHost) -> None:
    Run.objects.filter(pk=run.pk).update(state=Run.State.CANCELLED)

    assert run_claim(run_id=run.pk, attempt=1, host=host) is None


def test_report_is_refused_once_cancellation_is_requested(
    run: Run, host: LabHost, labops: Any
) -> None:
    from benchmarks.services.runs import run_cancel

    claimed = run_claim(run_id=run.pk, attempt=1, host=host)
    assert run_report(run_id=run.pk, attempt=1, progress=0.5, log_tail="a")
    run_cancel(run=claimed, actor=labops)

    assert not run_report(run_id=run.pk, attempt=1, progress=0.8)
    assert Run.objects.get(pk=run.pk).progress == 0.5


def test_report_clamps_progress(run: Run, host: LabHost) -> None:
    run_claim(run_id=run.pk, attempt=1, host=host)

    run_report(run_id=run.pk, attempt=1, progress=7.0)

    assert Run.objects.get(pk=run.pk).progress == 1.0
