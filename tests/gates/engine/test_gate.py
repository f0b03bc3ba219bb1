"""A gate's verdict: any triggered stop-loss halts it whatever the criteria say;
then a blocking FAIL, then a blocking INCONCLUSIVE; otherwise Keptn's score
(PASS 1, WARN ½, FAIL 0, weighted) against pass_pct and warn_pct."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from tests.gates.engine.support import (
    criterion,
    evaluate,
    plan,
    results,
    run,
    values,
)

PASSING = (176.2, 171.0, 178.9)


def passing_runs(**options: Any) -> list[dict[str, Any]]:
    return values(*PASSING, **options)


CEILING = {"id": "p999-ceiling", "metric": "ttft_ms", "stat": "p99.9",
           "scenario": "*", "above": 2000}  # fmt: skip
FLOOR = {"id": "iops-floor", "metric": "read_iops", "stat": "mean",
         "scenario": "cold-c32", "below": 1000}  # fmt: skip


def test_without_stop_loss_triggered_the_criteria_decide() -> None:
    doc = evaluate(
        plan(
            criterion(), stop_loss=[CEILING, {"id": "failed-run", "run_failed": True}]
        ),
        results(*passing_runs()),
    )

    assert doc["verdict"] == "PASS"
    assert doc["stop_loss"] == [
        {"id": "p999-ceiling", "triggered": False, "runs": [], "reason": ""},
        {"id": "failed-run", "triggered": False, "runs": [], "reason": ""},
    ]


def test_a_run_above_the_ceiling_halts_a_passing_gate() -> None:
    spike = run("r-9", 2310.5, scenario="warm", stat="p99.9", repetition=1)
    doc = evaluate(
        plan(criterion(), stop_loss=[CEILING]), results(*passing_runs(), spike)
    )

    assert doc["criteria"][0]["verdict"] == "PASS"
    assert doc["verdict"] == "HALTED"
    (hit,) = doc["stop_loss"]
    assert (hit["triggered"], hit["runs"]) == (True, ["r-9"])
    assert hit["reason"] == (
        "ttft_ms p99.9 in any scenario above 2000 ms on 1 run (r-9: 2310.5); "
        "the gate halts."
    )


def test_a_value_at_the_ceiling_does_not_trigger_it() -> None:
    at = run("r-9", 2000.0, stat="p99.9")
    doc = evaluate(plan(criterion(), stop_loss=[CEILING]), results(*passing_runs(), at))

    assert doc["verdict"] == "PASS"


def test_a_ceiling_on_one_scenario_ignores_the_others() -> None:
    ceiling = dict(CEILING, scenario="cold-c32")
    spike = run("r-9", 5000.0, scenario="warm", stat="p99.9")
    doc = evaluate(
        plan(criterion(), stop_loss=[ceiling]), results(*passing_runs(), spike)
    )

    assert doc["verdict"] == "PASS"


def test_a_failed_run_counts_for_a_ceiling() -> None:
    spike = run("r-9", 9000.0, stat="p99.9", status="failed")
    doc = evaluate(
        plan(criterion(), stop_loss=[CEILING]), results(*passing_runs(), spike)
    )

    assert doc["verdict"] == "HALTED"


def test_a_run_below_the_floor_halts_a_passing_gate() -> None:
    low = run("r-9", 999.5, metric="read_iops", stat="mean", unit="IOPS")
    doc = evaluate(plan(criterion(), stop_loss=[FLOOR]), results(*passing_runs(), low))

    assert doc["verdict"] == "HALTED"
    assert doc["stop_loss"][0]["runs"] == ["r-9"]
    assert "below 1000 IOPS on 1 run (r-9: 999.5)" in doc["stop_loss"][0]["reason"]


@pytest.mark.parametrize(
    ("at_least", "drift", "halted"),
    [
        ("major", "major", True),
        ("major", "minor", False),
        ("minor", "minor", True),
        ("minor", "major", True),
        ("minor", "none", False),
    ],
)
def test_environment_drift_halts_at_its_severity(
    at_least: str, drift: str, halted: bool
) -> None:
    runs = passing_runs()
    runs[1]["drift"] = drift
    stop = {"id": "env-drift", "drift_at_least": at_least}
    doc = evaluate(plan(criterion(), stop_loss=[stop]), results(*runs))

    assert doc["criteria"][0]["verdict"] == "PASS"
    assert doc["verdict"] == ("HALTED" if halted else "PASS")
    assert doc["stop_loss"][0]["runs"] == (["r-2"] if halted else [])


@pytest.mark.parametrize(("status", "halted"), [("failed", True), ("cancelled", False),
                                                ("pending", False)])  # fmt: skip
def test_a_failed_run_halts_a_passing_gate(status: str, halted: bool) -> None:
    extra = run("r-4", None, repetition=4, status=status)
    stop = {"id": "failed-run", "run_failed": True}
    doc = evaluate(plan(criterion(), stop_loss=[stop]), results(*passing_runs(), extra))

    assert doc["verdict"] == ("HALTED" if halted else "PASS")
    if halted:
        assert doc["stop_loss"][0]["reason"] == "1 run failed (r-4); the gate halts."


def test_halted_wins_over_a_blocking_failure() -> None:
    stop = {"id": "failed-run", "run_failed": True}
    runs = [*values(199.0, 200.0, 201.0), run("r-4", None, status="failed")]
    doc = evaluate(plan(criterion(), stop_loss=[stop]), results(*runs))

    assert doc["criteria"][0]["verdict"] == "FAIL"
    assert doc["verdict"] == "HALTED"


def test_a_blocking_failure_fails_the_gate_whatever_the_score() -> None:
    crits = [criterion(id=f"c{i}", weight=1) for i in range(9)]
    crits.append(criterion(id="bad", metric="tpot_ms", weight=0.01))
    doc = evaluate(
        plan(*crits, score={"pass_pct": 50, "warn_pct": 10}), results(*passing_runs())
    )

    assert doc["score_pct"] == 99.89
    assert doc["verdict"] == "FAIL"


def test_a_blocking_inconclusive_makes_the_gate_inconclusive() -> None:
    doc = evaluate(
        plan(criterion(), criterion(id="more", min_runs=5)), results(*passing_runs())
    )

    assert doc["verdict"] == "INCONCLUSIVE"
    assert doc["score_pct"] == 75.0


def _scored(
    verdicts: Sequence[tuple[str, float]], score: dict[str, float]
) -> dict[str, Any]:
    """A gate of non-blocking criteria with the given outcomes and weights:
    PASS (values in band), WARN (values over the band), INCONCLUSIVE (too few)."""
    crits = []
    for i, (outcome, weight) in enumerate(verdicts):
        options: dict[str, Any] = {"id": f"c{i}", "weight": weight, "blocking": False}
        if outcome == "WARN":
            options["claim"] = 100.0
        if outcome == "INCONCLUSIVE":
            options["min_runs"] = 9
        crits.append(criterion(**options))
    doc = evaluate(plan(*crits, score=score), results(*passing_runs()))
    assert [c["verdict"] for c in doc["criteria"]] == [v for v, _ in verdicts]
    return doc


@pytest.mark.parametrize(
    ("pass_pct", "warn_pct", "verdict"),
    [
        (95, 75, "PASS"),  # 95.0 at pass_pct: PASS
        (95.01, 75, "WARN"),
        (96, 95, "WARN"),  # at warn_pct: WARN
        (96, 95.01, "FAIL"),
    ],
)
def test_keptn_score_thresholds_at_and_around_the_edges(
    pass_pct: float, warn_pct: float, verdict: str
) -> None:
    outcomes = [("PASS", 1)] * 9 + [("WARN", 1)]  # (9 + ½) / 10 = 95 %
    doc = _scored(outcomes, {"pass_pct": pass_pct, "warn_pct": warn_pct})

    assert doc["score_pct"] == 95.0
    assert doc["verdict"] == verdict


def test_weights_count_in_the_score() -> None:
    doc = _scored([("PASS", 3), ("WARN", 1)], {"pass_pct": 90, "warn_pct": 87.5})

    assert doc["score_pct"] == 87.5  # (3 + ½) / 4
    assert doc["verdict"] == "WARN"
    heavy_warn = _scored([("PASS", 1), ("WARN", 3)], {"pass_pct": 90, "warn_pct": 75})
    assert heavy_warn["score_pct"] == 62.5
    assert heavy_warn["verdict"] == "FAIL"


def test_a_zero_weight_criterion_does_not_count() -> None:
    doc = _scored([("PASS", 1), ("WARN", 0)], {"pass_pct": 100, "warn_pct": 75})

    assert (doc["score_pct"], doc["verdict"]) == (100.0, "PASS")


def test_a_non_blocking_inconclusive_counts_half() -> None:
    doc = _scored([("PASS", 1), ("INCONCLUSIVE", 1)], {"pass_pct": 90, "warn_pct": 75})

    assert doc["score_pct"] == 75.0
    assert doc["verdict"] == "WARN"


def test_score_is_rounded_to_two_decimals() -> None:
    doc = _scored(
        [("PASS", 1), ("PASS", 1), ("WARN", 2)], {"pass_pct": 90, "warn_pct": 66.67}
    )

    assert doc["score_pct"] == 75.0
    thirds = _scored(
        [("PASS", 1), ("WARN", 1), ("WARN", 1)], {"pass_pct": 90, "warn_pct": 66.67}
    )
    assert thirds["score_pct"] == 66.67  # 2/3 shown and judged as 66.67
    assert thirds["verdict"] == "WARN"


def test_each_gate_of_a_plan_is_evaluated_in_order() -> None:
    from gates.lib.engine import evaluate_plan

    doc = plan(criterion())
    doc["gates"].append(dict(doc["gates"][0], name="pilot", stage="pilot"))
    got = evaluate_plan(doc, results(*passing_runs()))

    assert [g["gate"] for g in got] == ["lab-validation", "pilot"]
    assert got[0]["criteria"][0]["seed"] != got[1]["criteria"][0]["seed"]
