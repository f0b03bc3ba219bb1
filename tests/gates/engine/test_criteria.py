"""Each criterion is judged by the gate rules, in their order: the limit in
decimal (a value exactly at it passes), the values of succeeded runs only, not
measured → FAIL, too few runs, too much spread, the interval against the limit,
non-blocking → WARN."""

from __future__ import annotations

import math

import pytest

from tests.gates.engine.support import (
    criterion,
    evaluate,
    judge,
    measure,
    plan,
    results,
    run,
    values,
)


def test_a_value_exactly_at_the_band_edge_passes() -> None:
    got = judge(criterion(claim=180.0, band={"pct": 10}), 198.0, 198.0, 198.0)

    assert got["limit"] == 198.0
    assert got["ci"] == [198.0, 198.0]
    assert got["verdict"] == "PASS"


def test_a_value_just_over_the_band_edge_fails() -> None:
    over = 198.00000000000003  # the next double after 198.0
    got = judge(criterion(claim=180.0, band={"pct": 10}), over, over, over)

    assert got["verdict"] == "FAIL"


@pytest.mark.parametrize(
    ("direction", "claim", "band", "edge"),
    [
        # in binary floating point 0.1 + 0.7 is 0.7999999999999999 < 0.8
        ("lower", 0.1, {"abs": 0.7}, 0.8),
        # 0.2 * 1.15 is 0.22999999999999998 < 0.23
        ("lower", 0.2, {"pct": 15}, 0.23),
        # 1.1 - 0.2 is 0.9000000000000001 > 0.9
        ("higher", 1.1, {"abs": 0.2}, 0.9),
        # 1.1 * 0.9 is 0.9900000000000001 > 0.99
        ("higher", 1.1, {"pct": 10}, 0.99),
    ],
)
def test_band_edges_are_decimal_not_binary(
    direction: str, claim: float, band: dict[str, float], edge: float
) -> None:
    got = judge(
        criterion(direction=direction, claim=claim, band=band), edge, edge, edge
    )

    assert got["limit"] == edge
    assert got["verdict"] == "PASS", got["reason"]


@pytest.mark.parametrize(
    ("direction", "numbers", "verdict"),
    [
        ("lower", (176.2, 171.0, 178.9), "PASS"),
        ("lower", (199.0, 200.0, 201.0), "FAIL"),
        ("higher", (176.2, 171.0, 178.9), "PASS"),  # limit 162
        ("higher", (150.0, 155.0, 161.9), "FAIL"),
    ],
)
def test_both_directions(
    direction: str, numbers: tuple[float, ...], verdict: str
) -> None:
    got = judge(criterion(direction=direction), *numbers)

    assert got["limit"] == (198.0 if direction == "lower" else 162.0)
    assert got["verdict"] == verdict, got["reason"]


def test_absolute_band_lower_and_higher() -> None:
    lower = judge(criterion(band={"abs": 5}), 184.0, 185.0, 185.0)
    higher = judge(criterion(direction="higher", band={"abs": 5}), 175.0, 174.9, 176.0)

    assert (lower["limit"], lower["verdict"]) == (185.0, "PASS")
    assert (higher["limit"], higher["verdict"]) == (175.0, "INCONCLUSIVE")


def test_thresholds_without_a_claim() -> None:
    ceiling = criterion(claim=None, band=None, threshold=200)
    floor = criterion(claim=None, band=None, threshold=1000, direction="higher")

    assert judge(ceiling, 190.0, 195.0, 200.0)["verdict"] == "PASS"
    assert judge(ceiling, 201.0, 202.0, 203.0)["verdict"] == "FAIL"
    assert judge(floor, 1000.0, 1200.0, 1100.0)["verdict"] == "PASS"
    assert judge(floor, 900.0, 950.0, 999.0)["verdict"] == "FAIL"
    assert "required at most 200 ms" in judge(ceiling, 1.0, 1.0, 1.0)["reason"]


def test_the_reason_names_claim_band_estimate_interval_and_runs() -> None:
    got = judge(criterion(), 176.2, 171.0, 178.9)

    assert got["reason"] == (
        "ttft_ms p99 in cold-c32: claimed 180 ms, accepted up to 198 ms (+10 %); "
        "measured median 176.2 ms, 95 % interval 171.0\N{EN DASH}178.9 ms over 3 runs: "
        "within the limit."
    )
    assert (got["estimate"], got["ci"], got["cv_pct"]) == (176.2, [171.0, 178.9], 2.29)
    assert got["runs"] == ["r-1", "r-2", "r-3"]
    assert got["values"] == [176.2, 171.0, 178.9]
    assert got["more_runs_needed"] == 0


def test_a_fail_says_what_would_change_it() -> None:
    got = judge(criterion(), 199.0, 200.0, 201.0)

    assert "the whole interval is beyond the limit" in got["reason"]
    assert "upper end at or under 198 ms" in got["reason"]


def test_missing_metric_fails_as_not_measured() -> None:
    other = [run("r-1", 1.0, metric="tpot_ms"), run("r-2", 176.0, stat="p50")]
    doc = evaluate(plan(criterion()), results(*other))
    (got,) = doc["criteria"]

    assert got["verdict"] == "FAIL"
    assert "not measured" in got["reason"]
    assert (got["runs"], got["values"], got["estimate"], got["ci"]) == (
        [],
        [],
        None,
        None,
    )
    assert doc["verdict"] == "FAIL"


