"""Run state changes. ``run_transition`` is the one place a run's state moves
(``RUN_TRANSITIONS``), with one audit row in the buyer's trail; the verbs below
check their own preconditions and call it.

A worker owns a run through its *attempt*: it claims the run with a conditional
UPDATE on state and attempt (``run_claim``), and every later write names that
attempt, so that a re-queued run (attempt + 1) can no longer be changed by a
worker that was given up for lost (``StaleAttempt``)."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from celery import current_app
from django.db import transaction
from kombu.exceptions import OperationalError

from accounts.selectors import clock
from accounts.services.actor import Actor, person
from accounts.services.audit import audit_record
from accounts.services.transitions import transition
from benchmarks import conf
from benchmarks.lib.queues import EXECUTE_RUN, host_queue
from benchmarks.models import RUN_TRANSITIONS, LabHost, LabPool, Run
from benchmarks.models.campaigns import ACTIVE_STATES
from benchmarks.selectors.routing import run_routes
from benchmarks.services.common import RunnerConflict, StaleAttempt
from benchmarks.services.uploads import attempts_uploads_remove_on_commit

logger = logging.getLogger(__name__)

FINAL = frozenset(state for state, moves in RUN_TRANSITIONS.items() if not moves)


def _audit(run: Run, actor: Actor, action: str, data: dict[str, Any]) -> None:
    audit_record(
        actor=actor,
        action=action,
        target=run,
        organisation=run.campaign.rfp.buyer_organisation,
        data={**_facts(run), **data},
    )


def _facts(run: Run) -> dict[str, Any]:
    """What every audit row of a run names."""
    campaign = run.campaign
    return {
        "campaign": str(campaign.public_id),
        "rfp": campaign.rfp.reference,
        "scenario": run.scenario_name,
        "repetition": run.repetition,
        "attempt": run.attempt,
    }


def _locked(run_id: int) -> Run:
    return (
        Run.objects.select_for_update(of=("self",))
        .select_related("campaign__rfp__buyer_organisation", "campaign__pool")
        .get(pk=run_id)
    )


@transaction.atomic
def run_transition(
    *,
    run: Run,
    to: str,
    actor: Actor = None,
    action: str = "run.transitioned",
    attempt: int | None = None,
    reason: str = "",
    fields: dict[str, Any] | None = None,
    data: dict[str, Any] | None = None,
) -> Run:
    """Move the run to ``to`` (setting ``fields`` too) and write the action's
    one audit row (``action``, with ``data``). ``attempt``: the worker's
    attempt; a run that moved on to another raises ``StaleAttempt``."""
    run = _locked(run.pk)
    if attempt is not None and run.attempt != attempt:
        raise StaleAttempt(run.pk, attempt, run.attempt)
    moved = dict(fields or {})
    if to in FINAL:
        moved["finished_at"] = clock.now()
    if reason:
        moved["reason"] = reason[:4000]
    for name, value in moved.items():  # the row names the run as it becomes
        setattr(run, name, value)
    run = transition(
        run,
        to,
        actor=actor,
        table=RUN_TRANSITIONS,
        entity="run",
        action=action,
        field="state",
        fields=moved,
        organisation=run.campaign.rfp.buyer_organisation,
        data={**_facts(run), "reason": reason, **(data or {})},
    )
    if to in FINAL:
        _announce_when_campaign_finished(run.campaign_id)
    return run


def _announce_when_campaign_finished(campaign_id: int) -> None:
    """After commit: ``campaign_finished`` if this was the campaign's last run."""
    from benchmarks.services.receivers import campaign_finished_send_if_done

    transaction.on_commit(
        lambda: campaign_finished_send_if_done(campaign_id), robust=True
    )


@transaction.atomic
def run_claim(*, run_id: int, attempt: int, host: LabHost) -> Run | None:
    """Take a queued run for ``host``: None if it is not queued with this
    attempt any more (a redelivered or stale task), so it never runs twice;
    ``RunnerConflict`` (nothing changes) if its campaign is bound to hosts
    (``Campaign.hosts``) that do not include this one.
    The run's row lock orders claims: the second finds it preparing."""
    run = (
        Run.objects.select_for_update(of=("self",))
        .select_related("campaign")
        .filter(pk=run_id)
        .first()
    )
    if run is None or run.attempt != attempt or run.state != Run.State.QUEUED:
        return None
    bound = run.campaign.hosts
    if bound and host.worker_name not in bound:
        raise RunnerConflict(
            f"The run's campaign runs only on {', '.join(bound)}, not on "
            f"{host.worker_name}.",
            code="host_not_named",
        )
    now = clock.now()
    policy = LabPool.objects.filter(pk=host.pool_id).values_list("policy", flat=True)
    return run_transition(
        run=run,
        to=Run.State.PREPARING,
        attempt=attempt,
        fields={
            "policy": policy.first() or {},  # the policy it runs under
            "host": host,
            "worker_name": host.worker_name,
            "claimed_at": now,
            "heartbeat_at": now,
            "progress": 0.0,
            "reason": "",
        },
        data={"worker": host.worker_name, "pool": host.pool.name},
    )


def run_report(
    *,
    run_id: int,
    attempt: int,
    progress: float | None = None,
    log_tail: str | None = None,
) -> bool:
    """The worker's sign of life, with progress and log tail when they changed.
    False when the run must stop: cancelled, re-queued or finished meanwhile."""
    fields: dict[str, Any] = {"heartbeat_at": clock.now()}
    if progress is not None:
        fields["progress"] = min(1.0, max(0.0, float(progress)))
    if log_tail is not None:
        fields["log_tail"] = log_tail
    return bool(
        Run.objects.filter(
            pk=run_id,
            attempt=attempt,
            state__in=ACTIVE_STATES,
            cancel_requested_at__isnull=True,
        ).update(**fields)
    )


