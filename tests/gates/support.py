"""Test factories for the gates app: a frozen plan written directly (as
factories do; plan services are tested on their own) and a campaign of the
vendor's accepted bundle with runs finished at chosen values.

The fixtures ``gate_bundle``, ``gate_campaign`` and ``frozen_plan`` are
loaded for every test under ``tests/gates`` by its ``conftest.py``; the service
tests import ``evaluate`` (a real evaluation of a new campaign)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from accounts.models import Organisation
from accounts.selectors import clock
from artifacts.lib.canonical import canonical_json
from artifacts.models import Bundle
from benchmarks.models import Campaign, Run
from gates.lib.engine.documents import sha256_hex
from gates.models import Evaluation, GatePlan
from gates.services.pipeline import gate_judge
from procurement.models import Rfp
from tests.benchmarks.runner.support import accepted_bundle, finish, make_pool, start
from tests.gates.engine.support import STOP_LOSS, criterion

# The runner bundle's scenarios are cold-c1 and warm-c1.
CRITERION: dict[str, Any] = criterion(id="ttft-p99-cold-c1", scenario="cold-c1")
LAB = "lab-validation"
PASS = [176.2, 171.0, 178.9]  # TTFT p99 ms of three runs: CRITERION passes
FAIL = [230.0, 241.0, 236.5]  # over its 198 ms limit


def plan_document(
    rfp: str = "RFP-T",
    vendor: str = "vendor-a",
    *,
    criteria: list[dict[str, Any]] | None = None,
    stop_loss: list[dict[str, Any]] | None = None,
    consecutive_passes: int = 1,
) -> dict[str, Any]:
    """A three-gate plan with the same criteria and stop-loss in every gate."""
    crit = criteria if criteria is not None else [CRITERION]
    stops = stop_loss if stop_loss is not None else STOP_LOSS
    return {
        "schema": "reprogate.gate-plan/v1",
        "rfp": rfp,
        "vendor": vendor,
        "gates": [
            {
                "name": name,
                "stage": stage,
                "consecutive_passes": consecutive_passes,
                "score": {"pass_pct": 90, "warn_pct": 75},
                "criteria": copy.deepcopy(crit),
                "stop_loss": copy.deepcopy(stops),
            }
            for name, stage in (
                ("lab-validation", "lab"),
                ("pilot", "pilot"),
                ("rollout", "rollout"),
            )
        ],
    }


def make_frozen_plan(
    rfp: Rfp,
    vendor: Organisation,
    actor: Any,
    document: dict[str, Any] | None = None,
    *,
    bundle: Bundle | None = None,
    version: int = 1,
    lab_environment_accepted: bool = False,
) -> GatePlan:
    doc = document or plan_document(rfp.reference, vendor.slug)
    return GatePlan.objects.create(
        rfp=rfp,
        vendor_organisation=vendor,
        bundle=bundle,
        version=version,
        status=GatePlan.Status.FROZEN,
        document=canonical_json(doc).decode("utf-8"),
        sha256=sha256_hex(doc),
        lab_environment_accepted=lab_environment_accepted,
        created_by=actor,
        frozen_by=actor,
        frozen_at=clock.now(),
    )


def finish_runs(
    campaign: Campaign,
    values: dict[str, list[float]],
    *,
    metric: str = "ttft_ms",
    stat: str = "p99",
) -> None:
    """Finish the campaign's runs of each scenario with these values, one per
    repetition in order; other runs stay queued (pending)."""
    for scenario, series in values.items():
        runs = campaign.runs.filter(scenario_name=scenario).order_by("repetition")
        for run, value in zip(runs, series, strict=False):
            finish(run, metrics=[{"name": metric, "stat": stat, "value": value}])


def set_drift(run: Run, severity: str) -> None:
    """Record one drift of ``severity`` on the run (as the runner does)."""
    drift = [
        {
            "field": "kernel.release",
            "severity": severity,
            "declared": "5.15",
            "captured": "6.1",
        }
    ]
    Run.objects.filter(pk=run.pk).update(drift=drift)


@pytest.fixture
def gate_bundle(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> Bundle:
    return accepted_bundle(tmp_path / "gate-bundle", rfp, vendor_a_org, vendor_a)


@pytest.fixture
def gate_campaign(gate_bundle: Bundle, buyer_org: Organisation, labops: Any) -> Any:
    """``gate_campaign(repetitions=3)``: a new campaign of the vendor's bundle."""
    pools = iter(range(100))

    def make(repetitions: int = 3, bundle: Bundle | None = None) -> Campaign:
        lab = buyer_org.engages.get(kind=Organisation.Kind.LAB)
        pool = make_pool(lab, name=f"gate-pool-{next(pools)}")
        return start(bundle or gate_bundle, pool, labops, repetitions=repetitions)

    return make


@pytest.fixture
def frozen_plan(rfp: Rfp, vendor_a_org: Organisation, buyer: Any) -> GatePlan:
    return make_frozen_plan(rfp, vendor_a_org, buyer)


@pytest.fixture(name="evaluate")
def evaluate_fixture(gate_campaign: Any, buyer: Any, clock: Any) -> Any:
    """``evaluate(plan, values, gate=LAB, drift="", campaign=None)``: a real
    evaluation by the buyer, a minute after the previous one, of the campaign
    (else a new one of three runs) once its cold-c1 runs have finished at
    ``values``; ``drift`` recorded on the first run."""

    def make(
        plan: GatePlan,
        values: list[float],
        *,
        gate: str = LAB,
        drift: str = "",
        campaign: Campaign | None = None,
    ) -> Evaluation:
        clock.advance(minutes=1)
        campaign = campaign or gate_campaign(3)
        finish_runs(campaign, {"cold-c1": values})
        if drift:
            set_drift(campaign.runs.get(scenario_name="cold-c1", repetition=1), drift)
        return gate_judge(plan=plan, gate=gate, campaign=campaign, actor=buyer)

    return make
