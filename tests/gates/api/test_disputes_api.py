"""The dispute API, acceptance end to end: Bolt contests its FAIL within the
window; the buyer sees it, Acme sees nothing of it (list empty, detail 404),
promotion and rollback are refused while it is open, upholding schedules a
re-test at the buyer's cost; a dispute after the window is refused; each step
is in the audit trail and the transparency log. Errors in the API's shape."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from accounts.models import AuditEvent
from artifacts.models import LogEntry
from gates.models import Dispute, Evaluation, GatePlan
from procurement.models import Rfp
from tests.gates.api.support import api

pytestmark = pytest.mark.django_db
LIST = "/api/v1/disputes/"
REASON = "The lab ran cold-c1 with a warm page cache (run 2's capture)."


@pytest.fixture
def bolt_fail(two_vendors: Rfp, vendor_b_org: Any) -> Evaluation:
    found = Evaluation.objects.get(rfp=two_vendors, vendor_organisation=vendor_b_org)
    assert found.verdict == "FAIL"
    return found


def contest(evaluation: Evaluation, user: Any, **body: Any) -> Any:
    url = f"/api/v1/evaluations/{evaluation.public_id}/disputes/"
    return api(user).post(url, {"reason": REASON, **body}, format="json")


def test_acceptance_bolt_contests_and_the_buyer_upholds(
    bolt_fail: Evaluation, vendor_b: Any, vendor_a: Any, buyer: Any, evaluator: Any
) -> None:
    opened = contest(bolt_fail, vendor_b)
    assert opened.status_code == 201, opened.json()
    dispute = opened.json()
    assert (dispute["status"], dispute["verdict"], dispute["vendor"]) == (
        "open", "FAIL", "bolt-storage",
    )  # fmt: skip
    url = f"{LIST}{dispute['id']}/"

    assert [d["id"] for d in api(buyer).get(LIST).json()["results"]] == [dispute["id"]]
    board = api(buyer).get(f"/api/v1/rfps/{bolt_fail.rfp.public_id}/gate-board/")
    cells = [g for v in board.json()["vendors"] for g in v["gates"]]
    assert [c["open_dispute"] for c in cells if c["open_dispute"]] == [dispute["id"]]
    assert api(vendor_a).get(LIST).json()["count"] == 0
    assert api(vendor_a).get(url).status_code == 404
    assert api(vendor_a).post(url + "withdraw/").status_code == 404

    plan = GatePlan.objects.get(pk=bolt_fail.plan_id)
    decide = f"/api/v1/gate-plans/{plan.public_id}/gates/lab-validation/decisions/"
    refused = api(buyer).post(decide, {"kind": "rollback", "rationale": "r"})
    assert (refused.status_code, refused.json()["code"]) == (409, "disputed")

    upheld = api(evaluator).post(url + "uphold/", {"reason": "Warm cache."})
    assert upheld.status_code == 200, upheld.json()
    body = upheld.json()
    assert (body["status"], body["decided_by"]) == ("upheld", evaluator.username)
    retest = api(vendor_b).get(f"/api/v1/retest-obligations/{body['retest']}/")
    assert (retest.json()["status"], retest.json()["cost_bearer"]) == (
        "scheduled", "buyer",
    )  # fmt: skip
    actions = AuditEvent.objects.filter(action__startswith="dispute.")
    assert list(actions.order_by("id").values_list("action", flat=True)) == [
        "dispute.opened",
        "dispute.upheld",
    ]
    leaf = json.loads(bytes(LogEntry.objects.get(index=body["log_index"]).leaf))
    assert (leaf["schema"], leaf["action"], leaf["status"]) == (
        "reprogate.gate-dispute/v1", "dispute.upheld", "upheld",
    )  # fmt: skip


def test_promotion_is_refused_naming_the_open_dispute(
    bolt_fail: Evaluation, vendor_b: Any, buyer: Any
) -> None:
    assert contest(bolt_fail, vendor_b).status_code == 201
    plan = GatePlan.objects.get(pk=bolt_fail.plan_id)
    decide = f"/api/v1/gate-plans/{plan.public_id}/gates/lab-validation/decisions/"

    refused = api(buyer).post(decide, {"kind": "promote", "rationale": "Meets."})

    assert (refused.status_code, refused.json()["code"]) == (409, "not_promotable")
    assert "contests the verdict" in refused.json()["message"]


def test_after_the_window_the_dispute_is_refused(
    bolt_fail: Evaluation, vendor_b: Any, clock: Any
) -> None:
    days = bolt_fail.rfp.dispute_window_days
    clock.travel_to(bolt_fail.evaluated_at + timedelta(days=days, minutes=1))

    refused = contest(bolt_fail, vendor_b)

    assert (refused.status_code, refused.json()["code"]) == (
        409, "dispute_window_closed",
    )  # fmt: skip
    assert not Dispute.objects.exists()


@pytest.mark.parametrize("persona", ["vendor_a", "outsider"])
def test_another_vendor_or_an_outsider_cannot_see_the_evaluation(
    bolt_fail: Evaluation, persona: str, request: pytest.FixtureRequest
) -> None:
    assert contest(bolt_fail, request.getfixturevalue(persona)).status_code == 404


@pytest.mark.parametrize("persona", ["buyer", "labops", "auditor"])
def test_only_the_judged_vendor_contests(
    bolt_fail: Evaluation, persona: str, request: pytest.FixtureRequest
) -> None:
    assert contest(bolt_fail, request.getfixturevalue(persona)).status_code == 403


@pytest.mark.parametrize(
    "body", [{"reason": ""}, {"reason": "x" * 4001}, {"bundle": "not-a-uuid"}]
)
def test_bad_input_is_400_with_its_problems(
    bolt_fail: Evaluation, vendor_b: Any, body: dict[str, Any]
) -> None:
    refused = contest(bolt_fail, vendor_b, **body)

    assert refused.status_code == 400
    assert refused.json()["problems"]


def test_another_vendors_bundle_is_no_such_bundle(
    bolt_fail: Evaluation, vendor_b: Any, two_vendors: Rfp, vendor_a_org: Any
) -> None:
    acme_bundle = two_vendors.bundles.get(organisation=vendor_a_org)

    refused = contest(bolt_fail, vendor_b, bundle=str(acme_bundle.public_id))

    assert refused.status_code == 400
    assert not Dispute.objects.exists()


@pytest.mark.parametrize(
    ("persona", "count"),
    [("buyer", 1), ("auditor", 1), ("vendor_b", 1), ("vendor_a", 0), ("outsider", 0)],
)
def test_the_list_is_scoped_to_the_caller(
    bolt_fail: Evaluation,
    vendor_b: Any,
    persona: str,
    count: int,
    request: pytest.FixtureRequest,
) -> None:
    contest(bolt_fail, vendor_b)

    body = api(request.getfixturevalue(persona)).get(LIST).json()

    assert body["count"] == count


def test_reject_needs_a_reason_and_the_buyer_side(
    bolt_fail: Evaluation, vendor_b: Any, buyer: Any
) -> None:
    url = f"{LIST}{contest(bolt_fail, vendor_b).json()['id']}/"

    assert api(vendor_b).post(url + "reject/", {"reason": "no"}).status_code == 403
    assert api(buyer).post(url + "reject/", {}).status_code == 400
    rejected = api(buyer).post(url + "reject/", {"reason": "The runs were cold."})
    assert rejected.json()["status"] == "rejected"
    again = api(buyer).post(url + "uphold/", {})
    assert (again.status_code, again.json()["code"]) == (409, "invalid_transition")


def test_the_vendor_withdraws_and_may_contest_again(
    bolt_fail: Evaluation, vendor_b: Any, buyer: Any
) -> None:
    url = f"{LIST}{contest(bolt_fail, vendor_b).json()['id']}/"
    assert contest(bolt_fail, vendor_b).status_code == 409

    assert api(buyer).post(url + "withdraw/").status_code == 403
    assert api(vendor_b).post(url + "withdraw/").json()["status"] == "withdrawn"
    assert contest(bolt_fail, vendor_b).status_code == 201
