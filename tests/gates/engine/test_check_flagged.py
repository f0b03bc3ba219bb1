"""Stop-loss ``check_flagged``: a run flagged by one of the lab's anti-gaming
checks (``runs[].checks`` in the results document) halts the gate; bad entries
are refused with their path; documents without checks evaluate as before."""

from __future__ import annotations

from typing import Any

import pytest

from gates.lib.engine import plan_problems, results_problems
from gates.lib.engine.evaluate import evaluate_plan
from gates.lib.engine.validate import CHECKS
from tests.gates.engine.support import criterion, evaluate, plan, results, values

ALL = list(CHECKS)


def passing_runs(**flags: list[str]) -> list[dict[str, Any]]:
    """Three passing runs r-1…r-3; ``flags`` gives a run's flagged checks."""
    runs = values(170.0, 175.0, 172.0)
    for run in runs:
        if run["id"].replace("-", "_") in flags:
            run["checks"] = flags[run["id"].replace("-", "_")]
    return runs


@pytest.mark.parametrize("check", CHECKS)
def test_each_check_can_halt_a_passing_gate(check: str) -> None:
    stop = {"id": "anti-gaming", "check_flagged": ALL}

    doc = evaluate(
        plan(criterion(), stop_loss=[stop]), results(*passing_runs(r_2=[check]))
    )

    assert doc["criteria"][0]["verdict"] == "PASS"
    assert doc["verdict"] == "HALTED"
    assert doc["stop_loss"][0]["runs"] == ["r-2"]
    assert doc["stop_loss"][0]["reason"] == (
        f"anti-gaming check {check} flagged on 1 run (r-2); the gate halts."
    )


def test_a_single_id_halts_only_on_that_check() -> None:
    stop = {"id": "seed", "check_flagged": "seed_ignored"}
    runs = passing_runs(r_1=["cold_cache_unproven"], r_3=["seed_ignored"])

    doc = evaluate(plan(criterion(), stop_loss=[stop]), results(*runs))

    assert doc["verdict"] == "HALTED"
    assert doc["stop_loss"][0]["runs"] == ["r-3"]


def test_checks_not_named_do_not_halt() -> None:
    stop = {"id": "cache", "check_flagged": ["cold_cache_unproven"]}
    runs = passing_runs(r_1=["seed_ignored", "working_set_fits_in_memory"])

    doc = evaluate(plan(criterion(), stop_loss=[stop]), results(*runs))

    assert doc["verdict"] == "PASS"
    assert doc["stop_loss"][0] == {
        "id": "cache", "triggered": False, "runs": [], "reason": ""
    }  # fmt: skip


def test_several_flags_on_several_runs_are_all_named() -> None:
    stop = {"id": "anti-gaming", "check_flagged": ALL}
    runs = passing_runs(r_1=["working_set_fits_in_memory"], r_2=["seed_ignored"])

    doc = evaluate(plan(criterion(), stop_loss=[stop]), results(*runs))

    assert doc["stop_loss"][0]["reason"] == (
        "anti-gaming checks seed_ignored and working_set_fits_in_memory flagged on "
        "2 runs (r-1, r-2); the gate halts."
    )


def test_a_plan_without_check_flagged_ignores_the_checks() -> None:
    flagged = results(*passing_runs(r_1=ALL))
    plain = results(*passing_runs())
    doc = plan(criterion(), stop_loss=[{"id": "failed-run", "run_failed": True}])

    (with_checks,) = evaluate_plan(doc, flagged)
    (without,) = evaluate_plan(doc, plain)

    def unseeded(doc: dict[str, Any]) -> list[dict[str, Any]]:
        # the bootstrap's seed comes from the documents' digests
        return [{k: v for k, v in c.items() if k != "seed"} for c in doc["criteria"]]

    assert with_checks["verdict"] == without["verdict"] == "PASS"
    assert unseeded(with_checks) == unseeded(without)
    assert with_checks["stop_loss"] == without["stop_loss"]


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ({"id": "x", "check_flagged": "seed_ignore"},
         "gates[0].stop_loss[0].check_flagged: must name seed_ignored, "
         "cold_cache_unproven, working_set_fits_in_memory"),
        ({"id": "x", "check_flagged": []},
         "gates[0].stop_loss[0].check_flagged: must be a check id or a non-empty "
         "list of them"),
        ({"id": "x", "check_flagged": True},
         "gates[0].stop_loss[0].check_flagged: must be a check id or a non-empty "
         "list of them"),
        ({"id": "x", "check_flagged": ["seed_ignored", 3]},
         "gates[0].stop_loss[0].check_flagged[1]: must name seed_ignored, "
         "cold_cache_unproven, working_set_fits_in_memory"),
        ({"id": "x", "check_flagged": ["seed_ignored", "seed_ignored"]},
         "gates[0].stop_loss[0].check_flagged[1]: names seed_ignored again"),
        ({"check_flagged": "seed_ignored"}, "gates[0].stop_loss[0].id: is required"),
        ({"id": "x", "check_flagged": "seed_ignored", "scope": "all"},
         "gates[0].stop_loss[0].scope: is not a known field"),
        ({"id": "x", "check_flagged": "seed_ignored", "run_failed": True},
         "gates[0].stop_loss[0]: must have exactly one of metric (with above or "
         "below), drift_at_least, run_failed, check_flagged"),
    ],
)  # fmt: skip
def test_bad_check_flagged_entries_name_their_path(
    entry: dict[str, Any], expected: str
) -> None:
    problems = plan_problems(plan(criterion(), stop_loss=[entry]))

    assert [str(p) for p in problems] == [expected]


@pytest.mark.parametrize(
    ("checks", "expected"),
    [
        ("seed_ignored", "runs[0].checks: must be a list"),
        (["Seed Ignored"], "runs[0].checks[0]: must be a lower_snake check id"),
        (
            ["seed_ignored", "seed_ignored"],
            "runs[0].checks[1]: names seed_ignored again",
        ),
    ],
)
def test_bad_run_checks_in_results_name_their_path(checks: Any, expected: str) -> None:
    runs = passing_runs()
    runs[0]["checks"] = checks

    assert [str(p) for p in results_problems(results(*runs))] == [expected]


def test_a_check_this_engine_does_not_know_is_kept_in_results() -> None:
    runs = passing_runs(r_1=["gpu_clock_pinned"])

    assert results_problems(results(*runs)) == []
