"""Celery tasks of the runner, and the runner worker's registration.

Tasks take ids and call services. ``benchmarks.execute_run`` is sent to the
run's pool queue (``pool.<name>``) with ``acks_late`` and
``reject_on_worker_lost``: a message whose worker died is delivered again, and
``run_claim`` makes the second delivery a no-op unless the run is still queued
with that attempt.

A worker started with ``celery -A config worker -Q pool.<name> -n <name>@%h``
registers itself on each pool it consumes once it is ready (``worker_ready``):
a daemon thread of the worker's main process captures the host's environment
and the sandbox's capabilities, registers a ``LabHost`` per pool, then beats
every ``RUNNER_HEARTBEAT_SECONDS`` until shutdown, when the hosts are marked
offline. A host whose beats stop (SIGKILL, crash, network) is shown as lost
after ``RUNNER_LOST_AFTER_SECONDS``. Give each worker a stable ``-n`` name: a
restarted worker then re-registers as the same host. Run one benchmark at a
time per host (``--pool solo`` or ``--concurrency 1``): runs sharing a host
disturb each other.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from typing import Any

from celery import shared_task
from celery.signals import worker_ready, worker_shutdown
from django.db import InterfaceError, OperationalError, connection

from benchmarks import conf
from benchmarks.lib.queues import EXECUTE_RUN, pool_names_of

logger = logging.getLogger(__name__)


def worker_identity(worker_name: str | None, **extra: Any) -> Any:
    from benchmarks.services.pools import WorkerIdentity

    hostname = socket.gethostname()
    return WorkerIdentity(
        worker_name=(worker_name or f"worker@{hostname}")[:255],
        hostname=hostname,
        pid=os.getpid(),
        **extra,
    )


@shared_task(
    name=EXECUTE_RUN,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
    # The database unreachable before the run was claimed (a restart, a failover):
    # the message is sent again after 1, 2, 4 … at most 30 s, instead of being
    # acknowledged with the run left queued until the reaper re-sends it.
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=1,
    retry_backoff_max=30,
    retry_jitter=False,
    max_retries=20,
)
def execute_run_task(self: Any, run_id: int, attempt: int | None = None) -> str:
    """Execute one run attempt on this worker (``services.execution``)."""
    from benchmarks.services.execution import run_execute

    worker = worker_identity(getattr(self.request, "hostname", None))
    outcome = run_execute(run_id=run_id, attempt=attempt, worker=worker)
    logger.info("run %s attempt %s: %s", run_id, attempt, outcome)
    return outcome


@shared_task(name="benchmarks.reap_runs", soft_time_limit=120, ignore_result=True)
def reap_runs_task() -> dict[str, list[int]]:
    """The beat sweep: re-queue or fail runs whose worker is gone."""
    from benchmarks.services.reaper import run_reap

    return run_reap().as_dict()


class HostBeacon:
    """Registers a worker on its pools, then beats until stopped."""

    def __init__(self, worker_name: str, pool_names: list[str]) -> None:
        self.worker_name, self.pool_names = worker_name, sorted(set(pool_names))
        self.registered: set[str] = set()
        self.stop_event = threading.Event()
        self._identity: Any = None

    def identity(self) -> Any:
        if self._identity is None:
            from benchmarks.lib.environment import capture_environment
            from benchmarks.lib.sandbox import sandbox_capabilities

            self._identity = worker_identity(
                self.worker_name,
                environment=capture_environment(),
                sandbox=sandbox_capabilities(),
            )
        return self._identity

    def register_missing(self) -> None:
        from benchmarks.models import LabPool
        from benchmarks.services.pools import host_register

        missing = [n for n in self.pool_names if n not in self.registered]
        pools = {p.name: p for p in LabPool.objects.filter(name__in=missing)}
        for name in missing:
            if name not in pools:
                logger.warning("lab pool %r does not exist: create it first", name)
                continue
            host_register(pool=pools[name], worker=self.identity())
            self.registered.add(name)

    def beat(self) -> None:
        from benchmarks.services.pools import host_heartbeat

        try:
            self.register_missing()
            host_heartbeat(worker_name=self.worker_name, pool_names=self.pool_names)
        except Exception:  # the database may be away for a while: beat again later
            logger.exception("heartbeat of %s failed", self.worker_name)
        finally:
            if not connection.in_atomic_block:
                connection.close()  # the beacon thread's own connection

    def run(self) -> None:
        self.beat()
        while not self.stop_event.wait(conf.heartbeat_seconds()):
            self.beat()

    def start(self) -> threading.Thread:
        thread = threading.Thread(
            target=self.run, name="reprogate-host-beacon", daemon=True
        )
        thread.start()
        return thread

    def stop(self) -> None:
        from benchmarks.services.pools import host_stop

        self.stop_event.set()
        try:
            host_stop(worker_name=self.worker_name, pool_names=self.pool_names)
        except Exception:
            logger.exception("marking %s offline failed", self.worker_name)


_beacon: HostBeacon | None = None


@worker_ready.connect
def _worker_ready(sender: Any = None, **kwargs: Any) -> None:
    global _beacon  # one beacon per worker process is the point
    consumer = getattr(sender, "task_consumer", None)
    queues = [q.name for q in getattr(consumer, "queues", None) or []]
    pools = pool_names_of(queues)
    if not pools:
        return
    _beacon = HostBeacon(str(getattr(sender, "hostname", "")), pools)
    _beacon.start()


@worker_shutdown.connect
def _worker_shutdown(sender: Any = None, **kwargs: Any) -> None:
    if _beacon is not None:
        _beacon.stop()
