"""``default_plan``: a vendor's claims and the contract's terms as a
``reprogate.gate-plan/v1`` the engine accepts — directions from the metric, the
RFP's tolerance band, unique criterion ids, the stated defaults, and every bad
input refused with the path of the problem."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from gates.lib.engine import evaluate_plan, plan_problems
from gates.services.plan_documents import (
    PlanProblems,
    default_plan,
    is_latency,
    metric_direction,
    rfp_terms,
)
from procurement.models import Rfp
from tests.gates.engine.support import CRITERION, STOP_LOSS

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TERMS = {"tolerance_pct": Decimal("10.00")}


def claim(metric: str = "ttft_ms", **extra: Any) -> dict[str, Any]:
    return {
        "metric": metric,
        "stat": "p99",
        "scenario": "cold-c32",
        "value": 180.0,
        "unit": "ms",
        **extra,
    }


def plan_for(claims: list[Any], terms: dict[str, Any] = TERMS) -> dict[str, Any]:
    return default_plan(
        rfp_reference="RFP-DEMO-2", vendor="acme-flash", claims=claims, terms=terms
    )


def problems(claims: list[Any], terms: dict[str, Any] = TERMS) -> dict[str, str]:
    with pytest.raises(PlanProblems) as raised:
        plan_for(claims, terms)
    return {p.path or "": p.code for p in raised.value.problems}


@pytest.mark.parametrize(
    ("metric", "direction"),
    [
        ("ttft_ms", "lower"),
        ("tpot_ms", "lower"),
        ("itl_ms", "lower"),
        ("e2e_latency_ms", "lower"),
        ("read_clat_us", "lower"),
        ("write_clat_us", "lower"),
        ("model_load_s", "lower"),
        ("kv_ssd_read_us", "lower"),
        ("prefix_recompute_pct", "lower"),
        ("ssd_write_amplification", "lower"),
        ("request_error_rate", "lower"),
        ("request_throughput_rps", "higher"),
        ("output_token_throughput_tps", "higher"),
        ("read_iops", "higher"),
        ("write_iops", "higher"),
        ("read_bw_mib_s", "higher"),
        ("write_bw_gib_s", "higher"),
        ("cache_hit_rate", "higher"),
        ("ssd_tier_hit_rate", "higher"),
        ("gpu_util_pct", "higher"),
        ("requests", None),
        ("queue_depth", None),
        ("power_w", None),
    ],
)
def test_direction_from_the_metric(metric: str, direction: str | None) -> None:
    assert metric_direction(metric) == direction


def test_bandwidth_in_per_second_units_is_not_a_time() -> None:
    assert metric_direction("read_bw_mib_s") == "higher"
    assert not is_latency("read_bw_mib_s")
    assert is_latency("model_load_s")
    assert not is_latency("prefix_recompute_pct")


def test_plan_has_three_gates_with_the_stated_defaults() -> None:
    plan = plan_for([claim()])

    assert plan["schema"] == "reprogate.gate-plan/v1"
    assert (plan["rfp"], plan["vendor"]) == ("RFP-DEMO-2", "acme-flash")
    assert [(g["name"], g["stage"]) for g in plan["gates"]] == [
        ("lab-validation", "lab"),
        ("pilot", "pilot"),
        ("rollout", "rollout"),
    ]
    for gate in plan["gates"]:
        assert gate["consecutive_passes"] == 1
        assert gate["score"] == {"pass_pct": 90, "warn_pct": 75}
        # band 10 %, 3 runs, CV 15 % or inconclusive, blocking, weight 1
        assert gate["criteria"] == [CRITERION]
        assert gate["stop_loss"] == STOP_LOSS
    assert plan_problems(plan) == []


def test_gates_do_not_share_objects() -> None:
    plan = plan_for([claim()])

    plan["gates"][0]["criteria"][0]["band"]["pct"] = 50
    plan["gates"][0]["stop_loss"].clear()

    assert plan["gates"][1]["criteria"][0]["band"] == {"pct": 10}
    assert len(plan["gates"][1]["stop_loss"]) == 2


@pytest.mark.parametrize(
    ("tolerance", "pct"),
    [
        (Decimal("10.00"), 10),
        (Decimal("7.50"), 7.5),
        ("0", 0),
        (100, 100),
        (2.25, 2.25),
    ],
)
def test_band_is_the_contracts_tolerance(tolerance: Any, pct: float) -> None:
    plan = plan_for([claim()], {"tolerance_pct": tolerance})

    assert plan["gates"][0]["criteria"][0]["band"] == {"pct": pct}
    assert plan_problems(plan) == []


def test_terms_come_from_the_rfp() -> None:
    rfp = Rfp(reference="RFP-X", retest_tolerance_pct=Decimal("12.50"))

    assert rfp_terms(rfp) == {"tolerance_pct": Decimal("12.50")}
    plan = plan_for([claim()], rfp_terms(rfp))
    assert plan["gates"][0]["criteria"][0]["band"] == {"pct": 12.5}


def test_band_edge_is_the_claim_plus_tolerance_for_the_engine() -> None:
    plan = plan_for([claim(value=180.0)])
    runs = [
        {"id": f"r-{n}", "scenario": "cold-c32", "repetition": n,
         "status": "succeeded", "drift": "none",
         "metrics": [{"name": "ttft_ms", "stat": "p99", "value": 198.0, "unit": "ms",
                      "source": {"file": "metrics.json", "key": "k"}}]}
        for n in (1, 2, 3)
    ]  # fmt: skip

    evaluation = evaluate_plan(plan, {"schema": "reprogate.results/v1", "runs": runs})

    criterion = evaluation[0]["criteria"][0]
    assert criterion["limit"] == 198.0
    assert criterion["verdict"] == "PASS"


def test_directions_per_criterion_and_higher_is_better_for_throughput() -> None:
    claims = [
        claim("ttft_ms"),
        claim("output_token_throughput_tps", stat="mean", value=1100.0),
        claim("cache_hit_rate", stat="mean", value=0.75),
        claim("prefix_recompute_pct", stat="mean", value=14.0),
        claim("ssd_write_amplification", stat="mean", value=1.2),
    ]

    criteria = plan_for(claims)["gates"][0]["criteria"]

    assert [(c["metric"], c["direction"]) for c in criteria] == [
        ("ttft_ms", "lower"),
        ("output_token_throughput_tps", "higher"),
        ("cache_hit_rate", "higher"),
        ("prefix_recompute_pct", "lower"),
        ("ssd_write_amplification", "lower"),
    ]


def test_criterion_ids_are_unique_slugs() -> None:
    claims = [
        claim("ttft_ms"),
        claim("ttft_us"),  # slugs to the same id as ttft_ms
        claim("ttft_ms", stat="p99.9"),
        claim("ttft_ms", scenario="Warm C32/B8"),
    ]

    ids = [c["id"] for c in plan_for(claims)["gates"][0]["criteria"]]

    assert ids == [
        "ttft-p99-cold-c32",
        "ttft-p99-cold-c32-2",
        "ttft-p99-9-cold-c32",
        "ttft-p99-warm-c32-b8",
    ]
    assert plan_problems(plan_for(claims)) == []


@pytest.mark.parametrize("vendor", ["acme-flash", "bolt-storage"])
def test_example_bundles_claims_make_a_valid_plan(vendor: str) -> None:
    manifest = json.loads((EXAMPLES / vendor / "bundle.json").read_text())

    plan = default_plan(
        rfp_reference="RFP-DEMO-2",
        vendor=vendor,
        claims=manifest["claims"],
        terms=TERMS,
    )

    assert plan_problems(plan) == []
    criteria = plan["gates"][0]["criteria"]
    assert len(criteria) == len(manifest["claims"])
    assert len({c["id"] for c in criteria}) == len(criteria)


def test_an_unknown_metric_is_refused_with_its_path() -> None:
    found = problems([claim(), claim("queue_depth", stat="mean", value=32.0)])

    assert found == {"claims[1].metric": "unknown_metric"}


def test_the_terms_may_name_a_direction_for_an_unknown_metric() -> None:
    terms = {**TERMS, "directions": {"queue_depth": "higher", "ttft_ms": "higher"}}

    criteria = plan_for([claim("queue_depth"), claim()], terms)["gates"][0]["criteria"]

    assert [c["direction"] for c in criteria] == ["higher", "higher"]


def test_latency_ceilings_only_when_the_terms_ask() -> None:
    claims = [claim(), claim("cache_hit_rate", stat="mean", value=0.75)]
    terms = {**TERMS, "latency_ceiling_pct": 200}

    stop_loss = plan_for(claims, terms)["gates"][0]["stop_loss"]

    assert stop_loss[0] == {
        "id": "ceiling-ttft-p99-cold-c32",
        "metric": "ttft_ms",
        "stat": "p99",
        "scenario": "cold-c32",
        "above": 540,
    }
    assert [s["id"] for s in stop_loss[1:]] == ["env-drift", "failed-run"]
    assert plan_problems(plan_for(claims, terms)) == []


@pytest.mark.parametrize(
    ("claims", "path", "code"),
    [
        ([], "claims", "empty"),
        (["ttft"], "claims[0]", "invalid"),
        ([claim(value=0)], "claims[0].value", "invalid"),
        ([claim(value=-1.0)], "claims[0].value", "invalid"),
        ([claim(value="180")], "claims[0].value", "invalid"),
        ([claim(value=True)], "claims[0].value", "invalid"),
        ([claim(value=float("nan"))], "claims[0].value", "invalid"),
        ([claim(stat="p99.999")], "claims[0].stat", "invalid"),
        ([claim(stat="total")], "claims[0].stat", "invalid"),
        ([claim(metric="")], "claims[0].metric", "invalid"),
        (
            [{"stat": "p99", "scenario": "s", "value": 1.0}],
            "claims[0].metric",
            "invalid",
        ),
        ([claim(scenario=None)], "claims[0].scenario", "invalid"),
        ([claim(), claim(value=200.0)], "claims[1]", "duplicate"),
    ],
)
def test_bad_claims_are_refused(claims: list[Any], path: str, code: str) -> None:
    assert problems(claims) == {path: code}


def test_claims_must_be_a_list() -> None:
    assert problems("ttft_ms") == {"claims": "invalid"}  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("terms", "path", "code"),
    [
        ({}, "terms.tolerance_pct", "required"),
        ({"tolerance_pct": "ten"}, "terms.tolerance_pct", "invalid"),
        ({"tolerance_pct": -1}, "terms.tolerance_pct", "invalid"),
        ({"tolerance_pct": Decimal("100.01")}, "terms.tolerance_pct", "invalid"),
        ({"tolerance_pct": True}, "terms.tolerance_pct", "invalid"),
        ({**TERMS, "latency_ceiling_pct": -5}, "terms.latency_ceiling_pct", "invalid"),
        ({**TERMS, "directions": ["lower"]}, "terms.directions", "invalid"),
        ({**TERMS, "directions": {"x": "up"}}, "terms.directions.x", "invalid"),
    ],
)
def test_bad_terms_are_refused(terms: dict[str, Any], path: str, code: str) -> None:
    assert problems([claim()], terms) == {path: code}


def test_every_problem_is_listed_at_once() -> None:
    found = problems(
        [claim(value=0), claim("queue_depth"), claim(stat="p42.5")],
        {"tolerance_pct": 101},
    )

    assert found == {
        "terms.tolerance_pct": "invalid",
        "claims[0].value": "invalid",
        "claims[1].metric": "unknown_metric",
        "claims[2].stat": "invalid",
    }
