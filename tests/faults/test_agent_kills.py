"""SIGKILL of a lab host's runner agent, and of the web server it talks to,
mid-campaign, on real processes: a Redis of the test's own (the pool's broker,
tests/faults/cluster.py), gunicorn serving the runner API, ``python -m
reprogate_agent`` with only the agent's variables in its environment, and the
database and blob store of tests/integration/test_runner_workers.py.

- The agent killed while its run is half done (harness sleeping, progress
  reported), then started again with the same name and token (the same host,
  registered again): its hello re-queues the attempt (no reaper runs), and it
  completes it as attempt 2, then the campaign's other run.
- The agent killed for good: a second host of the pool, with a token of its
  own, completes the re-queued attempt.
- The web server killed while the agent runs: started again, the agent's
  retries carry every run through at its first attempt.

After each: every run has one set of outputs and one escrow deposit, the
checkpoint signed before the kill and the one after are consistent (the
consistency proof verifies), ``fixity_check`` is clean and the key files are
the same bytes. Times are printed (``pytest -s``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from accounts.models import AuditEvent
from benchmarks.models import Campaign, HostToken, LabHost, Run
from benchmarks.services.host_tokens import host_token_issue
from benchmarks.services.reaper import run_reap
from tests.benchmarks.runner.support import SCENARIOS, start
from tests.faults.cluster import (
    HARNESS,
    agent_process,
    counted_once,
    time_until_healthy,
    wait_ready,
    web,
)
from tests.faults.escrow_state import before_fault, escrow_intact_since
from tests.faults.support import healthz, report, wait_for
from tests.integration import test_runner_workers as runner_it
from tests.integration.test_runner_workers import SUFFIX
from tests.processes import Process

# The runner tests' module fixtures: a database and blob store of this module's own.
var_dir = runner_it.var_dir
shared_database = runner_it.shared_database
people = runner_it.people
world = runner_it.world

pytestmark = [pytest.mark.integration, pytest.mark.timeout(150)]
AGENT = f"lab-k-{SUFFIX}"
# The web server stays down this much longer than it takes the agent to notice:
# the harness (about 3 s) ends while nothing answers, so that its outputs and
# its finish wait for the server's return.
OUTAGE_S = 3.0


@pytest.fixture(scope="module")
def env(shared_database: str, var_dir: Path, redis_url: str) -> dict[str, str]:
    """The server's environment (database, blob store, keys, broker)."""
    return runner_it._worker_env(shared_database, var_dir, redis_url)


@dataclass
class Lab:
    """The web server and the agent of this module, started once; ``others``,
    agents a test started, are stopped at the end of the module too."""

    server: Process
    port: int
    agent: Process
    token: HostToken
    broker: str
    others: list[Process]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture(scope="module")
def lab(
    env: dict[str, str],
    var_dir: Path,
    people: dict[str, Any],
    redis_url: str,
    django_db_blocker: Any,
) -> Iterator[Lab]:
    """gunicorn serving the runner API, and an agent of pool C with a host token
    of its own."""
    with django_db_blocker.unblock():
        issued = host_token_issue(
            pool=people["pool_c"], name=AGENT, actor=people["labops"]
        )
    server, port = web(env, var_dir)
    url = f"http://127.0.0.1:{port}"
    agent = agent_process(var_dir, url, redis_url, issued.raw, AGENT)
    lab = Lab(server, port, agent, issued.token, redis_url, [])
    try:
        server.start()
        time_until_healthy(port, 60, server)
        wait_ready(agent.start())
        yield lab
    finally:
        for process in (agent, *lab.others, server):
            process.stop()


def _campaign(world: dict[str, Any], var_dir: Path, tag: str, reps: int) -> Campaign:
    scenario = [{**SCENARIOS[1], "name": f"slow-{tag}", "duration_s": 3}]
    reference = f"RFP-G{tag.upper()}-{SUFFIX[:6].upper()}"
    bundle = runner_it._bundle(world, var_dir, reference, HARNESS, scenario)
    return start(bundle, world["pool_c"], world["labops"], repetitions=reps)


def _half_done(campaign: Campaign, name: str = AGENT) -> Run | None:
    """A run of ``campaign`` the agent ``name`` is running, its progress
    reported."""
    return (
        campaign.runs.filter(state=Run.State.RUNNING, progress__gt=0.1)
        .filter(worker_name__startswith=f"{name}@")
        .first()
    )


def _wait_all_final(campaign: Campaign, explain: Process, timeout: float) -> None:
    wait_for(
        lambda: runner_it._all_final(campaign),
        timeout,
        lambda: runner_it._runs(campaign) + explain.text()[-4000:],
    )


def _reap_until(condition: Callable[[], bool], explain: Callable[[], str]) -> None:
    """The reaper, as beat would call it, until ``condition`` holds."""

    def reaped() -> bool:
        run_reap()
        return condition()

    wait_for(reaped, 30, explain, step=0.5)