@transaction.atomic
def run_cancel(*, run: Run, actor: Actor) -> Run:
    """A queued run is cancelled at once; an active one is asked to stop (its
    worker kills the harness's process group and records the cancellation)."""
    run = _locked(run.pk)
    if run.state == Run.State.QUEUED:
        by = actor.get_username() if actor is not None else "the runner"
        return run_transition(
            run=run,
            to=Run.State.CANCELLED,
            actor=actor,
            reason=f"Cancelled by {by} before it started.",
            fields={"stop_reason": "cancelled"},
        )
    if run.state in FINAL:
        raise RunnerConflict(
            f"The run has {run.get_state_display().lower()} already.",
            code="run_finished",
        )
    if run.cancel_requested_at is not None:
        raise RunnerConflict("The run is being cancelled already.", code="cancelling")
    run.cancel_requested_at = clock.now()
    run.cancel_requested_by = person(actor)
    run.save(update_fields=["cancel_requested_at", "cancel_requested_by", "updated_at"])
    _audit(run, actor, "run.cancel_requested", {"state": run.state})
    return run


@transaction.atomic
def run_requeue(*, run: Run, reason: str, actor: Actor = None) -> Run:
    """Give an active run another attempt (the reaper, after its worker was
    lost): attempt + 1, back to queued, dispatched again after commit; the
    given-up attempt's uploaded outputs are removed after commit."""
    run = _locked(run.pk)
    previous = {"worker": run.worker_name, "attempt": run.attempt}
    attempts_uploads_remove_on_commit([(run.pk, run.attempt)])
    fields = {
        "attempt": run.attempt + 1,
        "progress": 0.0,
        "log_tail": "",
        "host": None,
        "worker_name": "",
        "claimed_at": None,
        "heartbeat_at": None,
        "started_at": None,
        "exit_code": None,
        "stop_reason": "",
        "environment": {},
        "drift": [],
        "isolation": {},
        "cache_dropped": None,
        "cache_note": "",
        "checks": [],
        "output_truncated": False,
    }
    run = run_transition(
        run=run,
        to=Run.State.QUEUED,
        actor=actor,
        reason=reason,
        fields=fields,
        data={"previous": previous},
    )
    run_dispatch(run)
    return run


def run_dispatch(run: Run) -> None:
    runs_dispatch([run])


@transaction.atomic
def run_redispatch(*, run_id: int, sent_before: datetime, reason: str) -> bool:
    """Send a queued run's current attempt again (the reaper, when its message
    was sent before ``sent_before`` and the run is still waiting). False if the
    run moved on meanwhile. Harmless if the first message arrives after all:
    ``run_claim`` lets only one delivery of an attempt take the run."""
    run = _locked(run_id)
    sent = run.dispatched_at
    if run.state != Run.State.QUEUED or (sent is not None and sent >= sent_before):
        return False
    when = f"{sent:%Y-%m-%d %H:%M:%S} UTC" if sent else "never"
    _audit(run, None, "run.redispatched", {"reason": reason, "sent_at": when})
    run_dispatch(run)
    return True


def runs_dispatch(runs: list[Run]) -> None:
    """Send each run's current attempt to its pool's queue once the transaction
    commits (``dispatched_at`` is written in the caller's transaction). With the
    broker down, a run not sent stays queued (logged, no error for the caller)
    until the reaper sends it again (``run_redispatch``).

    A run of a campaign bound to hosts goes to the own queue of one of them
    (``benchmarks.selectors.routing.run_routes``, recorded as ``routed_to``),
    every other run to its pool's queue.

    The message goes by its name (``EXECUTE_RUN``), as the task it names is not
    this module's to import: a lab agent runs it, or the server's runner worker
    (``benchmarks.tasks``), whose tasks call the services that dispatch (the
    reaper re-queues and re-sends)."""
    routes = run_routes(runs)
    now = clock.now()
    for host in {*routes.values(), ""}:
        chosen = [r.pk for r in runs if routes.get(r.pk, "") == host]
        Run.objects.filter(pk__in=chosen).update(dispatched_at=now, routed_to=host)
    grace = int(conf.wall_grace_seconds())
    messages = [
        (
            [run.pk, run.attempt],
            _queue(run, routes.get(run.pk)),
            run.wall_limit_s + grace,
        )
        for run in runs
    ]

    def send() -> None:
        for args, queue, soft in messages:
            try:
                current_app.send_task(
                    EXECUTE_RUN,
                    args=args,
                    queue=queue,
                    soft_time_limit=soft,
                    time_limit=soft + 60,
                    ignore_result=True,
                )
            except (OSError, OperationalError):  # the broker is down: the run stays
                # queued, and the reaper sends it again (``run_redispatch``)
                logger.exception("run %s attempt %s: not sent to %s", *args, queue)

    transaction.on_commit(send)


def run_harness_seconds(run: Run) -> int:
    """The longest its harness may run in all: the wall-clock limit, twice for a
    seed_sensitive scenario (run once more with another seed, ``seed_ignored``)."""
    runs = 2 if run.scenario.get("seed_sensitive") is True else 1
    return run.wall_limit_s * runs


def _queue(run: Run, host: str | None) -> str:
    pool = run.campaign.pool
    return host_queue(pool.name, host) if host else pool.queue


def run_overdue_at(run: Run) -> Any:
    """When a claimed run is reaped even though its worker still beats."""
    if run.claimed_at is None:
        return None
    grace = conf.wall_grace_seconds()
    return run.claimed_at + timedelta(seconds=run_harness_seconds(run) + grace)
