"""The runner API's host side: a host token authenticates the agent (and only
it), hello registers the host on the token's pool, heartbeats keep it online,
bye shows it offline, and the reaper treats an agent host like any worker."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.models import AuditEvent
from benchmarks.models import Campaign, LabHost, LabPool, Run
from benchmarks.selectors.pools import host_status
from benchmarks.services.host_tokens import (
    IssuedHostToken,
    host_token_issue,
    host_token_revoke,
)
from benchmarks.services.pools import host_register
from benchmarks.services.reaper import run_reap
from benchmarks.services.runs import run_cancel
from tests.benchmarks.runner.support import runs_of, worker
from tests.benchmarks.runner_api.conftest import agent_client
from tests.benchmarks.runner_api.support import WORKER, call, claim, hello, running

pytestmark = pytest.mark.django_db


def test_hello_registers_the_host_on_the_tokens_pool(
    agent: APIClient, issued: IssuedHostToken, pool: LabPool
) -> None:
    response = hello(agent)

    assert response.status_code == 200, response.json()
    body = response.json()
    host = LabHost.objects.get(worker_name=WORKER)
    assert body["host"] == str(host.public_id)
    assert (body["pool"], body["queue"]) == ("gpu-a", "pool.gpu-a")
    assert body["log_tail_chars"] > 0
    assert body["max_output_files"] > 0
    assert body["heartbeat_seconds"] > 0
    assert body["output_limit_bytes"] > 0
    assert (host.pool, host.token, host.hostname, host.pid) == (
        pool,
        issued.token,
        "lab-07",
        4242,
    )
    assert host.environment == {"cpu": {"threads": 4}}
    registered = AuditEvent.objects.get(action="lab_host.registered")
    assert registered.data["host_token"] == issued.token.prefix


def test_hello_again_after_a_restart_keeps_one_host_online(agent: APIClient) -> None:
    hello(agent)
    call(agent, "bye", {"worker_name": WORKER})

    again = hello(agent, pid=5151)

    assert again.status_code == 200
    host = LabHost.objects.get()
    assert (host.pid, host.stopped_at) == (5151, None)
    assert again.json()["host"] == str(host.public_id)


def test_heartbeat_and_bye(agent: APIClient, clock: Any) -> None:
    hello(agent)
    clock.advance(seconds=30)

    beat = call(agent, "heartbeat", {"worker_name": WORKER})

    host = LabHost.objects.get()
    assert (beat.status_code, beat.json()) == (200, {"ok": True})
    assert host.last_heartbeat_at > host.registered_at
    assert host_status(host).code == "online"

    bye = call(agent, "bye", {"worker_name": WORKER})

    assert (bye.status_code, bye.json()) == (200, {"ok": True})
    assert host_status(LabHost.objects.get()).code == "offline"


def test_a_worker_name_of_another_host_is_refused(
    agent: APIClient, pool: LabPool, other_agent: APIClient
) -> None:
    host_register(pool=pool, worker=worker("db-worker@lab-host"))
    assert hello(agent).status_code == 200
    second = agent_client(host_token_issue(pool=pool, name="lab-08", actor=None).raw)

    taken = hello(second)  # the first token's host
    database_worker = hello(agent, worker_name="db-worker@lab-host")

    assert taken.status_code == database_worker.status_code == 409
    assert taken.json()["code"] == "worker_name_taken"
    assert LabHost.objects.get(worker_name=WORKER).token.name == "lab-07"
    assert hello(other_agent).status_code == 200  # the same name on another pool


@pytest.mark.parametrize(
    "header",
    [
        "Bearer rgh_not-a-token-we-issued",
        "Bearer not-even-a-host-token",
        "Bearer",
        "Bearer a b",
        "Token rgh_x",
        "",
    ],
)
def test_a_wrong_or_missing_token_is_refused(header: str) -> None:
    client = APIClient()
    if header:
        client.credentials(HTTP_AUTHORIZATION=header)

    response = hello(client)

    assert response.status_code == 401
    body = response.json()
    assert body["code"] == "host_token_refused"
    assert body["detail"] == body["message"]
    assert body["message"]
    assert response["WWW-Authenticate"] == "Bearer"
    assert not LabHost.objects.exists()


def test_a_revoked_token_is_refused_at_the_next_call(
    agent: APIClient, issued: IssuedHostToken
) -> None:
    assert hello(agent).status_code == 200
    host_token_revoke(token=issued.token, actor=None)

    response = call(agent, "heartbeat", {"worker_name": WORKER})

    assert response.status_code == 401
    assert "revoked" in response.json()["detail"]
    assert host_status(LabHost.objects.get()).code == "offline"


def test_a_signed_in_session_is_no_host_token(client: Any, labops: Any) -> None:
    client.force_login(labops)

    response = client.post(
        "/api/v1/runner/hello", {"worker_name": "x@y"}, content_type="application/json"
    )

    assert response.status_code == 401
    assert response.json()["code"] == "host_token_refused"


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"worker_name": ""},
        {"worker_name": "a\x00b"},
        {"worker_name": "x" * 300},
        {"worker_name": "w@h", "environment": ["not", "an", "object"]},
        {"worker_name": "w@h", "pid": -1},
    ],
)
def test_hello_refuses_bad_input(agent: APIClient, body: dict[str, Any]) -> None:
    response = call(agent, "hello", body)

    assert response.status_code == 400, response.json()
    assert not LabHost.objects.exists()


def test_the_reaper_requeues_the_run_of_an_agent_that_went_silent(
    agent: APIClient, campaign: Campaign, clock: Any, sent_tasks: list[Any]
) -> None:
    run = runs_of(campaign)[0]
    hello(agent)
    assert claim(agent, run).status_code == 200
    clock.advance(hours=1)

    report = run_reap()

    run = Run.objects.get(pk=run.pk)
    assert report.requeued == [run.pk]
    assert (run.state, run.attempt) == (Run.State.QUEUED, 2)
    assert host_status(LabHost.objects.get()).code == "lost"
    stale = call(agent, f"runs/{run.pk}/report", {"attempt": 1, "progress": 0.5})
    assert (stale.status_code, stale.json()["continue"]) == (409, False)
    assert claim(agent, run, attempt=2).json()["claimed"] is True


def _restart(agent: APIClient) -> None:
    """The agent's process stopped (Ctrl-C, a crash) and a new one says hello."""
    response = hello(agent, pid=5151)
    assert response.status_code == 200, response.json()


