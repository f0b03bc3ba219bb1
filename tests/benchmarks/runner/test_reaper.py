"""The reaper: a run whose worker went silent is re-queued once, then failed
with the reason; an overdue one is failed; a live one is left alone."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.models import AuditEvent
from benchmarks.models import Campaign, LabPool, Run
from benchmarks.services.pools import host_register
from benchmarks.services.reaper import run_reap
from benchmarks.services.runs import run_cancel, run_claim, run_report
from tests.benchmarks.runner.support import runs_of, start, worker

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign(bundle: Any, pool: LabPool, labops: Any) -> Campaign:
    return start(bundle, pool, labops)


@pytest.fixture
def claimed(campaign: Campaign, pool: LabPool, clock: Any) -> Run:
    run = runs_of(campaign)[0]
    host = host_register(pool=pool, worker=worker())
    claimed = run_claim(run_id=run.pk, attempt=1, host=host)
    assert claimed is not None
    return claimed


def test_reaper_leaves_a_reporting_run_alone(claimed: Run, clock: Any) -> None:
    clock.advance(seconds=100)
    run_report(run_id=claimed.pk, attempt=1, progress=0.3)
    clock.advance(seconds=100)

    report = run_reap()

    assert report.as_dict() == {
        "requeued": [],
        "failed": [],
        "cancelled": [],
        "redispatched": [],
    }
    assert Run.objects.get(pk=claimed.pk).state == Run.State.PREPARING


def test_reaper_requeues_a_run_whose_worker_went_silent(
    claimed: Run,
    clock: Any,
    sent_tasks: list[dict[str, Any]],
    django_capture_on_commit_callbacks: Any,
) -> None:
    clock.advance(seconds=121)

    with django_capture_on_commit_callbacks(execute=True):
        report = run_reap()

    run = Run.objects.get(pk=claimed.pk)
    assert report.requeued == [run.pk]
    assert (run.state, run.attempt, run.worker_name, run.host) == (
        "queued",
        2,
        "",
        None,
    )
    assert "w1@lab-host stopped reporting" in run.reason
    assert sent_tasks == [
        {
            "args": [run.pk, 2],
            "queue": "pool.gpu-a",
            "soft_time_limit": sent_tasks[0]["soft_time_limit"],
            "time_limit": sent_tasks[0]["time_limit"],
            "ignore_result": True,
        }
    ]
    event = AuditEvent.objects.filter(action="run.transitioned").first()
    assert event.data["previous"] == {"worker": "w1@lab-host", "attempt": 1}


def test_reaper_fails_a_silent_run_without_attempts_left(
    claimed: Run, clock: Any, settings: Any
) -> None:
    settings.RUNNER_MAX_ATTEMPTS = 1
    clock.advance(seconds=121)

    report = run_reap()

    run = Run.objects.get(pk=claimed.pk)
    assert report.failed == [run.pk]
    assert (run.state, run.stop_reason) == (Run.State.FAILED, "worker_lost")
    assert "no attempt left" in run.reason


def test_old_worker_cannot_touch_a_requeued_run(claimed: Run, clock: Any) -> None:
    clock.advance(seconds=121)
    run_reap()

    still_mine = run_report(run_id=claimed.pk, attempt=1, progress=0.9)

    assert still_mine is False
    assert Run.objects.get(pk=claimed.pk).progress == 0.0


def test_reaper_cancels_a_silent_run_whose_cancellation_was_pending(
    claimed: Run, clock: Any, labops: Any
) -> None:
    run_cancel(run=claimed, actor=labops)
    clock.advance(seconds=121)

    report = run_reap()

    assert report.cancelled == [claimed.pk]
    assert Run.objects.get(pk=claimed.pk).state == Run.State.CANCELLED


def test_reaper_fails_an_overdue_run_even_if_its_worker_beats(
    claimed: Run, clock: Any
) -> None:
    limit = claimed.wall_limit_s + 300
    for _ in range(int(limit / 100) + 1):
        clock.advance(seconds=100)
        run_report(run_id=claimed.pk, attempt=1)

    report = run_reap()

    run = Run.objects.get(pk=claimed.pk)
    assert report.failed == [run.pk]
    assert (run.state, run.stop_reason) == (Run.State.FAILED, "worker_unresponsive")
    assert run.attempt == 1


def test_reaper_ignores_queued_and_finished_runs(
    campaign: Campaign, clock: Any
) -> None:
    clock.advance(days=2)

    assert run_reap().as_dict() == {  # no host in the pool: nobody to send to
        "requeued": [],
        "failed": [],
        "cancelled": [],
        "redispatched": [],
    }


# --- queued runs whose message went missing ------------------------------------------


def test_reaper_resends_a_run_left_queued_beside_an_idle_host(
    campaign: Campaign,
    pool: LabPool,
    clock: Any,
    sent_tasks: list[dict[str, Any]],
    django_capture_on_commit_callbacks: Any,
) -> None:
    waiting = runs_of(campaign)
    clock.advance(seconds=301)
    host_register(pool=pool, worker=worker())  # online, running nothing

    with django_capture_on_commit_callbacks(execute=True):
        report = run_reap()

    assert report.redispatched == [run.pk for run in waiting]
    assert [task["args"] for task in sent_tasks] == [[run.pk, 1] for run in waiting]
    assert {task["queue"] for task in sent_tasks} == {"pool.gpu-a"}
    first = Run.objects.get(pk=waiting[0].pk)
    assert (first.state, first.attempt) == (Run.State.QUEUED, 1)
    events = AuditEvent.objects.filter(action="run.redispatched")
    assert events.count() == len(waiting)
    assert "sent again" in events.first().data["reason"]

    assert run_reap().redispatched == []  # just sent: not again yet


def test_a_resent_run_is_still_claimed_once(
    campaign: Campaign, pool: LabPool, clock: Any
) -> None:
    run = runs_of(campaign)[0]
    clock.advance(seconds=301)
    host = host_register(pool=pool, worker=worker())
    run_reap()

    first = run_claim(run_id=run.pk, attempt=1, host=host)
    second = run_claim(run_id=run.pk, attempt=1, host=host)  # the other message

    assert first is not None
    assert second is None


def test_reaper_does_not_resend_too_early(
    campaign: Campaign, pool: LabPool, clock: Any
) -> None:
    clock.advance(seconds=299)
    host_register(pool=pool, worker=worker())

    assert run_reap().redispatched == []


def test_reaper_does_not_resend_while_every_host_is_busy(
    campaign: Campaign, pool: LabPool, clock: Any
) -> None:
    busy, *waiting = runs_of(campaign)
    host = host_register(pool=pool, worker=worker())
    assert run_claim(run_id=busy.pk, attempt=1, host=host) is not None
    for _ in range(4):
        clock.advance(seconds=100)
        run_report(run_id=busy.pk, attempt=1)

    report = run_reap()

    assert waiting
    assert report.redispatched == []


def test_reaper_does_not_resend_to_a_pool_without_online_hosts(
    campaign: Campaign, pool: LabPool, clock: Any
) -> None:
    host_register(pool=pool, worker=worker())
    clock.advance(seconds=301)  # the host went silent meanwhile: lost

    assert run_reap().redispatched == []
