"""The gates API tests' building blocks: an API client for a persona and a real
evaluation (a frozen plan judged by ``gate_evaluate`` on a campaign whose runs
finished at chosen values). ``tests/gates/api/conftest.py`` loads the fixtures;
other test folders import them from here."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from rest_framework.test import APIClient

from benchmarks.models import Campaign
from gates.models import Evaluation, GatePlan, RetestObligation
from gates.services.evaluations import gate_evaluate
from procurement import clock
from tests.gates.support import finish_runs

GATE = "lab-validation"
PASSING = [176.2, 171.0, 178.9]  # ms, under the 198 ms limit of a 180 ms claim
FAILING = [412.5, 405.0, 420.25]


def api(user: Any = None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def judged(
    plan: GatePlan,
    campaign: Campaign,
    actor: Any,
    values: list[float],
    gate: str = GATE,
) -> Evaluation:
    """Finish the campaign's cold-c1 runs at ``values`` and evaluate the gate."""
    finish_runs(campaign, {"cold-c1": values})
    return gate_evaluate(plan=plan, gate=gate, campaign=campaign, actor=actor)


@pytest.fixture
def evaluation(frozen_plan: GatePlan, gate_campaign: Any, buyer: Any) -> Evaluation:
    """A PASS of lab-validation on three finished runs."""
    return judged(frozen_plan, gate_campaign(3), buyer, PASSING)


def owed(evaluation: Evaluation, *, days: float = 14, **fields: Any) -> Any:
    """An obligation raised by ``evaluation`` (set directly, as factories do)."""
    return RetestObligation.objects.create(
        rfp=evaluation.rfp,
        vendor_organisation=evaluation.vendor_organisation,
        plan=evaluation.plan,
        gate=evaluation.gate,
        evaluation=evaluation,
        criteria=["ttft-p99-cold-c1"],
        reason="TTFT p99 cold-c1: claimed 180 ms, measured 412.5 ms.",
        deadline=clock.now() + timedelta(days=days),
        max_attempts=2,
        **fields,
    )
