"""Canary hosts with two real lab agents (``python -m reprogate_agent``) on one
pool, a real web server and a Redis broker of this module's own: a gate naming
one of the hosts runs only there, and the plan's later gate runs only on the
other (the rest of the pool), each run sent to the host's own queue, which the
agent consumes as its hello says. Without the routing both agents would share
the pool's queue and each take some of the runs.

The database, blob store and agents are those of ``test_runner_workers`` (its
module fixtures), pointed at a redis-server of this module's own on a free port
(``tests.faults.cluster.OwnRedis``), so that no other test's agent or queue
shares its broker."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from benchmarks.lib.queues import host_queue
from benchmarks.models import Campaign, LabHost, Run
from gates.models import GatePlan
from gates.services.runs import gate_campaign_start
from tests.benchmarks.runner.support import GOOD_HARNESS, SCENARIOS
from tests.faults.cluster import OwnRedis
from tests.gates.support import CRITERION, make_frozen_plan, plan_document
from tests.integration import test_runner_workers as runner_it
from tests.integration.test_runner_workers import POOL_A, SUFFIX, Worker

var_dir = runner_it.var_dir
shared_database = runner_it.shared_database
start_worker = runner_it.start_worker
people = runner_it.people
world = runner_it.world

pytestmark = [pytest.mark.integration, pytest.mark.slow]
RUNS = 4  # per gate: enough that two agents sharing one queue would both run some


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    broker = OwnRedis(tmp_path_factory.mktemp("canary-redis"))
    broker.start()
    try:
        yield broker.url
    finally:
        broker.kill()


def _host(worker: Worker) -> LabHost:
    return LabHost.objects.get(
        pool__name=POOL_A, worker_name__startswith=f"{worker.name}@"
    )


def _judged_on(plan: GatePlan, gate: str, world: dict[str, Any]) -> Campaign:
    link = gate_campaign_start(
        plan=plan, gate=gate, pool=world["pool_a"], actor=world["labops"],
        repetitions=RUNS,
    )  # fmt: skip
    campaign = link.campaign
    runner_it._wait_for(
        partial(runner_it._all_final, campaign), 180, partial(runner_it._runs, campaign)
    )
    return campaign


def test_a_canary_gate_runs_only_on_its_host_and_the_next_on_the_rest(
    world: dict[str, Any], start_worker: Callable[..., Worker], var_dir: Path
) -> None:
    canary = _host(start_worker(f"k1-{SUFFIX}", POOL_A))
    rest = _host(start_worker(f"k2-{SUFFIX}", POOL_A))
    bundle = runner_it._bundle(
        world, var_dir, f"RFP-CH-{SUFFIX[:6].upper()}", GOOD_HARNESS, SCENARIOS
    )
    document = plan_document(
        bundle.rfp.reference, bundle.organisation.slug, criteria=[CRITERION],
        stop_loss=[{"id": "failed-run", "run_failed": True}],
    )  # fmt: skip
    document["gates"][1].update(stage="canary", hosts=[canary.worker_name])
    plan = make_frozen_plan(bundle.rfp, bundle.organisation, world["labops"], document)

    pilot = _judged_on(plan, "pilot", world)
    rollout = _judged_on(plan, "rollout", world)

    for campaign, host in ((pilot, canary), (rollout, rest)):
        runs = list(campaign.runs.select_related("host"))
        assert len(runs) == RUNS
        assert {r.state for r in runs} == {Run.State.SUCCEEDED}, runner_it._runs(
            campaign
        )
        assert {r.host for r in runs} == {host}
        assert {r.routed_to for r in runs} == {host.worker_name}
        assert campaign.hosts == [host.worker_name]
    agent_log = (var_dir / f"k1-{SUFFIX}.log").read_text(errors="replace")
    assert host_queue(POOL_A, canary.worker_name) in agent_log
