"""Criteria held to the buyer's baseline (its current infrastructure): the limit
is the baseline runs' median ± pct on the worse side, in decimal; baseline runs
are never judged as the vendor's, nor seen by stop-loss; no baseline measured →
FAIL "baseline not measured"; bad baseline criteria are refused with paths."""

from __future__ import annotations

from typing import Any

import pytest

from gates.lib.engine import evaluate_plan, plan_problems, results_problems
from tests.gates.engine.support import (
    STOP_LOSS,
    criterion,
    evaluate,
    plan,
    results,
    run,
    values,
)


def relative(pct: float = 10, scenario: str = "base-c32", **kw: Any) -> dict[str, Any]:
    """The default criterion held to the baseline instead of a claim."""
    return criterion(claim=None, band=None, baseline={"scenario": scenario,
                     "pct": pct}, **kw)  # fmt: skip


def baseline_runs(*numbers: float, scenario: str = "base-c32",
                  **options: Any) -> list[dict[str, Any]]:  # fmt: skip
    return [
        run(f"b-{i}", v, scenario=scenario, repetition=i, **options)
        | {"role": "baseline"}
        for i, v in enumerate(numbers, start=1)
    ]


def test_limit_is_the_baseline_median_plus_pct_for_lower() -> None:
    doc = evaluate(
        plan(relative(10)),
        results(*values(176.2, 171.0, 178.9), *baseline_runs(210.0, 190.0, 200.0)),
    )

    (got,) = doc["criteria"]
    assert got["limit"] == 220.0
    assert got["baseline"] == {
        "scenario": "base-c32", "runs": ["b-1", "b-2", "b-3"],
        "values": [210.0, 190.0, 200.0], "median": 200.0,
    }  # fmt: skip
    assert got["runs"] == ["r-1", "r-2", "r-3"]
    assert got["verdict"] == "PASS"
    assert "baseline median 200.0 ms in base-c32 over 3 runs" in got["reason"]
    assert "accepted up to 220 ms (+10 %)" in got["reason"]


def test_limit_is_exact_in_decimal_and_a_value_at_it_passes() -> None:
    # 0.2 * 1.15 is 0.22999999999999998 in binary floating point
    at_limit = values(0.23, 0.23, 0.23)
    doc = evaluate(plan(relative(15)), results(*at_limit, *baseline_runs(0.2)))

    assert doc["criteria"][0]["limit"] == 0.23
    assert doc["criteria"][0]["verdict"] == "PASS"


def test_higher_is_better_takes_pct_below_the_median() -> None:
    c = relative(10, direction="higher", metric="tokens_per_s", stat="mean")
    opts = {"metric": "tokens_per_s", "stat": "mean", "unit": "tok/s"}
    doc = evaluate(
        plan(c),
        results(*values(80.0, 81.0, 80.5, **opts), *baseline_runs(100.0, 98.0, **opts)),
    )

    (got,) = doc["criteria"]
    assert (got["limit"], got["baseline"]["median"]) == (89.1, 99.0)
    assert got["verdict"] == "FAIL"
    assert "accepted down to 89.1 tok/s (-10 %)" in got["reason"]


def test_no_baseline_run_measured_fails_baseline_not_measured() -> None:
    failed = baseline_runs(150.0, status="failed")
    doc = evaluate(plan(relative()), results(*values(176.2, 171.0, 178.9), *failed))

    (got,) = doc["criteria"]
    assert (got["verdict"], got["limit"], got["estimate"]) == ("FAIL", None, None)
    assert got["baseline"] == {"scenario": "base-c32", "runs": [], "values": [],
                               "median": None}  # fmt: skip
    assert "baseline not measured" in got["reason"]
    assert "base-c32" in got["reason"]
    assert doc["verdict"] == "FAIL"


def test_baseline_not_measured_warns_when_not_blocking() -> None:
    doc = evaluate(plan(relative(blocking=False)), results(*values(1.0, 1.0, 1.0)))

    assert doc["criteria"][0]["verdict"] == "WARN"
    assert "baseline not measured" in doc["criteria"][0]["reason"]


