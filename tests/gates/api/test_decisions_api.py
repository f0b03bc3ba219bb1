"""The decision API: promote (pending until a second buyer-side person signs it
off), hold at once, withdraw; the services' refusals as 400/409 with problems;
the buyer side only."""

from __future__ import annotations

from typing import Any

import pytest

from gates.models import Decision, Evaluation, GatePlan
from tests.gates.api.support import FAILING, GATE, api, judged

pytestmark = pytest.mark.django_db


def decide_url(plan: GatePlan, gate: str = GATE) -> str:
    return f"/api/v1/gate-plans/{plan.public_id}/gates/{gate}/decisions/"


def decision_url(decision_id: str, action: str) -> str:
    return f"/api/v1/decisions/{decision_id}/{action}/"


def promote(plan: GatePlan, user: Any) -> Any:
    data = {"kind": "promote", "rationale": "Three runs well inside the band."}
    return api(user).post(decide_url(plan), data, format="json")


def test_promotion_waits_for_a_second_person(
    evaluation: Evaluation, buyer: Any, evaluator: Any
) -> None:
    first = promote(evaluation.plan, buyer)
    second = api(evaluator).post(
        decision_url(first.json()["id"], "second"), {"note": "Agreed."}, format="json"
    )

    assert first.status_code == 201
    assert (first.json()["kind"], first.json()["status"]) == ("promote", "pending")
    assert first.json()["evaluation"] == str(evaluation.public_id)
    assert second.status_code == 200
    assert second.json()["status"] == "recorded"
    assert (second.json()["decided_by"], second.json()["second_by"]) == (
        "buyer",
        "evaluator",
    )


def test_the_proposer_cannot_second_their_own_promotion(
    evaluation: Evaluation, buyer: Any
) -> None:
    first = promote(evaluation.plan, buyer)

    response = api(buyer).post(decision_url(first.json()["id"], "second"))

    assert response.status_code == 400
    assert response.json()["code"] == "same_person"
    assert Decision.objects.get().status == Decision.Status.PENDING


def test_a_withdrawn_promotion_cannot_be_seconded(
    evaluation: Evaluation, buyer: Any, evaluator: Any
) -> None:
    decision_id = promote(evaluation.plan, buyer).json()["id"]

    withdrawn = api(buyer).post(decision_url(decision_id, "withdraw"))
    again = api(buyer).post(decision_url(decision_id, "withdraw"))
    seconded = api(evaluator).post(decision_url(decision_id, "second"))

    assert withdrawn.status_code == 200
    assert withdrawn.json()["status"] == "withdrawn"
    assert withdrawn.json()["withdrawn_by"] == "buyer"
    assert (again.status_code, seconded.status_code) == (409, 409)


def test_a_failed_gate_is_not_promoted_but_held_at_once(
    frozen_plan: GatePlan, gate_campaign: Any, buyer: Any
) -> None:
    judged(frozen_plan, gate_campaign(3), buyer, FAILING)
    hold = {"kind": "hold", "rationale": "TTFT p99 twice the claim."}

    refused = promote(frozen_plan, buyer)
    held = api(buyer).post(decide_url(frozen_plan), hold, format="json")

    assert refused.status_code == 409
    assert refused.json()["code"] == "not_promotable"
    assert held.status_code == 201
    assert held.json()["status"] == "recorded"


def test_a_gate_never_evaluated_is_not_decidable(
    frozen_plan: GatePlan, buyer: Any
) -> None:
    response = promote(frozen_plan, buyer)

    assert response.status_code == 409
    assert not Decision.objects.exists()


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ({"rationale": "Why not."}, "kind"),
        ({"kind": "ship", "rationale": "Why not."}, "kind"),
        ({"kind": "hold"}, "rationale"),
        ({"kind": "hold", "rationale": ""}, "rationale"),
        ({"kind": "hold", "rationale": "x" * 5001}, "rationale"),
    ],
)
def test_decide_explains_bad_input(
    evaluation: Evaluation, buyer: Any, data: dict[str, str], path: str
) -> None:
    response = api(buyer).post(decide_url(evaluation.plan), data, format="json")

    assert response.status_code == 400
    assert [p["path"] for p in response.json()["problems"]] == [path]
    assert not Decision.objects.exists()


def test_decide_refuses_an_unknown_gate(evaluation: Evaluation, buyer: Any) -> None:
    data = {"kind": "hold", "rationale": "Hold."}

    response = api(buyer).post(decide_url(evaluation.plan, "prod"), data, format="json")

    assert response.status_code == 400
    assert response.json()["code"] == "no_such_gate"


@pytest.mark.parametrize(
    ("persona", "code"),
    [("vendor_a", 403), ("labops", 403), ("auditor", 403), ("vendor_b", 404)],
)
def test_decisions_are_the_buyer_sides(
    persona: str,
    code: int,
    evaluation: Evaluation,
    buyer: Any,
    request: pytest.FixtureRequest,
) -> None:
    user = request.getfixturevalue(persona)
    decision_id = promote(evaluation.plan, buyer).json()["id"]

    decided = promote(evaluation.plan, user)
    seconded = api(user).post(decision_url(decision_id, "second"))

    assert (decided.status_code, seconded.status_code) == (code, code)
    assert Decision.objects.get().status == Decision.Status.PENDING
