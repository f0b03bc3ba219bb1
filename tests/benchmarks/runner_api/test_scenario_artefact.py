"""A scenario driver's ``scenario.json`` through the runner-artefact route: a
document that does not decode is refused; an accepted one is deposited with
the outputs, its metrics join the run's with ``method: "scenario"`` (so a gate
criterion on ``failover_recovery_s`` is judged on them) and its series are
stored; a run whose driver failed ends failed with stop reason
``scenario_failed`` and the driver's sentence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from benchmarks.lib.lab.scenario_document import encode
from benchmarks.lib.lab.scenarios.base import metric
from benchmarks.models import Campaign, Run, RunMetric, RunSeries
from gates.lib.engine import evaluate_plan
from gates.selectors.results import results_document
from tests.benchmarks.runner.support import runs_of
from tests.benchmarks.runner_api.support import finish, put_output, started
from tests.benchmarks.runner_api.test_artefacts import METRICS, put_artefact
from tests.gates.engine.support import criterion, plan

pytestmark = pytest.mark.django_db

DOCUMENT = encode(
    "failover",
    [
        metric("failover_recovery_s", "mean", 0.85, "s", "series throughput: back"),
        metric("failover_errors", "mean", 1204, "count", "series errors: sum"),
    ],
    [{"name": "failover_throughput", "unit": "MiB/s", "points": [[1, 9.5], [2, 9.9]]}],
    {"actions": [{"verb": "start", "at_s": 3.0}, {"verb": "stop", "at_s": 5.0}]},
)


@pytest.fixture
def live(agent: APIClient, campaign: Campaign) -> Run:
    run = runs_of(campaign)[0]
    started(agent, run)
    return Run.objects.get(pk=run.pk)


def test_scenario_metrics_join_the_run_s_and_a_gate_judges_them(
    live: Run, agent: APIClient, runner_work_dir: Path
) -> None:
    assert put_artefact(agent, live, "scenario.json", DOCUMENT).status_code == 201
    put_output(agent, live, "metrics.json", METRICS)

    done = finish(
        agent,
        live,
        outputs={"metrics.json": METRICS},
        artefacts={"scenario.json": DOCUMENT},
    )

    assert done.json() == {"state": "succeeded"}
    derived = RunMetric.objects.filter(run=live, method="scenario")
    assert {(m.name, m.stat, m.value) for m in derived} == {
        ("failover_recovery_s", "mean", 0.85),
        ("failover_errors", "mean", 1204.0),
    }
    assert {m.source_path for m in derived} == {"runner:scenario.json"}
    (series,) = RunSeries.objects.filter(run=live, name="failover_throughput")
    assert series.points == [[1.0, 9.5], [2.0, 9.9]]
    live.refresh_from_db()
    assert live.output_deposit is not None
    paths = {i.path for i in live.output_deposit.items.all()}
    assert "runner/scenario.json" in paths
    results = results_document(campaign=live.campaign)
    recovery = criterion(
        id="recovery", metric="failover_recovery_s", stat="mean",
        scenario=live.scenario_name, claim=None, band=None, threshold=2.5,
        min_runs=1,
    )  # fmt: skip
    (evaluation,) = evaluate_plan(plan(recovery), results)
    (judged,) = evaluation["criteria"]
    assert judged["values"] == [0.85]
    assert judged["verdict"] == "PASS"


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"{}", "schema"),
        (
            json.dumps(
                {
                    "schema": "reprogate.scenario/v1",
                    "kind": "failover",
                    "metrics": [
                        {"name": "Bad", "stat": "mean", "value": 1, "unit": "s"}
                    ],
                }
            ).encode(),
            "metrics[0].name",
        ),
    ],
)
def test_a_scenario_document_that_does_not_decode_is_refused(
    live: Run, agent: APIClient, runner_work_dir: Path, data: bytes, says: str
) -> None:
    response = put_artefact(agent, live, "scenario.json", data)

    assert response.status_code == 400
    assert response.json()["code"] == "artefact_invalid"
    assert says in response.json()["detail"]


def test_a_driver_s_failure_fails_the_run_with_its_sentence(
    live: Run, agent: APIClient, runner_work_dir: Path
) -> None:
    put_artefact(agent, live, "scenario.json", DOCUMENT)
    sentence = "The pool's fault hook failed to start 'pause' at 3.0 s: no export"

    done = finish(
        agent,
        live,
        artefacts={"scenario.json": DOCUMENT},
        stop_reason="scenario_failed",
        message=sentence,
    )

    assert done.json() == {"state": "failed"}
    live.refresh_from_db()
    assert live.stop_reason == "scenario_failed"
    assert sentence in live.reason
