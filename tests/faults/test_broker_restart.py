"""Broker restart: a Redis server of the test's own (tests/faults/cluster.py; the
shared Redis on 6379 is never touched) killed with SIGKILL and started again.

- Mid-campaign, while a run is half done and the others wait in the queue: the
  worker reconnects, the waiting runs are done (the append-only file kept their
  messages), and each run is counted once.
- A campaign started while the broker is down: the start is recorded with its
  runs queued (no error for the user: the runs are sent again later), and once
  the broker is back the reaper sends them again and they are done; the fixity
  check finds escrow (the runs' output deposits) intact.

Times to serve again are printed (``pytest -s``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from artifacts.services.fixity.run import fixity_check
from benchmarks.models import Campaign, Run
from benchmarks.tasks import reap_runs_task
from tests.benchmarks.runner.support import SCENARIOS, start
from tests.faults.cluster import (
    HARNESS,
    OwnRedis,
    Process,
    counted_once,
    runner_agent,
    site,
    wait_ready,
)
from tests.faults.support import report, wait_for
from tests.integration import test_runner_workers as runner_it
from tests.integration.test_runner_workers import SUFFIX

# The runner tests' module fixtures: a database and blob store of this module's own.
var_dir = runner_it.var_dir
shared_database = runner_it.shared_database
people = runner_it.people
world = runner_it.world

pytestmark = [pytest.mark.integration, pytest.mark.timeout(150)]


@pytest.fixture(scope="module")
def worker(
    shared_database: str,
    var_dir: Path,
    redis_url: str,
    people: dict[str, Any],
    django_db_blocker: Any,
) -> Iterator[Process]:
    """Pool B's lab agent, with the web server it talks to."""
    env = runner_it._worker_env(shared_database, var_dir, redis_url)
    with site(env, var_dir) as url:
        with django_db_blocker.unblock():
            process = runner_agent(
                env, var_dir, f"broker-{SUFFIX}", people["pool_b"], url
            )
        yield wait_ready(process.start())
        process.stop()


def _campaign(world: dict[str, Any], var_dir: Path, tag: str) -> Campaign:
    scenario = [{**SCENARIOS[0], "name": f"broker-{tag}", "duration_s": 3}]
    reference = f"RFP-B{tag.upper()}-{SUFFIX[:6].upper()}"
    bundle = runner_it._bundle(world, var_dir, reference, HARNESS, scenario)
    return start(bundle, world["pool_b"], world["labops"], repetitions=3)


def test_the_worker_reconnects_after_a_broker_restart_and_does_the_queued_runs(
    world: dict[str, Any], worker: Process, own_redis: OwnRedis, var_dir: Path
) -> None:
    campaign = _campaign(world, var_dir, "q")
    wait_for(
        lambda: campaign.runs.filter(state=Run.State.RUNNING).exists(),
        60,
        lambda: runner_it._runs(campaign) + worker.text()[-3000:],
    )

    own_redis.kill()
    time.sleep(1.0)  # the broker stays down for a moment
    own_redis.start()
    back = time.monotonic()
    wait_for(
        lambda: campaign.runs.filter(state=Run.State.SUCCEEDED).count() >= 2,
        60,
        lambda: runner_it._runs(campaign) + worker.text()[-3000:],
    )
    report("broker restarted: a queued run done", time.monotonic() - back)
    wait_for(
        lambda: runner_it._all_final(campaign),
        60,
        lambda: runner_it._runs(campaign) + worker.text()[-3000:],
    )

    assert worker.alive(), worker.text()[-3000:]
    assert set(campaign.runs.values_list("attempt", flat=True)) == {1}
    counted_once(campaign)


def test_a_campaign_started_while_the_broker_is_down_runs_once_it_is_back(
    world: dict[str, Any],
    worker: Process,
    own_redis: OwnRedis,
    var_dir: Path,
    settings: Any,
) -> None:
    settings.RUNNER_REDISPATCH_AFTER_SECONDS = 1.0
    # Not while the agent acknowledges the last test's runs: a kill in the middle of
    # an acknowledgement once left its consumer silent for good (kombu's Redis
    # transport), a failure of its own, not the one this test is about.
    wait_for(lambda: own_redis.unacked() == 0, 30, worker.text)
    own_redis.kill()

    campaign = _campaign(world, var_dir, "d")  # the user's start: no error

    assert set(campaign.runs.values_list("state", flat=True)) == {Run.State.QUEUED}
    own_redis.start()
    back = time.monotonic()
    wait_for(
        lambda: reap_runs_task()["redispatched"], 30, lambda: runner_it._runs(campaign)
    )
    wait_for(
        lambda: runner_it._all_final(campaign),
        60,
        lambda: runner_it._runs(campaign) + worker.text()[-3000:],
    )
    report("broker back: runs started while it was down done", time.monotonic() - back)
    assert set(campaign.runs.values_list("attempt", flat=True)) == {1}
    counted_once(campaign)
    findings = fixity_check()
    assert findings.clean, findings.findings