def test_hello_again_requeues_at_once_the_run_the_earlier_process_held(
    agent: APIClient,
    campaign: Campaign,
    sent_tasks: list[Any],
    django_capture_on_commit_callbacks: Any,
) -> None:
    run = runs_of(campaign)[0]
    hello(agent)
    assert claim(agent, run).status_code == 200
    assert running(agent, run).status_code == 200
    sent_before = len(sent_tasks)

    with django_capture_on_commit_callbacks(execute=True):
        _restart(agent)

    run = Run.objects.get(pk=run.pk)
    assert (run.state, run.attempt, run.host) == (Run.State.QUEUED, 2, None)
    assert run.reason == (
        f"{WORKER} started again (a new agent process) during attempt 1; "
        "re-queued as attempt 2."
    )
    requeued = AuditEvent.objects.get(
        action="run.transitioned", data__reason=run.reason
    )
    assert requeued.data["previous"] == {"worker": WORKER, "attempt": 1}
    assert [t["args"] for t in sent_tasks[sent_before:]] == [[run.pk, 2]]
    stale = call(agent, f"runs/{run.pk}/report", {"attempt": 1, "progress": 0.5})
    assert (stale.status_code, stale.json()["continue"]) == (409, False)
    assert claim(agent, run, attempt=2).json()["claimed"] is True


def test_hello_again_leaves_another_hosts_run_and_a_heartbeat_gives_up_none(
    agent: APIClient, campaign: Campaign, pool: LabPool
) -> None:
    first, second = runs_of(campaign)[:2]
    other = agent_client(host_token_issue(pool=pool, name="lab-08", actor=None).raw)
    assert hello(other, worker_name="agent@lab-08").status_code == 200
    body = {"attempt": 1, "worker_name": "agent@lab-08"}
    assert call(other, f"runs/{second.pk}/claim", body).status_code == 200

    hello(agent)
    assert claim(agent, first).status_code == 200
    beat = call(agent, "heartbeat", {"worker_name": WORKER})  # not a hello
    assert beat.status_code == 200
    assert Run.objects.get(pk=first.pk).state == Run.State.PREPARING

    _restart(agent)

    assert Run.objects.get(pk=first.pk).state == Run.State.QUEUED
    kept = Run.objects.get(pk=second.pk)
    assert (kept.state, kept.attempt, kept.worker_name) == (
        Run.State.PREPARING,
        1,
        "agent@lab-08",
    )


def test_hello_again_cancels_a_run_asked_to_stop_and_fails_one_out_of_attempts(
    agent: APIClient, campaign: Campaign, settings: Any, labops: Any
) -> None:
    settings.RUNNER_MAX_ATTEMPTS = 1
    stopping, last = runs_of(campaign)[:2]
    hello(agent)
    for run in (stopping, last):
        assert claim(agent, run).status_code == 200
        assert running(agent, run).status_code == 200
    run_cancel(run=Run.objects.get(pk=stopping.pk), actor=labops)

    _restart(agent)

    stopping, last = Run.objects.get(pk=stopping.pk), Run.objects.get(pk=last.pk)
    assert (stopping.state, stopping.stop_reason) == (Run.State.CANCELLED, "cancelled")
    assert (last.state, last.stop_reason) == (Run.State.FAILED, "worker_lost")
    assert last.reason == (
        f"{WORKER} started again (a new agent process) during attempt 1 of 1; "
        "no attempt left."
    )
    assert stopping.reason == f"Cancelled; {WORKER} started again before it confirmed."
    assert AuditEvent.objects.filter(data__reason=last.reason).count() == 1
