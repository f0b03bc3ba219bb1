"""A gate's campaign on a real worker and broker, end to end with no one
stepping in: a campaign started for a gate with 1 of the 3 runs its criterion
needs ends, the worker evaluates it (INCONCLUSIVE), the plan's top-up
schedules the 2 missing runs, the same worker runs them and evaluates the gate
again: PASS.

The worker consumes its pool's queue and the default queue (where
``gates.campaign_finished`` goes) on a Redis database of this module's own, so
that no other test's worker takes its messages. The database, blob store and
worker set-up are those of ``test_runner_workers``."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from benchmarks.lib.queues import pool_queue
from gates.models import Evaluation, GateCampaign, GatePlan
from gates.services.runs import gate_campaign_start
from tests.benchmarks.runner.support import GOOD_HARNESS, SCENARIOS
from tests.gates.support import CRITERION, make_frozen_plan, plan_document
from tests.integration import test_runner_workers as runner_it
from tests.integration.conftest import ON_POSTGRES
from tests.integration.test_runner_workers import POOL_A, SUFFIX, Worker

# The runner workers' module fixtures, for this module's own database and worker.
var_dir = runner_it.var_dir
shared_database = runner_it.shared_database
start_worker = runner_it.start_worker
people = runner_it.people
world = runner_it.world

pytestmark = pytest.mark.integration
OWN_REDIS = f"redis://127.0.0.1:6379/{12 if ON_POSTGRES else 14}"


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    client = redis.Redis.from_url(OWN_REDIS, socket_connect_timeout=1)
    try:
        client.ping()
    except redis.RedisError as exc:
        pytest.skip(f"Redis is not reachable at {OWN_REDIS}: {exc}")
    yield OWN_REDIS
    queue = pool_queue(POOL_A)
    client.delete(queue, f"_kombu.binding.{queue}", "celery", "_kombu.binding.celery")
    client.close()


def test_an_inconclusive_gate_is_topped_up_and_passes_on_the_worker(
    world: dict[str, Any], start_worker: Callable[..., Worker], var_dir: Path
) -> None:
    worker = start_worker(f"g1-{SUFFIX}", POOL_A, "celery")  # -Q pool.<a>,celery
    bundle = runner_it._bundle(
        world, var_dir, f"RFP-IG-{SUFFIX[:6].upper()}", GOOD_HARNESS, SCENARIOS
    )
    criterion = {**copy.deepcopy(CRITERION), "claim": 40.0}  # the harness: 41.5 ms
    document = plan_document(
        bundle.rfp.reference,
        bundle.organisation.slug,
        criteria=[criterion],
        stop_loss=[{"id": "failed-run", "run_failed": True}],
    )
    plan = make_frozen_plan(bundle.rfp, bundle.organisation, world["labops"], document)
    GatePlan.objects.filter(pk=plan.pk).update(max_extra_runs=2)

    link = gate_campaign_start(
        plan=plan,
        gate="lab-validation",
        pool=world["pool_a"],
        actor=world["labops"],
        repetitions=1,
    )
    campaign = link.campaign
    runner_it._wait_for(
        lambda: Evaluation.objects.filter(campaign=campaign, verdict="PASS").exists(),
        180,
        lambda: runner_it._runs(campaign) + "\n" + worker.text()[-4000:],
        worker,
    )

    first, second = Evaluation.objects.filter(campaign=campaign).order_by("id")
    assert (first.verdict, first.more_runs_needed) == ("INCONCLUSIVE", 2)
    assert second.criterion_results.get().runs == 3
    top_up = GateCampaign.objects.get(after=first)
    assert (top_up.automatic, top_up.extra_runs, top_up.evaluation) == (
        True,
        2,
        second,
    )
    assert campaign.runs.filter(scenario_name="cold-c1").count() == 3
    assert {r.state for r in campaign.runs.all()} == {"succeeded"}