def test_a_killed_agent_started_again_completes_its_run_as_attempt_two(
    world: dict[str, Any], var_dir: Path, lab: Lab
) -> None:
    campaign = _campaign(world, var_dir, "a", 2)
    before = before_fault(var_dir)
    first = wait_for(
        lambda: _half_done(campaign),
        60,
        lambda: runner_it._runs(campaign) + lab.agent.text()[-4000:],
    )
    host = LabHost.objects.get(token=lab.token)

    lab.agent.kill()
    killed = time.monotonic()
    wait_ready(lab.agent.start())  # same name, same token
    report("agent SIGKILLed mid-run: started again", time.monotonic() - killed)
    wait_for(  # by the hello, before any reaper could see the agent lost
        lambda: Run.objects.filter(pk=first.pk, attempt__gte=2).exists(),
        10,
        lambda: runner_it._runs(campaign) + lab.agent.text()[-3000:],
    )
    report("agent SIGKILLed mid-run: run re-queued", time.monotonic() - killed)
    _wait_all_final(campaign, lab.agent, 60)
    report("agent SIGKILLed mid-run: campaign ended", time.monotonic() - killed)

    first.refresh_from_db()
    assert first.attempt == 2
    assert first.worker_name.startswith(f"{AGENT}@")
    assert first.host_id == host.pk  # the same host, registered again
    assert LabHost.objects.filter(token=lab.token).count() == 1
    (requeue,) = AuditEvent.objects.filter(
        action="run.transitioned", target_id=str(first.pk), data__to="queued"
    ).exclude(data__previous=None)
    assert requeue.data["previous"]["worker"].startswith(f"{AGENT}@")
    reason = requeue.data["reason"]
    assert "started again (a new agent process) during attempt 1" in reason
    assert campaign.runs.exclude(pk=first.pk).get().attempt == 1
    counted_once(campaign)
    escrow_intact_since(before, var_dir)
    text = lab.agent.since_last_start()
    assert f"run {first.pk} attempt 2: succeeded" in text, text[-4000:]


def test_the_web_server_killed_under_a_running_agent_and_started_again(
    world: dict[str, Any], var_dir: Path, lab: Lab
) -> None:
    campaign = _campaign(world, var_dir, "w", 3)
    before = before_fault(var_dir)
    caught = wait_for(
        lambda: _half_done(campaign),
        60,
        lambda: runner_it._runs(campaign) + lab.agent.text()[-4000:],
    )
    seen = len(lab.agent.text())

    lab.server.kill()
    assert healthz(lab.port, timeout=1) is None  # nothing answers
    killed = time.monotonic()
    wait_for(
        lambda: "failed: " in lab.agent.text()[seen:],
        30,
        lambda: lab.agent.text()[-3000:],
    )  # the agent met the outage (a report or heartbeat not answered) ...
    time.sleep(OUTAGE_S)  # ... and the harness ran on past its end
    lab.server.start()  # as systemd or compose's restart policy would
    time_until_healthy(lab.port, 60, lab.server)
    down = time.monotonic() - killed
    report("web server SIGKILLed under the agent: /healthz 200", down)
    _wait_all_final(campaign, lab.agent, 90)
    ended = time.monotonic() - killed
    report("web server SIGKILLed under the agent: campaign ended", ended)

    caught.refresh_from_db()
    assert caught.state == Run.State.SUCCEEDED
    assert caught.worker_name.startswith(f"{AGENT}@")
    assert set(campaign.runs.values_list("attempt", flat=True)) == {1}
    counted_once(campaign)
    escrow_intact_since(before, var_dir)
    assert lab.agent.alive()
    assert LabHost.objects.filter(token=lab.token).count() == 1


def test_a_killed_agent_s_run_is_completed_by_another_host_of_its_pool(
    world: dict[str, Any], var_dir: Path, lab: Lab
) -> None:
    """The agent killed for good (its host is gone): a second host of the pool,
    with a token of its own, takes the re-queued attempt."""
    second_name = f"lab-r-{SUFFIX}"
    second_token = host_token_issue(
        pool=world["pool_c"], name=second_name, actor=world["labops"]
    )
    campaign = _campaign(world, var_dir, "h", 1)
    before = before_fault(var_dir)
    (run,) = campaign.runs.all()
    wait_for(
        lambda: _half_done(campaign),
        60,
        lambda: runner_it._runs(campaign) + lab.agent.text()[-4000:],
    )
    lost_host = LabHost.objects.get(token=lab.token)

    lab.agent.kill()  # not started again
    killed = time.monotonic()
    second = agent_process(var_dir, lab.url, lab.broker, second_token.raw, second_name)
    lab.others.append(second)
    wait_ready(second.start())
    _reap_until(
        lambda: Run.objects.filter(pk=run.pk, attempt=2).exists(),
        lambda: runner_it._runs(campaign) + second.text()[-3000:],
    )
    _wait_all_final(campaign, second, 60)
    report(
        "agent SIGKILLed for good: run done on another host", time.monotonic() - killed
    )

    run.refresh_from_db()
    assert run.attempt == 2
    assert run.worker_name.startswith(f"{second_name}@")
    assert run.host is not None
    assert run.host.token_id == second_token.token.pk
    assert run.host_id != lost_host.pk
    counted_once(campaign)
    escrow_intact_since(before, var_dir)
    assert f"run {run.pk} attempt 2: succeeded" in second.text()