def test_baseline_runs_in_the_vendors_scenario_are_not_the_vendors_runs() -> None:
    # the baseline ran the same scenario name: its runs give only the limit
    base = baseline_runs(100.0, 100.0, 100.0, scenario="cold-c32")
    doc = evaluate(plan(relative(scenario="cold-c32")), results(*base))

    (got,) = doc["criteria"]
    assert got["runs"] == []
    assert got["limit"] == 110.0
    assert "not measured: no succeeded run of cold-c32" in got["reason"]


def test_stop_loss_never_sees_baseline_runs() -> None:
    bad = [r | {"id": "b-x"} for r in baseline_runs(150.0, status="failed",
                                                     drift="major")]  # fmt: skip
    doc = evaluate(
        plan(relative(), stop_loss=STOP_LOSS),
        results(*values(176.2, 171.0, 178.9), *baseline_runs(200.0), *bad),
    )

    assert [s["triggered"] for s in doc["stop_loss"]] == [False, False]
    assert doc["verdict"] == "PASS"


def test_role_vendor_is_the_same_as_no_role() -> None:
    vendor = [r | {"role": "vendor"} for r in values(176.2, 171.0, 178.9)]
    doc = evaluate(plan(criterion()), results(*vendor))

    assert doc["criteria"][0]["runs"] == ["r-1", "r-2", "r-3"]
    assert "baseline" not in doc["criteria"][0]


def test_plans_without_baselines_do_not_change() -> None:
    # a claim criterion never carries a baseline field, whatever the results hold
    (doc,) = evaluate_plan(
        plan(criterion()), results(*values(176.2, 171.0, 178.9), *baseline_runs(1.0))
    )

    assert set(doc["criteria"][0]) == {
        "id", "verdict", "reason", "runs", "values", "estimate", "ci", "ci_level",
        "limit", "cv_pct", "more_runs_needed", "seed",
    }  # fmt: skip
    assert doc["criteria"][0]["limit"] == 198.0


@pytest.mark.parametrize(
    ("baseline", "extra", "expected"),
    [
        ({"scenario": "base", "pct": 10}, {"claim": 1.0},
         ["gates[0].criteria[0].claim: does not go with a baseline (give one or "
          "the other)"]),
        ({"scenario": "base", "pct": 10}, {"threshold": 1.0, "band": {"pct": 5}},
         ["gates[0].criteria[0].band: does not go with a baseline (give one or the "
          "other)", "gates[0].criteria[0].threshold: does not go with a baseline "
          "(give one or the other)"]),
        ({"scenario": "base"}, {}, ["gates[0].criteria[0].baseline.pct: is required"]),
        ({"pct": 5}, {}, ["gates[0].criteria[0].baseline.scenario: is required"]),
        ({"scenario": " ", "pct": 5}, {},
         ["gates[0].criteria[0].baseline.scenario: must be a non-empty string"]),
        ({"scenario": "base", "pct": 150}, {},
         ["gates[0].criteria[0].baseline.pct: must be between 0 and 100"]),
        ({"scenario": "base", "pct": "10"}, {},
         ["gates[0].criteria[0].baseline.pct: must be a number"]),
        ({"scenario": "base", "pct": 5, "abs": 1}, {},
         ["gates[0].criteria[0].baseline.abs: is not a known field"]),
        ("base", {}, ["gates[0].criteria[0].baseline: must be an object"]),
    ],
)  # fmt: skip
def test_bad_baseline_criteria_are_refused_with_their_paths(
    baseline: Any, extra: dict[str, Any], expected: list[str]
) -> None:
    doc = plan(criterion(**({"claim": None, "band": None} | extra), baseline=baseline))

    assert [str(p) for p in plan_problems(doc)] == expected


def test_a_run_role_other_than_vendor_or_baseline_is_refused() -> None:
    doc = results(run("r-1", 1.0) | {"role": "buyer"})

    assert [str(p) for p in results_problems(doc)] == [
        "runs[0].role: must be one of vendor, baseline"
    ]
