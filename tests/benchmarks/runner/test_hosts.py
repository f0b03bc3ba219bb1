"""Runner hosts: registration, heartbeats and what the pools page calls them."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.models import AuditEvent, Organisation
from benchmarks.models import LabHost, LabPool
from benchmarks.selectors.pools import host_status
from benchmarks.services.common import RunnerConflict, RunnerError
from benchmarks.services.pools import (
    WorkerIdentity,
    host_register,
    host_stop,
    pool_create,
)
from tests.benchmarks.runner.support import make_pool, worker

pytestmark = pytest.mark.django_db


def test_pool_create_names_its_queue(lab_org: Organisation) -> None:
    pool = make_pool(lab_org, "h100-rdma")

    assert pool.queue == "pool.h100-rdma"
    assert AuditEvent.objects.get(action="lab_pool.created").organisation == lab_org


@pytest.mark.parametrize("name", ["GPU", "a_b", "-a", "a" * 64, "a b", "pool.x"])
def test_pool_create_refuses_names_unfit_for_a_queue(
    lab_org: Organisation, name: str
) -> None:
    with pytest.raises(RunnerError):
        make_pool(lab_org, name)


def test_pool_create_refuses_a_taken_name(pool: LabPool, lab_org: Organisation) -> None:
    with pytest.raises(RunnerConflict):
        make_pool(lab_org, pool.name)


def test_pool_belongs_to_a_lab(buyer_org: Organisation) -> None:
    with pytest.raises(RunnerError):
        pool_create(lab_organisation=buyer_org, name="x", actor=None)


def test_host_register_records_the_environment_once_per_worker(
    pool: LabPool, clock: Any
) -> None:
    env = {"kernel": "6.1"}
    identity = WorkerIdentity("w1@h", "h", 10, environment=env)

    first = host_register(pool=pool, worker=identity)
    clock.advance(minutes=5)
    again = host_register(pool=pool, worker=identity)

    assert first.pk == again.pk
    assert again.environment == env
    assert again.registered_at == clock.now()
    assert AuditEvent.objects.filter(action="lab_host.registered").count() == 2


def test_host_status_follows_the_heartbeat(pool: LabPool, clock: Any) -> None:
    host = host_register(pool=pool, worker=worker())
    assert host_status(host).code == "online"

    clock.advance(seconds=121)
    assert host_status(LabHost.objects.get(pk=host.pk)).code == "lost"

    host_register(pool=pool, worker=worker())  # the agent's hello again
    assert host_status(LabHost.objects.get(pk=host.pk)).code == "online"

    host_stop(worker_name=host.worker_name, pool_names=[pool.name])
    clock.advance(hours=1)
    assert host_status(LabHost.objects.get(pk=host.pk)).code == "offline"
