"""Rows for the read-side tests (board, pages, permissions): real evaluations
through ``gate_judge``, and rows written directly (as factories do) when a
test needs many vendors or a state no service makes yet (decisions, obligations
before their services exist)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from accounts.models import Organisation
from accounts.selectors import clock
from benchmarks.models import Campaign
from gates.models import (
    CriterionResult,
    Decision,
    Evaluation,
    GatePlan,
    RetestObligation,
)
from gates.services.pipeline import gate_judge
from procurement.models import Rfp
from tests.accounts.factories import OrganisationFactory
from tests.gates.support import finish_runs, make_frozen_plan

GATE = "lab-validation"


def evaluate(
    plan: GatePlan,
    campaign: Campaign,
    actor: Any,
    values: list[float],
    gate: str = GATE,
) -> Evaluation:
    """A real evaluation of the gate (the first one unless named) once the
    campaign's cold-c1 runs have finished at ``values``."""
    finish_runs(campaign, {"cold-c1": values})
    return gate_judge(plan=plan, gate=gate, campaign=campaign, actor=actor)


def copy_evaluation(
    source: Evaluation,
    plan: GatePlan,
    *,
    verdict: str | None = None,
    max_drift: str = "none",
    gate: str = GATE,
    minutes: int = 1,
) -> Evaluation:
    """Another evaluation row of ``plan`` with ``source``'s documents (a test
    factory: the board reads the row, not the documents)."""
    evaluation = Evaluation.objects.create(
        plan=plan,
        rfp=plan.rfp,
        vendor_organisation=plan.vendor_organisation,
        gate=gate,
        campaign=source.campaign,
        verdict=verdict or source.verdict,
        score_pct=source.score_pct,
        plan_document=source.plan_document,
        results_document=source.results_document,
        evaluation_document=source.evaluation_document,
        plan_sha256=source.plan_sha256,
        results_sha256=source.results_sha256,
        evaluation_sha256=source.evaluation_sha256,
        max_drift=max_drift,
        evaluated_at=source.evaluated_at + timedelta(minutes=minutes),
    )
    CriterionResult.objects.bulk_create(
        CriterionResult(
            evaluation=evaluation,
            **{
                f.name: getattr(row, f.name)
                for f in CriterionResult._meta.concrete_fields
                if f.name not in {"id", "evaluation"}
            },
        )
        for row in source.criterion_results.all()
    )
    return evaluation


def decide(
    evaluation: Evaluation,
    by: Any,
    kind: str = Decision.Kind.HOLD,
    status: str = Decision.Status.RECORDED,
    second: Any = None,
) -> Decision:
    return Decision.objects.create(
        plan=evaluation.plan,
        gate=evaluation.gate,
        evaluation=evaluation,
        kind=kind,
        status=status,
        rationale="Because the lab says so.",
        decided_by=by,
        decided_at=clock.now(),
        second_by=second,
        second_at=clock.now() if second else None,
    )


def oblige(
    evaluation: Evaluation, *, days: float = 30, **fields: Any
) -> RetestObligation:
    """An obligation raised by ``evaluation`` (set directly, as factories do),
    due in ``days``; ``fields`` set (or replace) the rest."""
    defaults: dict[str, Any] = {
        "criteria": ["ttft-p99-cold-c1"],
        "reason": "TTFT p99 over its band.",
        "max_attempts": 2,
    }
    return RetestObligation.objects.create(
        rfp=evaluation.rfp,
        vendor_organisation=evaluation.vendor_organisation,
        plan=evaluation.plan,
        gate=evaluation.gate,
        evaluation=evaluation,
        deadline=clock.now() + timedelta(days=days),
        **(defaults | fields),
    )


def more_vendors(
    rfp: Rfp, source: Evaluation, actor: Any, n: int
) -> list[Organisation]:
    """``n`` more vendors on the RFP, each with a frozen plan, a failed
    evaluation, a decision on it and an open re-test obligation."""
    vendors = []
    for i in range(n):
        org = OrganisationFactory.create(
            slug=f"vendor-{i:02d}", kind=Organisation.Kind.VENDOR
        )
        rfp.invited_vendors.add(org)
        plan = make_frozen_plan(rfp, org, actor)
        evaluation = copy_evaluation(source, plan, verdict="FAIL", minutes=i + 1)
        decide(evaluation, actor)
        oblige(evaluation)
        vendors.append(org)
    return vendors


@pytest.fixture(name="evaluated")
def evaluated_fixture(
    rfp: Rfp,
    frozen_plan: GatePlan,
    gate_campaign: Any,
    buyer: Any,
    vendor_b_org: Organisation,
) -> dict[str, Evaluation]:
    """vendor_a's lab-validation PASSes (a real evaluation); vendor_b's FAILs
    with an open re-test obligation (a copied row on its own plan)."""
    a = evaluate(frozen_plan, gate_campaign(3), buyer, [176.2, 171.0, 178.9])
    b = copy_evaluation(a, make_frozen_plan(rfp, vendor_b_org, buyer), verdict="FAIL")
    oblige(b)
    return {"a": a, "b": b}
