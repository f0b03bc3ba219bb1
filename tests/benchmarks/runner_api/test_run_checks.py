"""The runner API and the run's seed and checks: the claim gives the lab's seed
and the declared outputs, ``finish`` records the checks the host made when its
signed statement names the same ones and the run's seed; malformed checks, or
checks and a seed the statement does not name, leave the run running."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from benchmarks.models import Campaign, Run
from tests.benchmarks.runner.support import runs_of
from tests.benchmarks.runner_api.support import (
    claim,
    finish,
    hello,
    put_output,
    signed_statement,
    started,
)

pytestmark = pytest.mark.django_db

METRICS = (
    b'{"metrics": [{"name": "read_iops", "stat": "mean", "value": 1, "unit": "IO/s"}]}'
)
CHECKS = [
    {"id": "seed_ignored", "applicable": True, "flagged": True,
     "detail": "Same outputs with seed 1 and seed 2.",
     "values": {"seed": 1, "second_seed": 2}},
    {"id": "cold_cache_unproven", "applicable": False, "flagged": False,
     "detail": "A warm-cache scenario.", "values": {}},
]  # fmt: skip


@pytest.fixture
def live(agent: APIClient, campaign: Campaign) -> Run:
    run = runs_of(campaign)[0]
    started(agent, run)
    assert put_output(agent, run, "metrics.json", METRICS).status_code == 201
    return Run.objects.get(pk=run.pk)


def test_every_run_gets_its_own_seed_in_the_lab_s_range(campaign: Campaign) -> None:
    seeds = [run.seed for run in runs_of(campaign)]

    assert all(isinstance(s, int) and 0 <= s < 1 << 53 for s in seeds)  # JSON-exact
    assert len(set(seeds)) == len(seeds)


def test_the_claim_gives_the_seed_and_the_declared_outputs(
    agent: APIClient, campaign: Campaign
) -> None:
    run = runs_of(campaign)[0]
    hello(agent)

    got = claim(agent, run).json()["run"]

    assert got["seed"] == run.seed
    assert got["outputs"] == ["metrics.json"]


def test_finish_records_the_checks_its_statement_names(
    agent: APIClient, live: Run
) -> None:
    response = finish(agent, live, outputs={"metrics.json": METRICS}, checks=CHECKS)

    assert response.status_code == 200, response.json()
    live.refresh_from_db()
    assert live.state == Run.State.SUCCEEDED, live.reason
    assert live.checks == CHECKS


def test_checks_the_statement_does_not_name_are_refused(
    agent: APIClient, live: Run
) -> None:
    statement = signed_statement(live, outputs={"metrics.json": METRICS})

    response = finish(agent, live, statement=statement, checks=CHECKS)

    assert (response.status_code, response.json()["code"]) == (
        400,
        "statement_mismatch",
    )
    assert "its checks are not the ones the finish sends" in response.json()["detail"]
    live.refresh_from_db()
    assert (live.state, live.checks) == (Run.State.RUNNING, [])


def test_a_statement_with_another_seed_is_refused(agent: APIClient, live: Run) -> None:
    statement = signed_statement(
        live, outputs={"metrics.json": METRICS}, predicate={"seed": 12345}
    )

    response = finish(agent, live, statement=statement)

    assert response.status_code == 400
    assert f"the lab issued {live.seed}" in response.json()["detail"]
    assert Run.objects.get(pk=live.pk).state == Run.State.RUNNING


@pytest.mark.parametrize(
    ("checks", "where"),
    [
        ([{**CHECKS[0], "id": "made_up"}], "checks[0].id"),
        ([{**CHECKS[0], "flagged": "yes"}], "checks[0].flagged"),
        ([CHECKS[0], CHECKS[0]], "checks[1].id"),
    ],
)
def test_malformed_checks_are_refused_with_their_path(
    agent: APIClient, live: Run, checks: list[dict[str, Any]], where: str
) -> None:
    response = finish(agent, live, outputs={"metrics.json": METRICS}, checks=checks)

    assert (response.status_code, response.json()["code"]) == (400, "checks_invalid")
    assert where in response.json()["detail"]
    assert Run.objects.get(pk=live.pk).state == Run.State.RUNNING
