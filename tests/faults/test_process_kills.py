"""SIGKILL of a lab agent, of beat and of the web server mid-campaign, on real
processes: a Redis of the test's own (tests/faults/cluster.py), the database and
blob store of tests/integration/test_runner_workers.py.

- An agent and beat killed together while a run is half done: beat, started again
  with the same schedule file, keeps ticking; its reaper tick (the only one: the
  test calls no reaper) re-queues the run as attempt 2, a new agent completes it
  and the campaign's next run; each run has one set of outputs and one deposit.
- The web server (gunicorn) killed mid-campaign, the whole server (started again
  as systemd or compose would) and then its worker (gunicorn starts another):
  /healthz answers 200 again within seconds; the campaign runs on untouched
  (every run succeeds at its first attempt; no reaper runs, since the module's
  agents count as lost after 4 s).

After each: the checkpoint signed before the kill and one signed after are
consistent (the consistency proof verifies), fixity is clean and the key files are
the same bytes. Times to serve again are printed (``pytest -s``)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from accounts.models import AuditEvent
from benchmarks.models import Campaign, Run
from tests.benchmarks.runner.support import SCENARIOS, start
from tests.faults.cluster import (
    HARNESS,
    Process,
    beat,
    counted_once,
    runner_agent,
    runner_worker,
    site,
    time_until_healthy,
    wait_ready,
    web,
)
from tests.faults.escrow_state import before_fault, escrow_intact_since
from tests.faults.support import healthz, report, wait_for
from tests.integration import test_runner_workers as runner_it
from tests.integration.test_runner_workers import SUFFIX

# The runner tests' module fixtures: a database and blob store of this module's own.
var_dir = runner_it.var_dir
shared_database = runner_it.shared_database
people = runner_it.people
world = runner_it.world

pytestmark = [pytest.mark.integration, pytest.mark.timeout(150)]


@pytest.fixture(scope="module")
def env(shared_database: str, var_dir: Path, redis_url: str) -> dict[str, str]:
    return runner_it._worker_env(shared_database, var_dir, redis_url)


@pytest.fixture(scope="module")
def processes() -> Iterator[list[Process]]:
    """Everything a test started, stopped at the end of the module."""
    started: list[Process] = []
    yield started
    for process in started:
        process.stop()


@pytest.fixture
def launch(
    env: dict[str, str], var_dir: Path, processes: list[Process]
) -> Callable[[Process], Process]:
    def go(process: Process) -> Process:
        processes.append(process)
        return process.start()

    return go


@pytest.fixture(scope="module")
def server_url(env: dict[str, str], var_dir: Path) -> Iterator[str]:
    """The web server the module's lab agents talk to (the second test kills one
    of its own)."""
    with site(env, var_dir) as url:
        yield url


def _worker(
    launch: Callable[[Process], Process],
    env: dict[str, str],
    var_dir: Path,
    name: str,
    *queues: str,
) -> Process:
    """A server worker consuming ``queues`` (the default queue's tasks)."""
    return wait_ready(
        launch(runner_worker(env, var_dir, f"{name}-{SUFFIX}", [*queues]))
    )


def _agent(
    launch: Callable[[Process], Process],
    env: dict[str, str],
    var_dir: Path,
    name: str,
    pool: Any,
    url: str,
) -> Process:
    """A lab agent of ``pool`` talking to the web server at ``url``."""
    agent = runner_agent(env, var_dir, f"{name}-{SUFFIX}", pool, url)
    return wait_ready(launch(agent))


def _campaign(
    world: dict[str, Any], var_dir: Path, tag: str, pool: Any, repetitions: int
) -> Campaign:
    scenario = [{**SCENARIOS[1], "name": f"slow-{tag}", "duration_s": 3}]
    reference = f"RFP-F{tag.upper()}-{SUFFIX[:6].upper()}"
    bundle = runner_it._bundle(world, var_dir, reference, HARNESS, scenario)
    return start(bundle, pool, world["labops"], repetitions=repetitions)


def _running(campaign: Campaign, worker: Process | None = None) -> bool:
    """A run of ``campaign`` is under way (on ``worker``, if named)."""
    runs = campaign.runs.filter(state=Run.State.RUNNING, progress__gt=0.1)
    if worker is not None:
        runs = runs.filter(worker_name__startswith=worker.name)
    return runs.exists()


def test_a_killed_worker_and_beat_come_back_and_the_run_is_retried_once(
    world: dict[str, Any],
    env: dict[str, str],
    var_dir: Path,
    launch: Callable[[Process], Process],
    server_url: str,
) -> None:
    _worker(launch, env, var_dir, "default", "celery")
    pool = world["pool_c"]
    victim = _agent(launch, env, var_dir, "victim", pool, server_url)
    scheduler = launch(beat(env, var_dir))
    tick = "Sending due task benchmarks-reaper"
    wait_for(lambda: tick in scheduler.since_last_start(), 60, scheduler.text)
    campaign = _campaign(world, var_dir, "k", world["pool_c"], 2)
    before = before_fault(var_dir)
    first = campaign.runs.order_by("position").first()
    assert first is not None
    wait_for(
        lambda: _running(campaign, victim),
        60,
        lambda: runner_it._runs(campaign) + victim.text()[-3000:],
    )

    victim.kill()
    scheduler.kill()
    killed = time.monotonic()
    scheduler.start()  # as scripts/run's supervisor does, with the same schedule
    rescuer = _agent(launch, env, var_dir, "rescuer", pool, server_url)
    wait_for(lambda: tick in scheduler.since_last_start(), 30, scheduler.text)
    report("beat SIGKILLed: reaper tick sent again", time.monotonic() - killed)
    wait_for(
        lambda: Run.objects.filter(pk=first.pk, attempt=2).exists(),
        30,
        lambda: runner_it._runs(campaign) + scheduler.text()[-2000:],
    )
    report("worker SIGKILLed mid-run: run re-queued", time.monotonic() - killed)
    wait_for(
        lambda: runner_it._all_final(campaign),
        60,
        lambda: runner_it._runs(campaign) + rescuer.text()[-3000:],
    )
    report("worker SIGKILLed mid-run: campaign ended", time.monotonic() - killed)

    first.refresh_from_db()
    assert first.attempt == 2
    assert first.worker_name.startswith(rescuer.name)
    (requeue,) = AuditEvent.objects.filter(
        action="run.transitioned", target_id=str(first.pk), data__to="queued"
    ).exclude(data__previous=None)
    assert requeue.data["previous"]["worker"].startswith(victim.name)
    assert "stopped reporting" in requeue.data["reason"]
    assert campaign.runs.exclude(pk=first.pk).get().attempt == 1
    counted_once(campaign)
    escrow_intact_since(before, var_dir)


def _gunicorn_worker(master: Process) -> int:
    children = Path(f"/proc/{master.pid}/task/{master.pid}/children")
    pids = children.read_text().split()
    assert len(pids) == 1, pids
    return int(pids[0])


def test_the_web_server_killed_mid_campaign_serves_again_and_the_campaign_goes_on(
    world: dict[str, Any],
    env: dict[str, str],
    var_dir: Path,
    launch: Callable[[Process], Process],
    processes: list[Process],
) -> None:
    # No reaper here: this module's agents count as lost after 4 s (production: two
    # minutes), less than a web server takes to start again on a busy host,
    # so the first test's beat would re-queue a run only because the test is quick.
    for process in processes:
        if process.name == "beat":
            process.stop()
    server, port = web(env, var_dir)
    launch(server)
    time_until_healthy(port, 60, server)
    url = f"http://127.0.0.1:{port}"
    lab = _agent(launch, env, var_dir, "steady", world["pool_c"], url)
    campaign = _campaign(world, var_dir, "w", world["pool_c"], 4)
    before = before_fault(var_dir)
    # on this test's worker or on one the previous test left running
    wait_for(lambda: _running(campaign), 60, lambda: runner_it._runs(campaign))

    assert not runner_it._all_final(campaign)  # mid-campaign
    server.kill()
    assert healthz(port, timeout=1) is None  # nothing answers
    restarted = time.monotonic()
    server.start()  # as systemd or compose's restart policy would
    time_until_healthy(port, 60, server)
    back = time.monotonic() - restarted
    report("web server SIGKILLed, started again: /healthz 200", back)

    worker_pid = _gunicorn_worker(server)
    os.kill(worker_pid, signal.SIGKILL)
    respawned = time_until_healthy(port, 30, server)
    report("web worker SIGKILLed: /healthz 200 again", respawned)
    assert _gunicorn_worker(server) != worker_pid

    wait_for(
        lambda: runner_it._all_final(campaign),
        60,
        lambda: runner_it._runs(campaign) + lab.text()[-3000:],
    )
    assert set(campaign.runs.values_list("attempt", flat=True)) == {1}
    counted_once(campaign)
    escrow_intact_since(before, var_dir)
