"""Runner services: every write of pools, hosts, campaigns and runs goes
through one of these (``execution`` is the worker's side of a run)."""

from __future__ import annotations

from benchmarks.services.campaigns import (
    campaign_cancel,
    campaign_start,
    campaign_start_problems,
)
from benchmarks.services.common import RunnerConflict, RunnerError, StaleAttempt
from benchmarks.services.pools import (
    WorkerIdentity,
    host_ensure,
    host_heartbeat,
    host_register,
    host_stop,
    pool_create,
)
from benchmarks.services.reaper import ReapReport, run_reap
from benchmarks.services.runs import (
    run_cancel,
    run_claim,
    run_dispatch,
    run_redispatch,
    run_report,
    run_requeue,
    run_transition,
)

__all__ = [
    "ReapReport",
    "RunnerConflict",
    "RunnerError",
    "StaleAttempt",
    "WorkerIdentity",
    "campaign_cancel",
    "campaign_start",
    "campaign_start_problems",
    "host_ensure",
    "host_heartbeat",
    "host_register",
    "host_stop",
    "pool_create",
    "run_cancel",
    "run_claim",
    "run_dispatch",
    "run_reap",
    "run_redispatch",
    "run_report",
    "run_requeue",
    "run_transition",
]
