"""``GET /api/v1/evaluations/<id>/`` returns the three documents exactly as
evaluated; ``POST …/gates/<gate>/evaluate/`` judges a gate; who may see what."""

from __future__ import annotations

import json
from typing import Any

import pytest

from artifacts.lib.canonical import canonical_json
from gates.models import Evaluation, GatePlan
from tests.gates.api.support import GATE, PASSING, api
from tests.gates.support import finish_runs

pytestmark = pytest.mark.django_db


def url(evaluation: Evaluation) -> str:
    return f"/api/v1/evaluations/{evaluation.public_id}/"


def evaluate_url(plan: GatePlan, gate: str = GATE) -> str:
    return f"/api/v1/gate-plans/{plan.public_id}/gates/{gate}/evaluate/"


# --- the documents, byte for byte -----------------------------------------------


def test_detail_holds_the_three_stored_texts_verbatim(
    evaluation: Evaluation, vendor_a: Any
) -> None:
    response = api(vendor_a).get(url(evaluation))

    raw = response.content.decode("utf-8")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert f'"evaluation":{evaluation.evaluation_document}' in raw
    assert f'"plan":{evaluation.plan_document}' in raw
    assert f'"results":{evaluation.results_document}' in raw


def test_detail_documents_round_trip_to_the_same_canonical_bytes(
    evaluation: Evaluation, buyer: Any
) -> None:
    body = json.loads(api(buyer).get(url(evaluation)).content)

    for key, stored in (
        ("evaluation", evaluation.evaluation_document),
        ("plan", evaluation.plan_document),
        ("results", evaluation.results_document),
    ):
        assert canonical_json(body[key]) == stored.encode("utf-8"), key


def test_detail_names_the_evaluation_beside_its_documents(
    evaluation: Evaluation, buyer: Any
) -> None:
    body = api(buyer).get(url(evaluation)).json()

    assert body["id"] == str(evaluation.public_id)
    assert (body["gate"], body["verdict"]) == (GATE, "PASS")
    assert body["evaluation"]["verdict"] == "PASS"
    assert body["evaluation_sha256"] == evaluation.evaluation_sha256
    assert body["evaluation"]["inputs"]["plan_sha256"] == body["plan_sha256"]
    assert body["log_index"] == evaluation.deposit.log_index
    assert body["vendor"] == "acme-flash"


# --- who may read it --------------------------------------------------------------


@pytest.mark.parametrize("persona", ["buyer", "evaluator", "labops", "auditor"])
def test_detail_is_read_by_the_buyer_side_and_engaged_orgs(
    persona: str, evaluation: Evaluation, request: pytest.FixtureRequest
) -> None:
    user = request.getfixturevalue(persona)

    assert api(user).get(url(evaluation)).status_code == 200


@pytest.mark.parametrize("persona", ["vendor_b", "outsider"])
def test_detail_is_not_found_for_other_organisations(
    persona: str, evaluation: Evaluation, request: pytest.FixtureRequest
) -> None:
    user = request.getfixturevalue(persona)

    response = api(user).get(url(evaluation))

    assert response.status_code == 404
    assert response.json() == {
        "code": "not_found",
        "message": "Not found.",
        "problems": [],
    }


def test_detail_needs_a_signed_in_caller(evaluation: Evaluation) -> None:
    response = api().get(url(evaluation))

    assert response.status_code == 401
    assert response.json()["code"] == "not_authenticated"


# --- evaluating a gate ----------------------------------------------------------


def test_evaluate_judges_the_gate_and_answers_its_documents(
    frozen_plan: GatePlan, gate_campaign: Any, labops: Any
) -> None:
    campaign = gate_campaign(3)
    finish_runs(campaign, {"cold-c1": PASSING})

    response = api(labops).post(
        evaluate_url(frozen_plan), {"campaign": str(campaign.public_id)}, format="json"
    )

    assert response.status_code == 201
    created = Evaluation.objects.get(public_id=response.json()["id"])
    assert created.evaluated_by == labops
    assert response.json()["evaluation"] == json.loads(created.evaluation_document)


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ({}, "campaign"),
        ({"campaign": "not-a-uuid"}, "campaign"),
        ({"campaign": "6b1f3a52-0d1e-4c27-9d7b-0a5f2c9e1d11"}, "campaign"),
    ],
)
def test_evaluate_explains_bad_input(
    frozen_plan: GatePlan, buyer: Any, data: dict[str, str], path: str
) -> None:
    response = api(buyer).post(evaluate_url(frozen_plan), data, format="json")

    assert response.status_code == 400
    assert [p["path"] for p in response.json()["problems"]] == [path]
    assert not Evaluation.objects.exists()


def test_evaluate_refuses_an_unknown_gate(
    frozen_plan: GatePlan, gate_campaign: Any, buyer: Any
) -> None:
    campaign = gate_campaign(1)

    response = api(buyer).post(
        evaluate_url(frozen_plan, "prod"),
        {"campaign": str(campaign.public_id)},
        format="json",
    )

    assert response.status_code == 400
    assert response.json()["code"] == "not_evaluable"
    assert "no gate named 'prod'" in response.json()["message"]


def test_evaluate_is_a_conflict_on_a_superseded_plan(
    frozen_plan: GatePlan, gate_campaign: Any, buyer: Any
) -> None:
    GatePlan.objects.filter(pk=frozen_plan.pk).update(status=GatePlan.Status.SUPERSEDED)
    campaign = gate_campaign(1)

    response = api(buyer).post(
        evaluate_url(frozen_plan), {"campaign": str(campaign.public_id)}, format="json"
    )

    assert response.status_code == 409
    assert response.json()["code"] == "not_evaluable"


def test_evaluate_is_not_for_the_vendor(
    frozen_plan: GatePlan, gate_campaign: Any, vendor_a: Any, vendor_b: Any
) -> None:
    campaign = gate_campaign(1)
    data = {"campaign": str(campaign.public_id)}

    own = api(vendor_a).post(evaluate_url(frozen_plan), data, format="json")
    other = api(vendor_b).post(evaluate_url(frozen_plan), data, format="json")

    assert (own.status_code, other.status_code) == (403, 404)
    assert not Evaluation.objects.exists()
