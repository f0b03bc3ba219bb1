"""A campaign bound to named hosts (a gate's canary hosts, or the rest of the
pool): each run is sent to the own queue of one of them, the least loaded
(online hosts first), and the runner API's claim refuses every other host; the
agent learns its own queue at hello."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.exceptions import ApplicationError
from artifacts.models import Bundle
from benchmarks.lib.queues import host_queue
from benchmarks.models import LabHost, LabPool, Run
from benchmarks.services.campaigns import campaign_start
from benchmarks.services.host_tokens import host_token_issue
from benchmarks.services.pools import host_register, host_stop
from benchmarks.services.runs import run_claim, run_requeue
from gates.lib.engine.validate import HOST_NAME
from tests.benchmarks.runner.support import worker
from tests.benchmarks.runner_api.conftest import agent_client
from tests.benchmarks.runner_api.support import WORKER, call, hello

pytestmark = pytest.mark.django_db

A, B, C = "agent@lab-07", "agent@lab-08", "agent@lab-09"


@pytest.fixture
def hosts(pool: LabPool) -> dict[str, LabHost]:
    return {n: host_register(pool=pool, worker=worker(n)) for n in (A, B, C)}


def bound(
    bundle: Bundle, pool: LabPool, user: Any, names: list[str], reps: int = 2
) -> Any:
    return campaign_start(
        bundle=bundle, pool=pool, repetitions=reps, actor=user, hosts=names
    )


def queues(sent: list[dict[str, Any]]) -> list[str]:
    return [t["queue"].rpartition(".host.")[2] or t["queue"] for t in sent]


def test_runs_of_a_bound_campaign_go_round_the_named_hosts(
    bundle: Bundle, pool: LabPool, labops: Any, hosts: Any,
    sent_tasks: list[dict[str, Any]], django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        campaign = bound(bundle, pool, labops, [B, A])

    runs = list(campaign.runs.order_by("position"))
    assert [t["args"] for t in sent_tasks] == [[r.pk, 1] for r in runs]
    assert [t["queue"] for t in sent_tasks] == [
        host_queue("gpu-a", h) for h in (B, A, B, A)
    ]
    assert [r.routed_to for r in runs] == [B, A, B, A]
    assert campaign.hosts == [B, A]


def test_the_least_loaded_named_host_takes_the_next_run(
    bundle: Bundle, pool: LabPool, labops: Any, hosts: Any,
    sent_tasks: list[dict[str, Any]], django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        first = bound(bundle, pool, labops, [A], reps=1)  # two runs queued for A
    run_claim(run_id=first.runs.first().pk, attempt=1, host=hosts[A])
    sent_tasks.clear()

    with django_capture_on_commit_callbacks(execute=True):
        bound(bundle, pool, labops, [A, B], reps=2)

    assert queues(sent_tasks) == [B, B, A, B]


def test_an_offline_named_host_gets_no_run_while_another_is_online(
    bundle: Bundle, pool: LabPool, labops: Any, hosts: Any,
    sent_tasks: list[dict[str, Any]], django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    host_stop(worker_name=A, pool_names=["gpu-a"])

    with django_capture_on_commit_callbacks(execute=True):
        bound(bundle, pool, labops, [A, B])

    assert queues(sent_tasks) == [B, B, B, B]


def test_a_campaign_not_bound_goes_to_the_pools_queue(
    bundle: Bundle, pool: LabPool, labops: Any, hosts: Any,
    sent_tasks: list[dict[str, Any]], django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        campaign = campaign_start(bundle=bundle, pool=pool, repetitions=1, actor=labops)

    assert {t["queue"] for t in sent_tasks} == {"pool.gpu-a"}
    assert set(campaign.runs.values_list("routed_to", flat=True)) == {""}


@pytest.mark.parametrize(
    ("names", "path"),
    [([A, "agent@lab-99"], "hosts[1]"), (["Bad name"], "hosts[0]"), ([], "hosts")],
)
def test_a_campaign_is_refused_for_hosts_not_of_the_pool(
    bundle: Bundle, pool: LabPool, labops: Any, hosts: Any, names: list[str],
    path: str,
) -> None:  # fmt: skip
    with pytest.raises(ApplicationError) as refused:
        bound(bundle, pool, labops, names)

    assert [p.path for p in refused.value.problems] == [path]
    assert not Run.objects.exists()


def test_the_reapers_requeue_keeps_the_runs_on_the_named_hosts(
    bundle: Bundle, pool: LabPool, labops: Any, hosts: Any,
    sent_tasks: list[dict[str, Any]], django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        campaign = bound(bundle, pool, labops, [B, C], reps=1)
    run = campaign.runs.order_by("position").first()
    run_claim(run_id=run.pk, attempt=1, host=hosts[B])
    host_stop(worker_name=B, pool_names=["gpu-a"])  # B is gone
    sent_tasks.clear()

    with django_capture_on_commit_callbacks(execute=True):
        run_requeue(run=run, reason="its worker was lost")

    assert [(t["args"], t["queue"]) for t in sent_tasks] == [
        ([run.pk, 2], host_queue("gpu-a", C))
    ]


def test_hello_names_the_hosts_own_queue(agent: APIClient) -> None:
    body = hello(agent).json()

    assert body["queue"] == "pool.gpu-a"
    assert body["host_queue"] == "pool.gpu-a.host.agent@lab-07"


def test_hello_names_no_own_queue_for_a_name_no_queue_can_carry(
    agent: APIClient,
) -> None:
    assert hello(agent, worker_name="agent at lab 07").json()["host_queue"] == ""


def _claim_as(client: APIClient, run: Run, name: str) -> Any:
    return call(client, f"runs/{run.pk}/claim", {"attempt": 1, "worker_name": name})


def test_claim_refuses_a_host_the_campaign_does_not_name(
    bundle: Bundle, pool: LabPool, labops: Any, agent: APIClient,
) -> None:  # fmt: skip
    other = agent_client(host_token_issue(pool=pool, name="lab-08", actor=None).raw)
    hello(agent)
    hello(other, worker_name=B)
    run = bound(bundle, pool, labops, [WORKER], reps=1).runs.first()

    refused = _claim_as(other, run, B)
    taken = _claim_as(agent, run, WORKER)

    assert refused.status_code == 409, refused.json()
    assert refused.json()["code"] == "host_not_named"
    assert "agent@lab-07" in refused.json()["detail"]
    assert taken.status_code == 200, taken.json()
    assert Run.objects.get(pk=run.pk).host.worker_name == WORKER


def test_a_refused_claim_changes_nothing(
    bundle: Bundle, pool: LabPool, labops: Any, hosts: Any,
) -> None:  # fmt: skip
    run = bound(bundle, pool, labops, [A], reps=1).runs.first()
    before = Run.objects.filter(pk=run.pk).values().get()

    with pytest.raises(ApplicationError):
        run_claim(run_id=run.pk, attempt=1, host=hosts[B])

    assert Run.objects.filter(pk=run.pk).values().get() == before


def test_the_plans_host_name_rule_is_the_queues() -> None:
    from benchmarks.lib.queues import HOST_NAME_PATTERN

    assert HOST_NAME.pattern == HOST_NAME_PATTERN
