"""Builders of gate plans and results documents for the engine's tests (and the
Django tests' criterion: nothing here may import Django)."""

from __future__ import annotations

import copy
from typing import Any

from gates.lib.engine import evaluate_plan

# A claim of TTFT p99 180 ms in cold-c32 judged with the default plan's settings
# (``gates.services.plan_documents.default_plan``): band 10 %, 3 runs, CV 15 % or
# inconclusive,
# blocking, weight 1; and the default plan's stop-loss.
CRITERION: dict[str, Any] = {
    "id": "ttft-p99-cold-c32",
    "metric": "ttft_ms",
    "stat": "p99",
    "scenario": "cold-c32",
    "direction": "lower",
    "claim": 180.0,
    "band": {"pct": 10},
    "min_runs": 3,
    "max_cv_pct": 15,
    "on_high_cv": "inconclusive",
    "blocking": True,
    "weight": 1,
}
STOP_LOSS: list[dict[str, Any]] = [
    {"id": "env-drift", "drift_at_least": "major"},
    {"id": "failed-run", "run_failed": True},
]


def criterion(**overrides: Any) -> dict[str, Any]:
    """A copy of ``CRITERION`` with ``overrides`` (None removes the field)."""
    base = copy.deepcopy(CRITERION) | overrides
    return {k: v for k, v in base.items() if v is not None}


def plan(
    *criteria: dict[str, Any],
    stop_loss: list[dict[str, Any]] | None = None,
    score: dict[str, Any] | None = None,
    name: str = "lab-validation",
) -> dict[str, Any]:
    return {
        "schema": "reprogate.gate-plan/v1",
        "rfp": "RFP-DEMO-2",
        "vendor": "acme-flash",
        "gates": [
            {
                "name": name,
                "stage": "lab",
                "consecutive_passes": 1,
                "score": score or {"pass_pct": 90, "warn_pct": 75},
                "criteria": list(criteria) or [criterion()],
                "stop_loss": stop_loss or [],
            }
        ],
    }


def run(
    run_id: str,
    value: float | None = None,
    *,
    scenario: str = "cold-c32",
    repetition: int = 1,
    status: str = "succeeded",
    drift: str = "none",
    metric: str = "ttft_ms",
    stat: str = "p99",
    unit: str = "ms",
    extra: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    metrics = [] if value is None else [measure(metric, stat, value, unit)]
    return {
        "id": run_id,
        "scenario": scenario,
        "repetition": repetition,
        "status": status,
        "drift": drift,
        "metrics": metrics + (extra or []),
    }


def measure(name: str, stat: str, value: float, unit: str = "ms") -> dict[str, Any]:
    return {
        "name": name,
        "stat": stat,
        "value": value,
        "unit": unit,
        "source": {"file": "metrics.json", "key": f"metrics[{name}.{stat}].value"},
    }


def results(*runs: dict[str, Any]) -> dict[str, Any]:
    return {"schema": "reprogate.results/v1", "runs": list(runs)}


def values(*numbers: float, **run_options: Any) -> list[dict[str, Any]]:
    """Succeeded runs r-1… of the scenario, one value each."""
    return [
        run(f"r-{i}", v, repetition=i, **run_options)
        for i, v in enumerate(numbers, start=1)
    ]


def evaluate(plan_doc: dict[str, Any], results_doc: dict[str, Any]) -> dict[str, Any]:
    """The (only) gate's evaluation."""
    (doc,) = evaluate_plan(plan_doc, results_doc)
    return doc


def judge(crit: dict[str, Any], *numbers: float) -> dict[str, Any]:
    """The criterion's evaluation over succeeded runs with these values."""
    return evaluate(plan(crit), results(*values(*numbers)))["criteria"][0]
