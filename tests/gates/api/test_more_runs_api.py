"""``POST /api/v1/evaluations/<id>/more-runs/``: the runs an INCONCLUSIVE
evaluation needs are added to its campaign, once; refused when none are needed;
the pool's lab operators and the RFP's buyers only."""

from __future__ import annotations

from typing import Any

import pytest

from gates.models import Evaluation, GateCampaign, GatePlan
from tests.gates.api.support import api, judged

pytestmark = pytest.mark.django_db


@pytest.fixture
def inconclusive(frozen_plan: GatePlan, gate_campaign: Any, labops: Any) -> Evaluation:
    """One of the three runs finished: two more needed."""
    return judged(frozen_plan, gate_campaign(3), labops, [176.2])


def cold_runs(evaluation: Evaluation) -> int:
    return evaluation.campaign.runs.filter(scenario_name="cold-c1").count()


def more_runs(evaluation: Evaluation, user: Any) -> Any:
    return api(user).post(f"/api/v1/evaluations/{evaluation.public_id}/more-runs/")


def test_more_runs_adds_what_the_evaluation_needs(
    inconclusive: Evaluation, labops: Any
) -> None:
    response = more_runs(inconclusive, labops)

    body = response.json()
    assert inconclusive.verdict == "INCONCLUSIVE"
    assert response.status_code == 201
    assert (body["extra_runs"], body["automatic"]) == (2, False)
    assert body["campaign"] == str(inconclusive.campaign.public_id)
    assert cold_runs(inconclusive) == 5
    assert GateCampaign.objects.get(after=inconclusive).requested_by == labops


def test_more_runs_twice_is_a_conflict(inconclusive: Evaluation, buyer: Any) -> None:
    more_runs(inconclusive, buyer)

    again = more_runs(inconclusive, buyer)

    assert again.status_code == 409
    assert again.json()["code"] == "scheduled"
    assert cold_runs(inconclusive) == 5


def test_more_runs_of_a_decided_gate_is_a_conflict(
    evaluation: Evaluation, buyer: Any
) -> None:
    response = more_runs(evaluation, buyer)

    assert response.status_code == 409
    assert response.json()["code"] == "decided"
    assert response.json()["problems"][0]["message"].startswith("No more runs")


@pytest.mark.parametrize(
    ("persona", "code"),
    [("vendor_a", 403), ("auditor", 403), ("vendor_b", 404), ("outsider", 404)],
)
def test_more_runs_is_for_the_lab_and_the_buyer(
    persona: str, code: int, inconclusive: Evaluation, request: pytest.FixtureRequest
) -> None:
    user = request.getfixturevalue(persona)

    response = more_runs(inconclusive, user)

    assert response.status_code == code
    assert not GateCampaign.objects.filter(after=inconclusive).exists()
