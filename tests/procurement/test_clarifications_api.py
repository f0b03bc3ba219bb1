"""/api/v1/rfps/<id>/clarifications/, /api/v1/clarifications/<id>/answer/ and
/api/v1/rfps/<id>/addenda/: the page's rules, in JSON."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.models import Organisation, Role
from procurement.models import Addendum, Clarification, Rfp
from procurement.services.clarifications import clarification_answer
from tests.accounts.factories import MembershipFactory
from tests.procurement.factories_clarifications import ClarificationFactory, open_rfp

pytestmark = pytest.mark.django_db

ACME = ("acme", "vendor-a")


@pytest.fixture
def rfp(
    clock: Any, buyer_org: Organisation, vendor_a_org: Any, vendor_b_org: Any
) -> Rfp:
    return open_rfp(buyer_org, vendor_a_org, vendor_b_org)


@pytest.fixture
def pending(rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation) -> Clarification:
    return ClarificationFactory.create(
        rfp=rfp, asked_by=vendor_a, asked_by_organisation=vendor_a_org
    )


def _api(user: Any) -> APIClient:
    api = APIClient()
    api.force_authenticate(user)
    return api


def _list_url(rfp: Rfp) -> str:
    return f"/api/v1/rfps/{rfp.public_id}/clarifications/"


def _answer_url(clarification: Clarification) -> str:
    return f"/api/v1/clarifications/{clarification.public_id}/answer/"


def _addenda_url(rfp: Rfp) -> str:
    return f"/api/v1/rfps/{rfp.public_id}/addenda/"


def _no_acme(body: object) -> bool:
    text = json.dumps(body).lower()
    return not any(word in text for word in ACME)


def test_api_ask_creates_a_pending_question_of_the_callers_organisation(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    response = _api(vendor_a).post(
        _list_url(rfp), {"question": "Which kernel?"}, format="json"
    )

    assert response.status_code == 201
    body = response.json()
    assert (body["status"], body["is_own"], body["label"]) == (
        "pending",
        True,
        "Your question",
    )
    assert Clarification.objects.get().asked_by_organisation == vendor_a_org


def test_api_list_hides_another_vendors_pending_question(
    pending: Clarification, rfp: Rfp, vendor_b: Any
) -> None:
    body = _api(vendor_b).get(_list_url(rfp)).json()

    assert body["count"] == 0


def test_api_list_shows_an_answer_to_other_vendors_without_the_asker(
    pending: Clarification, rfp: Rfp, buyer: Any, vendor_b: Any
) -> None:
    clarification_answer(clarification=pending, answer="Yes.", actor=buyer)

    (row,) = _api(vendor_b).get(_list_url(rfp)).json()["results"]

    assert (row["label"], row["answer"], row["is_own"]) == ("Q&A 1", "Yes.", False)
    assert row["asked_at"] is None
    assert _no_acme(row)


def test_api_list_gives_the_buyer_every_question_without_the_asker(
    pending: Clarification, rfp: Rfp, buyer: Any
) -> None:
    body = _api(buyer).get(_list_url(rfp)).json()

    assert [r["label"] for r in body["results"]] == ["Vendor question #1"]
    assert body["results"][0]["asked_at"] is not None
    assert _no_acme(body)


@pytest.mark.parametrize(
    ("persona", "code"),
    [("evaluator", 200), ("labops", 403), ("auditor", 403), ("outsider", 404)],
)
def test_api_list_is_for_the_buyer_side_and_invited_vendors(
    persona: str, code: int, rfp: Rfp, request: Any
) -> None:
    user = request.getfixturevalue(persona)

    assert _api(user).get(_list_url(rfp)).status_code == code


@pytest.mark.parametrize(
    ("persona", "code"),
    [
        ("buyer", 403),
        ("evaluator", 403),
        ("labops", 403),
        ("auditor", 403),
        ("outsider", 404),
    ],
)
def test_api_ask_is_for_invited_vendors_only(
    persona: str, code: int, rfp: Rfp, request: Any
) -> None:
    user = request.getfixturevalue(persona)

    response = _api(user).post(_list_url(rfp), {"question": "Q?"}, format="json")

    assert response.status_code == code
    assert not Clarification.objects.exists()


@pytest.mark.parametrize(
    "payload", [{}, {"question": ""}, {"question": "   "}, {"question": "q" * 10_001}]
)
def test_api_ask_rejects_bad_questions(
    payload: dict[str, str], rfp: Rfp, vendor_a: Any
) -> None:
    response = _api(vendor_a).post(_list_url(rfp), payload, format="json")

    assert response.status_code == 400
    assert response.json()["problems"][0]["path"] == "question"


def test_api_ask_after_the_questions_deadline_is_refused(
    rfp: Rfp, vendor_a: Any, clock: Any
) -> None:
    clock.travel_to(rfp.questions_deadline + timedelta(seconds=1))

    response = _api(vendor_a).post(_list_url(rfp), {"question": "Q?"}, format="json")

    assert response.status_code == 400
    assert response.json()["code"] == "questions_closed"


def test_api_answer_publishes(pending: Clarification, buyer: Any) -> None:
    response = _api(buyer).post(_answer_url(pending), {"answer": "Yes."}, format="json")

    assert response.status_code == 200
    assert response.json()["status"] == "answered"
    assert _no_acme(response.json())


@pytest.mark.parametrize(
    ("persona", "code"),
    [("evaluator", 403), ("vendor_a", 403), ("vendor_b", 404), ("outsider", 404)],
)
def test_api_answer_is_for_buyers_only(
    persona: str, code: int, pending: Clarification, request: Any
) -> None:
    user = request.getfixturevalue(persona)

    response = _api(user).post(_answer_url(pending), {"answer": "Y"}, format="json")

    assert response.status_code == code
    pending.refresh_from_db()
    assert not pending.is_answered


def test_api_answer_twice_is_refused(pending: Clarification, buyer: Any) -> None:
    _api(buyer).post(_answer_url(pending), {"answer": "Yes."}, format="json")

    response = _api(buyer).post(_answer_url(pending), {"answer": "No."}, format="json")

    assert response.status_code == 400
    assert response.json()["code"] == "already_answered"


@pytest.mark.parametrize("payload", [{}, {"answer": ""}, {"answer": "a" * 10_001}])
def test_api_answer_rejects_bad_answers(
    payload: dict[str, str], pending: Clarification, buyer: Any
) -> None:
    response = _api(buyer).post(_answer_url(pending), payload, format="json")

    assert response.status_code == 400


def test_api_answer_of_an_unknown_question_is_404(buyer: Any) -> None:
    url = "/api/v1/clarifications/00000000-0000-0000-0000-000000000000/answer/"

    assert _api(buyer).post(url, {"answer": "Y"}, format="json").status_code == 404


# --- addenda ------------------------------------------------------------------


def test_api_addendum_issue_returns_the_diff(rfp: Rfp, buyer: Any, clock: Any) -> None:
    payload = {"changes": {"min_bids": 2}, "reason": "More competition."}

    response = _api(buyer).post(_addenda_url(rfp), payload, format="json")

    assert response.status_code == 201
    body = response.json()
    assert body["number"] == 1
    assert body["changes"] == [
        {"field": "min_bids", "label": "Minimum bids", "old": 1, "new": 2}
    ]


def test_api_addenda_list_shows_invited_vendors_the_extension(
    rfp: Rfp, buyer: Any, vendor_b: Any, clock: Any
) -> None:
    clock.travel_to(rfp.submission_deadline - timedelta(days=1))
    payload = {"changes": {"title": "Flash tier v2"}, "reason": "Rename."}
    _api(buyer).post(_addenda_url(rfp), payload, format="json")

    (addendum,) = _api(vendor_b).get(_addenda_url(rfp)).json()["results"]

    assert addendum["deadline_extended_to"] is not None
    assert addendum["changes"][0]["new"] == "Flash tier v2"


@pytest.mark.parametrize(
    ("persona", "code"),
    [("evaluator", 403), ("vendor_a", 403), ("auditor", 403), ("outsider", 404)],
)
def test_api_addendum_issue_is_for_buyers_only(
    persona: str, code: int, rfp: Rfp, request: Any
) -> None:
    user = request.getfixturevalue(persona)
    payload = {"changes": {"min_bids": 2}, "reason": "R."}

    assert _api(user).post(_addenda_url(rfp), payload, format="json").status_code == (
        code
    )
    assert not Addendum.objects.exists()


@pytest.mark.parametrize(
    ("changes", "path"),
    [
        ({"reference": "RFP-X"}, "changes.reference"),
        ({"min_bids": "three"}, "changes.min_bids"),
        ({"submission_deadline": "soon"}, "changes.submission_deadline"),
        ({"retest_vendor_funded": "perhaps"}, "changes.retest_vendor_funded"),
        ({"title": ["a"]}, "changes.title"),
        ({"title": "Flash\ntier"}, "changes.title"),
        ({"retest_tolerance_pct": ""}, "changes.retest_tolerance_pct"),
        ({"retest_tolerance_pct": "100.5"}, "changes.retest_tolerance_pct"),
        ("min_bids=2", "changes"),
    ],
)
def test_api_addendum_issue_rejects_bad_changes(
    changes: object, path: str, rfp: Rfp, buyer: Any
) -> None:
    payload = {"changes": changes, "reason": "R."}

    response = _api(buyer).post(_addenda_url(rfp), payload, format="json")

    assert response.status_code == 400
    assert [p.get("path") for p in response.json()["problems"]] == [path]


@pytest.mark.parametrize(
    ("changes", "code"),
    [({}, "nothing_changed"), ({"min_bids": 1}, "nothing_changed")],
)
def test_api_addendum_issue_refuses_no_op_changes(
    changes: dict[str, object], code: str, rfp: Rfp, buyer: Any
) -> None:
    payload = {"changes": changes, "reason": "R."}

    response = _api(buyer).post(_addenda_url(rfp), payload, format="json")

    assert response.status_code == 400
    assert response.json()["code"] == code


def test_api_addendum_issue_refuses_a_deadline_too_soon(
    rfp: Rfp, buyer: Any, clock: Any
) -> None:
    soon = (clock.now() + timedelta(days=1)).isoformat()
    payload = {"changes": {"submission_deadline": soon}, "reason": "Hurry."}

    response = _api(buyer).post(_addenda_url(rfp), payload, format="json")

    assert response.status_code == 400
    assert response.json()["code"] == "deadline_too_soon"


def test_api_a_vendor_admin_asks_and_a_buyer_admin_answers(
    rfp: Rfp, vendor_a_org: Organisation, buyer_org: Organisation
) -> None:
    vendor_admin = MembershipFactory.create(
        organisation=vendor_a_org, role=Role.ADMIN
    ).user
    buyer_admin = MembershipFactory.create(organisation=buyer_org, role=Role.ADMIN).user

    asked = _api(vendor_admin).post(_list_url(rfp), {"question": "Q?"}, format="json")
    answer_url = f"/api/v1/clarifications/{asked.json()['id']}/answer/"
    answered = _api(buyer_admin).post(answer_url, {"answer": "A."}, format="json")

    assert (asked.status_code, answered.status_code) == (201, 200)