def test_a_metric_of_another_scenario_is_not_measured() -> None:
    doc = evaluate(
        plan(criterion()), results(*values(170.0, 171.0, 172.0, scenario="warm"))
    )

    assert doc["criteria"][0]["verdict"] == "FAIL"
    assert "not measured" in doc["criteria"][0]["reason"]


def test_failed_and_unfinished_runs_are_not_counted() -> None:
    runs = [
        *values(176.0, 177.0, 178.0),
        run("r-4", 900.0, repetition=4, status="failed"),
        run("r-5", 900.0, repetition=5, status="cancelled"),
        run("r-6", 900.0, repetition=6, status="pending"),
    ]
    got = evaluate(plan(criterion()), results(*runs))["criteria"][0]

    assert got["runs"] == ["r-1", "r-2", "r-3"]
    assert got["values"] == [176.0, 177.0, 178.0]
    assert got["verdict"] == "PASS"


def test_only_failed_runs_is_not_measured() -> None:
    runs = values(170.0, 171.0, 172.0, status="failed")
    got = evaluate(plan(criterion()), results(*runs))["criteria"][0]

    assert got["verdict"] == "FAIL"
    assert "not measured" in got["reason"]


def test_too_few_repetitions_are_inconclusive_with_the_runs_needed() -> None:
    doc = evaluate(plan(criterion(min_runs=5)), results(*values(176.0, 177.0)))
    (got,) = doc["criteria"]

    assert got["verdict"] == "INCONCLUSIVE"
    assert got["more_runs_needed"] == 3
    assert got["reason"].endswith(
        "over 2 runs: fewer runs than the 5 required; 3 more runs would let it "
        "be judged."
    )
    assert doc["verdict"] == "INCONCLUSIVE"


def test_high_spread_is_inconclusive_with_an_estimate_of_runs() -> None:
    got = judge(criterion(max_cv_pct=15), 100.0, 150.0, 190.0)
    cv = got["cv_pct"]

    assert cv > 15
    assert got["verdict"] == "INCONCLUSIVE"
    assert got["more_runs_needed"] == math.ceil(3 * (cv / 15) ** 2) - 3
    assert "vary too much" in got["reason"]


def test_high_spread_warns_when_the_plan_says_so() -> None:
    doc = evaluate(
        plan(criterion(max_cv_pct=15, on_high_cv="warn")),
        results(*values(100.0, 150.0, 190.0)),
    )

    assert doc["criteria"][0]["verdict"] == "WARN"
    assert doc["criteria"][0]["more_runs_needed"] > 0
    assert doc["verdict"] == "FAIL"  # score 50 % < warn 75 %


def test_high_spread_is_checked_before_the_band() -> None:
    """Values all far inside the band, but too spread out: not a PASS."""
    got = judge(criterion(max_cv_pct=5), 10.0, 20.0, 30.0)

    assert got["verdict"] == "INCONCLUSIVE"


def test_an_interval_straddling_the_limit_is_inconclusive() -> None:
    got = judge(criterion(), 180.0, 190.0, 200.0)  # limit 198

    assert got["verdict"] == "INCONCLUSIVE"
    # half-width toward the limit 10, margin 8: ceil(3 x (10/8)^2) = 5 runs
    assert got["more_runs_needed"] == 2
    assert got["reason"].endswith(
        ": the interval straddles the limit of 198 ms; about 2 more runs would "
        "decide it."
    )


def test_runs_needed_are_capped() -> None:
    got = judge(criterion(max_cv_pct=50), 190.0, 197.9, 205.0)  # margin 0.1

    assert got["verdict"] == "INCONCLUSIVE"
    assert got["more_runs_needed"] == 100


def test_non_blocking_failure_is_a_warning() -> None:
    tpot = criterion(id="tpot", metric="tpot_ms", claim=50.0)
    runs = [
        run(f"r-{i}", v, repetition=i, extra=[measure("tpot_ms", "p99", 40.0)])
        for i, v in enumerate((199.0, 200.0, 201.0), start=1)
    ]
    doc = evaluate(plan(criterion(blocking=False), tpot), results(*runs))

    assert [c["verdict"] for c in doc["criteria"]] == ["WARN", "PASS"]
    assert "Not blocking" in doc["criteria"][0]["reason"]
    assert doc["score_pct"] == 75.0
    assert doc["verdict"] == "WARN"


def test_non_blocking_not_measured_is_a_warning() -> None:
    got = evaluate(plan(criterion(blocking=False)), results())["criteria"][0]

    assert got["verdict"] == "WARN"
    assert "not measured" in got["reason"]


def test_one_run_has_no_spread_and_a_point_interval() -> None:
    got = judge(criterion(min_runs=1), 176.2)

    assert (got["cv_pct"], got["ci"], got["verdict"]) == (None, [176.2, 176.2], "PASS")


def test_extreme_values_are_judged_without_overflow() -> None:
    """Values that nearly cancel (a mean near 0, a huge CV) and the largest
    allowed magnitudes still give a document that can be written."""
    from gates.lib.engine import evaluation_bytes

    got = judge(criterion(), 1e100, -1e100, 0.30000000000000004, 9007199254740993)
    doc = evaluate(plan(criterion(min_runs=1)), results(*values(1e100, 5e-324)))

    assert got["verdict"] == "INCONCLUSIVE"
    assert got["cv_pct"] == 1e12  # capped
    assert "CV 1000000000000 %" in got["reason"]
    assert evaluation_bytes(doc)
