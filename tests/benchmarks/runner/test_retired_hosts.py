"""A one-shot runner (the demo seed's, which runs its campaigns in-process)
stops for good: the pools page lists it apart as retired instead of "offline"
forever, and it never counts as online. A worker of that name registering again
is an ordinary host again."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from benchmarks.models import LabHost, LabPool
from benchmarks.selectors.pools import host_retired, hosts_online
from benchmarks.services.pools import host_register, host_stop
from tests.benchmarks.runner.support import worker

pytestmark = pytest.mark.django_db
SEED = "seed-demo@lab-host"


def pool_page(client_for: Any, labops: Any) -> str:
    html = client_for(labops).get(reverse("benchmarks:pool_list")).content.decode()
    return " ".join(html.split())


def test_a_retired_runner_is_listed_apart_not_offline(
    pool: LabPool, client_for: Any, labops: Any
) -> None:
    host_register(pool=pool, worker=worker(SEED))
    host_stop(worker_name=SEED, pool_names=[pool.name], retire=True)

    html = pool_page(client_for, labops)

    assert host_retired(LabHost.objects.get())
    assert 'data-testid="host-row"' not in html
    assert f"Retired, not shown: <code>{SEED}</code>" in html
    assert 'data-testid="pool-hosts-none-left"' in html
    assert not hosts_online().exists()


def test_a_clean_stop_without_retiring_stays_offline(
    pool: LabPool, client_for: Any, labops: Any
) -> None:
    host_register(pool=pool, worker=worker())
    host_stop(worker_name="w1@lab-host", pool_names=[pool.name])

    html = pool_page(client_for, labops)

    assert 'data-testid="host-status">offline</span>' in html
    assert "Retired" not in html


def test_a_retired_runner_that_registers_again_is_a_host_again(
    pool: LabPool, client_for: Any, labops: Any
) -> None:
    host_register(pool=pool, worker=worker(SEED))
    host_stop(worker_name=SEED, pool_names=[pool.name], retire=True)

    host_register(pool=pool, worker=worker(SEED))

    html = pool_page(client_for, labops)
    assert 'data-testid="host-status">online</span>' in html
    assert "Retired" not in html
    assert LabHost.objects.get().retired_at is None
