"""The reaper (a beat task, ``benchmarks.reap_runs``): no run stays active for
ever. An active run is reaped when

- its worker stopped reporting (no sign of life for ``RUNNER_LOST_AFTER_SECONDS``:
  the worker was killed, its host crashed or lost the network): it is re-queued
  as a new attempt while attempts remain (``RUNNER_MAX_ATTEMPTS``), else failed
  with the reason; a run whose cancellation was pending is cancelled instead;
- or it was claimed longer ago than its wall-clock limit plus
  ``RUNNER_WALL_GRACE_SECONDS`` although its worker still reports (a hung
  worker): failed, not retried (the hung worker may still be running it).

A queued run is sent again (``run_redispatch``) when it is still waiting
``RUNNER_REDISPATCH_AFTER_SECONDS`` after its message went out although its pool
has an online host with no run: the message was lost (a broker restarted before
delivering it) or a busy worker holds it prefetched. A second delivery of the same
attempt is a no-op (``run_claim``), so a late first message does no harm.

A lab host's agent that says hello again is a new agent process (an agent says
hello once, before it claims anything): the runs its host still holds are given up
at once in the same way (``runs_reap_restarted``), not after
``RUNNER_LOST_AFTER_SECONDS`` of silence.

A remote attempt given up (re-queued, failed or cancelled) loses its uploaded
outputs (``benchmarks.services.uploads``) once the decision commits.

Each decision is re-checked under the run's lock, so a worker that reported in
the meantime keeps its run."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Final

from django.db import transaction

from accounts.selectors import clock
from benchmarks import conf
from benchmarks.models import LabHost, Run
from benchmarks.models.campaigns import ACTIVE_STATES
from benchmarks.selectors.pools import hosts_online
from benchmarks.services.runs import (
    run_harness_seconds,
    run_overdue_at,
    run_redispatch,
    run_requeue,
    run_transition,
)
from benchmarks.services.uploads import attempts_uploads_remove_on_commit

logger = logging.getLogger(__name__)


@dataclass
class ReapReport:
    requeued: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    cancelled: list[int] = field(default_factory=list)
    redispatched: list[int] = field(default_factory=list)

    def as_dict(self) -> dict[str, list[int]]:
        return {
            "requeued": self.requeued,
            "failed": self.failed,
            "cancelled": self.cancelled,
            "redispatched": self.redispatched,
        }


def _last_sign_of_life(run: Run) -> datetime | None:
    return run.heartbeat_at or run.claimed_at


def _verdict(run: Run, now: datetime) -> str:
    """``lost``, ``overdue`` or ``""`` (leave it alone)."""
    seen = _last_sign_of_life(run)
    if seen is None or seen < now - timedelta(seconds=conf.lost_after_seconds()):
        return "lost"
    overdue = run_overdue_at(run)
    if overdue is not None and overdue < now:
        return "overdue"
    return ""


def run_reap() -> ReapReport:
    report = ReapReport()
    now = clock.now()
    for run_id in Run.objects.filter(state__in=ACTIVE_STATES).values_list(
        "pk", flat=True
    ):
        try:
            outcome = _reap_one(run_id, now)
        except Exception:  # one bad row must not keep the others alive for ever
            logger.exception("reaping run %s failed", run_id)
            continue
        if outcome:
            getattr(report, outcome).append(run_id)
    _redispatch_waiting(now, report)
    return report


def _waiting_beside_idle_hosts(sent_before: datetime, now: datetime) -> list[int]:
    """Queued runs sent before ``sent_before`` to a pool with an idle online host."""
    busy = Run.objects.filter(state__in=ACTIVE_STATES, host__isnull=False)
    idle = hosts_online(now).exclude(pk__in=busy.values("host"))
    return list(
        Run.objects.filter(
            state=Run.State.QUEUED,
            dispatched_at__lt=sent_before,
            campaign__pool__in=idle.values("pool"),
        )
        .order_by("dispatched_at", "pk")
        .values_list("pk", flat=True)
    )


def _redispatch_waiting(now: datetime, report: ReapReport) -> None:
    after = conf.redispatch_after_seconds()
    sent_before = now - timedelta(seconds=after)
    for run_id in _waiting_beside_idle_hosts(sent_before, now):
        reason = (
            f"Still queued {after:.0f} s after it was sent while a host of its pool "
            "had nothing to do: sent again."
        )
        try:
            if run_redispatch(run_id=run_id, sent_before=sent_before, reason=reason):
                report.redispatched.append(run_id)
        except Exception:  # one bad row must not keep the others waiting
            logger.exception("re-sending run %s failed", run_id)


@transaction.atomic
def _reap_one(run_id: int, now: datetime) -> str:
    run = Run.objects.select_for_update().get(pk=run_id)
    if run.state not in ACTIVE_STATES:
        return ""
    verdict = _verdict(run, now)
    if not verdict:
        return ""
    seen = _last_sign_of_life(run)
    when = f"{seen:%Y-%m-%d %H:%M:%S} UTC" if seen else "never"
    worker = run.worker_name or "the worker"
    if run.cancel_requested_at is not None:
        reason = f"Cancelled; {worker} was lost before it confirmed (last seen {when})."
        _end(run, Run.State.CANCELLED, "cancelled", reason)
        return "cancelled"
    if verdict == "overdue":
        limit = run_harness_seconds(run)
        reason = (
            f"No result {limit + conf.wall_grace_seconds():.0f} s after "
            f"{worker} claimed it (wall-clock limit {limit} s plus grace), "
            f"although it still reported at {when}: given up, not retried."
        )
        _end(run, Run.State.FAILED, "worker_unresponsive", reason)
        return "failed"
    return _retry_or_fail(run, f"{worker} stopped reporting (last seen {when})")


def _retry_or_fail(run: Run, what: str) -> str:
    """Another attempt for a run whose worker is gone (``what`` says how), while
    attempts remain; else the run fails."""
    if run.attempt < conf.max_attempts():
        reason = (
            f"{what} during attempt {run.attempt}; re-queued as attempt "
            f"{run.attempt + 1}."
        )
        run_requeue(run=run, reason=reason)
        return "requeued"
    last = conf.max_attempts()
    reason = f"{what} during attempt {run.attempt} of {last}; no attempt left."
    _end(run, Run.State.FAILED, "worker_lost", reason)
    return "failed"


# A hello comes before the new process claims anything; a run still parsing is
# the server's own work (the old agent's finish, under way)
_HELD_BY_THE_AGENT: Final = (Run.State.PREPARING, Run.State.RUNNING)


def runs_reap_restarted(*, host: LabHost) -> None:
    """The agent of ``host`` said hello again: a new process, which runs none of
    the runs the host holds. Each is given up now as a lost worker's is (cancelled
    if its cancellation was pending, else re-queued while attempts remain, else
    failed), one transition and audit row each. Runs in the caller's transaction
    (the hello's)."""
    held = Run.objects.select_for_update().filter(
        host=host, state__in=_HELD_BY_THE_AGENT
    )
    for run in held.order_by("pk"):
        worker = run.worker_name or host.worker_name
        if run.cancel_requested_at is not None:
            reason = f"Cancelled; {worker} started again before it confirmed."
            _end(run, Run.State.CANCELLED, "cancelled", reason)
            outcome = "cancelled"
        else:
            what = f"{worker} started again (a new agent process)"
            outcome = _retry_or_fail(run, what)
        logger.warning("run %s: %s started again; %s", run.pk, worker, outcome)


def _end(run: Run, to: str, stop_reason: str, reason: str) -> None:
    run_transition(run=run, to=to, reason=reason, fields={"stop_reason": stop_reason})
    attempts_uploads_remove_on_commit([(run.pk, run.attempt)])
