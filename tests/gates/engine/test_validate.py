"""Bad plans and results documents are refused with every problem at once, each
naming the field by its path; unknown keys are problems too."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gates.lib.engine import (
    InvalidDocument,
    evaluate_plan,
    plan_problems,
    results_problems,
)
from tests.gates.engine.support import criterion, plan, results, run, values


def messages(problems: list[Any]) -> list[str]:
    return [str(p) for p in problems]


def good_plan() -> dict[str, Any]:
    stop: list[dict[str, Any]] = [
        {
            "id": "p999",
            "metric": "ttft_ms",
            "stat": "p99.9",
            "scenario": "*",
            "above": 2000,
        },
        {"id": "env-drift", "drift_at_least": "major"},
        {"id": "failed-run", "run_failed": True},
    ]
    return plan(criterion(), criterion(id="b"), criterion(id="c"), stop_loss=stop)


def test_the_contract_example_is_valid() -> None:
    assert plan_problems(good_plan()) == []
    assert results_problems(results(*values(1.0, 2.0))) == []


def test_a_band_out_of_range_names_its_path() -> None:
    doc = good_plan()
    doc["gates"][0]["criteria"][2]["band"]["pct"] = 150

    assert messages(plan_problems(doc)) == [
        "gates[0].criteria[2].band.pct: must be between 0 and 100"
    ]


def test_every_problem_of_a_plan_at_once() -> None:
    doc = good_plan()
    gate = doc["gates"][0]
    gate["stage"] = "prod"
    gate["consecutive_passes"] = 0
    gate["score"] = {"pass_pct": 70, "warn_pct": 80}
    gate["colour"] = "red"
    c0, c1, c2 = gate["criteria"]
    c0.update(direction="up", stat="p42", min_runs=0, on_high_cv="ignore", weight=-1)
    c0["max_cv_pct"] = 0
    c1["id"] = "ttft-p99-cold-c32"
    c1["blocking"] = "yes"
    c1["band"] = {"pct": 5, "abs": 2}
    c2["threshold"] = 200
    del c2["scenario"]
    gate["stop_loss"][0]["below"] = 5
    gate["stop_loss"][1]["drift_at_least"] = "info"
    gate["stop_loss"][2]["run_failed"] = False

    assert messages(plan_problems(doc)) == [
        "gates[0].colour: is not a known field",
        "gates[0].stage: must be one of lab, pilot, rollout",
        "gates[0].consecutive_passes: must be at least 1",
        "gates[0].score.warn_pct: must not be over pass_pct",
        "gates[0].criteria[0].stat: must be one of mean, max, min, p50, p90, p95, "
        "p99, p99.5, p99.9, p99.99",
        "gates[0].criteria[0].direction: must be one of lower, higher",
        "gates[0].criteria[0].min_runs: must be at least 1",
        "gates[0].criteria[0].max_cv_pct: must be greater than 0",
        "gates[0].criteria[0].on_high_cv: must be one of inconclusive, warn",
        "gates[0].criteria[0].weight: must be at least 0",
        "gates[0].criteria[1].blocking: must be true or false",
        'gates[0].criteria[1].band: must be {"pct": number} or {"abs": number}',
        "gates[0].criteria[2].scenario: is required",
        "gates[0].criteria[2].threshold: give either claim with band or threshold, "
        "not both",
        "gates[0].criteria[2].band: only goes with a claim",
        "gates[0].criteria[1].id: names the criterion 'ttft-p99-cold-c32' again "
        "(as gates[0].criteria[0])",
        "gates[0].stop_loss[0]: must have exactly one of above, below",
        "gates[0].stop_loss[1].drift_at_least: must be one of minor, major",
        "gates[0].stop_loss[2].run_failed: must be true",
    ]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d.update(schema="reprogate.gate-plan/v2"),
         "schema: must be 'reprogate.gate-plan/v1'"),
        (lambda d: d.update(gates=[]), "gates: must not be empty"),
        (lambda d: d.pop("vendor"), "vendor: is required"),
        (lambda d: d["gates"][0].update(criteria=[]),
         "gates[0].criteria: must not be empty"),
        (lambda d: d["gates"][0]["criteria"][0].pop("band"),
         "gates[0].criteria[0].band: is required with a claim"),
        (lambda d: [d["gates"][0]["criteria"][0].pop(k) for k in ("band", "claim")],
         "gates[0].criteria[0].claim: give either claim with band or threshold"),
        (lambda d: d["gates"][0]["criteria"][0].update(claim=True),
         "gates[0].criteria[0].claim: must be a number"),
        (lambda d: d["gates"][0]["criteria"][0].update(claim=float("nan")),
         "gates[0].criteria[0].claim: must be a number"),
        (lambda d: d["gates"][0]["criteria"][0].update(band={"abs": -1}),
         "gates[0].criteria[0].band.abs: must be at least 0"),
        (lambda d: d["gates"][0]["criteria"][0].update(metric="TTFT ms"),
         "gates[0].criteria[0].metric: must be a lower_snake name"),
        (lambda d: d["gates"][0]["criteria"][0].update(min_runs=2.5),
         "gates[0].criteria[0].min_runs: must be an integer"),
        (lambda d: d["gates"][0]["stop_loss"].append({"id": "x", "run_failed": True,
                                                     "drift_at_least": "major"}),
         "gates[0].stop_loss[3]: must have exactly one of metric (with above or "
         "below), drift_at_least, run_failed"),
        (lambda d: d["gates"][0]["stop_loss"].append({"id": "p999",
                                                      "run_failed": True}),
         "gates[0].stop_loss[3].id: names the condition 'p999' again "
         "(as gates[0].stop_loss[0])"),
        (lambda d: d["gates"][0]["stop_loss"][0].pop("stat"),
         "gates[0].stop_loss[0].stat: is required"),
        (lambda d: d["gates"][0]["stop_loss"][1].update(extra=1),
         "gates[0].stop_loss[1].extra: is not a known field"),
        (lambda d: [c.update(weight=0) for c in d["gates"][0]["criteria"]],
         "gates[0].criteria: the weights must not all be 0"),
        (lambda d: d["gates"].append(copy.deepcopy(d["gates"][0])),
         "gates[1].name: names the gate 'lab-validation' again (as gates[0])"),
    ],
)  # fmt: skip
def test_single_plan_problems(change: Any, expected: str) -> None:
    doc = good_plan()
    change(doc)

    assert messages(plan_problems(doc)) == [expected]


def test_a_plan_that_is_not_an_object() -> None:
    assert messages(plan_problems([1])) == ["(document): must be a JSON object"]


def test_every_problem_of_results_at_once() -> None:
    bad = run("r-1", 1.0)
    bad.update(repetition=0, status="done", drift="info", colour=1)
    bad["metrics"][0].update(value="fast", stat="p100")
    bad["metrics"].append(dict(bad["metrics"][0], value=2.0))
    bad["metrics"].append({"name": "x", "stat": "max", "value": 1, "unit": 3,
                           "source": {"file": "f"}})  # fmt: skip
    doc = results(bad, run("r-1", 2.0), {"id": "r-3"})

    assert messages(results_problems(doc)) == [
        "runs[0].colour: is not a known field",
        "runs[0].repetition: must be at least 1",
        "runs[0].status: must be one of succeeded, failed, cancelled, pending",
        "runs[0].drift: must be one of none, minor, major",
        "runs[0].metrics[0].stat: must be one of mean, max, min, p50, p90, p95, "
        "p99, p99.5, p99.9, p99.99",
        "runs[0].metrics[0].value: must be a number",
        "runs[0].metrics[1].stat: must be one of mean, max, min, p50, p90, p95, "
        "p99, p99.5, p99.9, p99.99",
        "runs[0].metrics[2].unit: must be a string",
        "runs[0].metrics[2].source.key: is required",
        "runs[0].metrics[1]: reports ttft_ms p100 again (as runs[0].metrics[0])",
        "runs[2].scenario: is required",
        "runs[2].repetition: is required",
        "runs[2].status: is required",
        "runs[2].drift: is required",
        "runs[2].metrics: is required",
        "runs[1].id: names the run 'r-1' again (as runs[0])",
    ]


def test_evaluate_refuses_invalid_documents_with_all_problems() -> None:
    doc = good_plan()
    doc["gates"][0]["criteria"][0]["band"]["pct"] = -1
    with pytest.raises(InvalidDocument) as caught:
        evaluate_plan(doc, {"schema": "reprogate.results/v1", "runs": "none"})

    assert messages(caught.value.problems) == [
        "gates[0].criteria[0].band.pct: must be between 0 and 100",
        "runs: must be a list",
    ]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d["gates"][0].update(criteria=None),
         "gates[0].criteria: must be a list"),
        (lambda d: d["gates"][0]["criteria"][0].update(claim=1e101),
         "gates[0].criteria[0].claim: must be a number between -1e100 and 1e100"),
    ],
)  # fmt: skip
def test_odd_plan_values_are_problems_not_crashes(change: Any, expected: str) -> None:
    doc = good_plan()
    change(doc)

    assert messages(plan_problems(doc)) == [expected]


def test_odd_results_values_are_problems_not_crashes() -> None:
    doc = results(*values(1.0, 2.0))
    doc["runs"][0]["metrics"][0]["stat"] = ["p99"]
    doc["runs"][1]["metrics"][0]["value"] = -1e300

    assert messages(results_problems(doc)) == [
        "runs[0].metrics[0].stat: must be one of mean, max, min, p50, p90, p95, "
        "p99, p99.5, p99.9, p99.99",
        "runs[1].metrics[0].value: must be a number between -1e100 and 1e100",
    ]
