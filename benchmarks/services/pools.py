"""Lab pools and the hosts that register on them.

A lab host's agent registers on its token's pool when it says hello
(``services.remote.agent_hello``), then beats every ``RUNNER_HEARTBEAT_SECONDS``;
a clean shutdown marks it offline. Heartbeats are telemetry, not state changes:
they are not audited (registration is)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from accounts.exceptions import Problem, full_clean_or_problems
from accounts.models import Organisation
from accounts.selectors import clock
from accounts.services.actor import Actor
from accounts.services.audit import audit_record
from benchmarks.lib.lab.policy import policy_problems
from benchmarks.models import HostToken, LabHost, LabPool
from benchmarks.services.common import RunnerConflict, RunnerError


@transaction.atomic
def pool_create(
    *,
    lab_organisation: Organisation,
    name: str,
    actor: Actor,
    description: str = "",
    hardware_class: str = "",
) -> LabPool:
    if lab_organisation.kind != Organisation.Kind.LAB:
        raise RunnerError("Only a lab organisation owns pools.", code="not_a_lab")
    if LabPool.objects.filter(name=name).exists():
        raise RunnerConflict(
            f"A pool named {name!r} exists already.", code="pool_exists"
        )
    pool = LabPool(
        lab_organisation=lab_organisation,
        name=name,
        description=description.strip(),
        hardware_class=hardware_class.strip(),
    )
    full_clean_or_problems(pool, error_class=RunnerError)
    pool.save()
    audit_record(
        actor=actor,
        action="lab_pool.created",
        target=pool,
        organisation=lab_organisation,
        data={"name": pool.name, "queue": pool.queue},
    )
    return pool


@dataclass(frozen=True)
class WorkerIdentity:
    """Who a runner worker is: celery's node name (``-n``), host and process."""

    worker_name: str
    hostname: str
    pid: int | None = None
    environment: dict[str, Any] = field(default_factory=dict)
    sandbox: dict[str, Any] = field(default_factory=dict)


@transaction.atomic
def host_register(
    *, pool: LabPool, worker: WorkerIdentity, token: HostToken | None = None
) -> LabHost:
    """Register (or re-register, after a restart) ``worker`` on ``pool``, with
    the environment it captured; ``token``: an agent's, which it said hello with."""
    now = clock.now()
    host, created = LabHost.objects.select_for_update().get_or_create(
        pool=pool,
        worker_name=worker.worker_name,
        defaults={
            "registered_at": now,
            "last_heartbeat_at": now,
            "hostname": worker.hostname,
        },
    )
    host.hostname, host.pid = worker.hostname[:255], worker.pid
    host.registered_at = host.last_heartbeat_at = now
    host.stopped_at = host.retired_at = None
    if token is not None:
        host.token = token
    if worker.environment:
        host.environment = worker.environment
    if worker.sandbox:
        host.sandbox = worker.sandbox
    host.save()
    audit_record(
        actor=None,
        action="lab_host.registered",
        target=host,
        organisation=pool.lab_organisation,
        data={
            "pool": pool.name,
            "worker": host.worker_name,
            "hostname": host.hostname,
            "first_time": created,
            **({"host_token": token.prefix} if token is not None else {}),
        },
    )
    return host


def host_stop(*, worker_name: str, pool_names: list[str], retire: bool = False) -> int:
    """The worker shut down cleanly: shown offline, not lost. ``retire``: a
    one-shot runner (the demo seed's) whose runs are over and which will not
    come back: the pools page lists it apart, as retired."""
    now = clock.now()
    return LabHost.objects.filter(
        worker_name=worker_name, pool__name__in=pool_names
    ).update(last_heartbeat_at=now, stopped_at=now, retired_at=now if retire else None)


@transaction.atomic
def pool_policy_set(*, pool: LabPool, policy: object, actor: Actor) -> LabPool:
    """Set the pool's device and endpoint policy (``reprogate.lab-policy/v1``);
    every problem is named with its path. Runs claimed from now on run under it."""
    problems = policy_problems(policy)
    if problems:
        raise RunnerError(
            "The policy is not valid: " + "; ".join(problems),
            code="policy_invalid",
            problems=[
                Problem(
                    code="policy_invalid",
                    message=p.partition(": ")[2] or p,
                    path=p.partition(": ")[0],
                )
                for p in problems
            ],
        )
    pool = LabPool.objects.select_for_update().get(pk=pool.pk)
    before = pool.policy
    pool.policy = policy or {}
    pool.save(update_fields=["policy", "updated_at"])
    audit_record(
        actor=actor,
        action="lab_pool.policy_set",
        target=pool,
        organisation=pool.lab_organisation,
        data={"pool": pool.name, "policy": pool.policy, "before": before},
    )
    return pool
