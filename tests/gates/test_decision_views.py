"""The decision panel and its POST actions: the buyer side decides, seconds and
withdraws; the vendor reads its own gate's panel without forms; the engaged lab
may not decide (403); another vendor and other organisations get 404."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from gates.models import Decision, Evaluation, GatePlan
from gates.services.decisions import decision_record
from gates.services.pipeline import gate_judge
from tests.gates.support import LAB, PASS, finish_runs

pytestmark = pytest.mark.django_db


@pytest.fixture
def passed(frozen_plan: GatePlan, gate_campaign: Any, buyer: Any) -> Evaluation:
    campaign = gate_campaign(3)
    finish_runs(campaign, {"cold-c1": PASS})
    return gate_judge(plan=frozen_plan, gate=LAB, campaign=campaign, actor=buyer)


@pytest.fixture
def pending(frozen_plan: GatePlan, passed: Evaluation, buyer: Any) -> Decision:
    """The buyer's promotion of the passed gate, waiting for its second sign-off."""
    return decision_record(
        plan=frozen_plan, gate=LAB, kind="promote", rationale="Go.", actor=buyer
    )


def panel_url(plan: GatePlan) -> str:
    return reverse("gates:decisions", args=[plan.public_id, LAB])


def decide_url(plan: GatePlan) -> str:
    return reverse("gates:decide", args=[plan.public_id, LAB])


def test_buyer_sees_the_panel_with_the_decision_form(
    frozen_plan: GatePlan, passed: Evaluation, client_for: Any, buyer: Any
) -> None:
    response = client_for(buyer).get(panel_url(frozen_plan))

    assert response.status_code == 200
    body = response.content.decode()
    assert 'data-testid="decision-form"' in body
    assert "1 of 1 consecutive pass" in body
    assert "No decision on this gate yet." in body


def test_panel_before_any_evaluation_says_so(
    frozen_plan: GatePlan, client_for: Any, buyer: Any
) -> None:
    body = client_for(buyer).get(panel_url(frozen_plan)).content.decode()

    assert "has not been evaluated yet" in body
    assert 'data-testid="decision-form"' not in body


def test_vendor_reads_its_own_panel_without_forms(
    frozen_plan: GatePlan,
    passed: Evaluation,
    client_for: Any,
    buyer: Any,
    vendor_a: Any,
) -> None:
    decision_record(
        plan=frozen_plan, gate=LAB, kind="hold", rationale="Wait.", actor=buyer
    )

    response = client_for(vendor_a).get(panel_url(frozen_plan))

    body = response.content.decode()
    assert response.status_code == 200
    assert "Wait." in body
    assert 'data-testid="decision-form"' not in body


@pytest.mark.parametrize("who", ["vendor_b", "outsider"])
def test_other_organisations_get_404(
    who: str, frozen_plan: GatePlan, passed: Evaluation, client_for: Any, request: Any
) -> None:
    client = client_for(request.getfixturevalue(who))

    assert client.get(panel_url(frozen_plan)).status_code == 404
    response = client.post(decide_url(frozen_plan), {"kind": "hold", "rationale": "x"})
    assert response.status_code == 404
    assert not Decision.objects.exists()


@pytest.mark.parametrize("who", ["vendor_a", "labops", "auditor"])
def test_only_the_buyer_side_decides(
    who: str, frozen_plan: GatePlan, passed: Evaluation, client_for: Any, request: Any
) -> None:
    client = client_for(request.getfixturevalue(who))

    response = client.post(decide_url(frozen_plan), {"kind": "hold", "rationale": "x"})

    assert response.status_code == 403
    assert not Decision.objects.exists()


def test_decide_is_post_only(
    frozen_plan: GatePlan, passed: Evaluation, client_for: Any, buyer: Any
) -> None:
    assert client_for(buyer).get(decide_url(frozen_plan)).status_code == 405


def test_hold_is_recorded_and_returns_to_next(
    frozen_plan: GatePlan, passed: Evaluation, client_for: Any, buyer: Any
) -> None:
    back = "/gates/somewhere/"

    response = client_for(buyer).post(
        decide_url(frozen_plan), {"kind": "hold", "rationale": "Later.", "next": back}
    )

    assert response.status_code == 302
    assert response["Location"] == back
    assert Decision.objects.get().status == "recorded"


def test_an_offsite_next_is_ignored(
    frozen_plan: GatePlan, passed: Evaluation, client_for: Any, buyer: Any
) -> None:
    response = client_for(buyer).post(
        decide_url(frozen_plan),
        {"kind": "hold", "rationale": "Later.", "next": "https://evil.example/"},
    )

    assert response["Location"] == panel_url(frozen_plan)


def test_refusals_are_shown_as_messages(
    frozen_plan: GatePlan, passed: Evaluation, client_for: Any, buyer: Any
) -> None:
    client = client_for(buyer)

    missing = client.post(decide_url(frozen_plan), {"kind": "hold"}, follow=True)
    assert "say why" in missing.content.decode()
    client.post(decide_url(frozen_plan), {"kind": "promote", "rationale": "Go."})
    twice = client.post(
        decide_url(frozen_plan), {"kind": "promote", "rationale": "Go."}, follow=True
    )

    assert "waiting for its second sign-off" in twice.content.decode()
    assert Decision.objects.count() == 1


def test_second_sign_off_and_withdrawal(
    pending: Decision, client_for: Any, buyer: Any, evaluator: Any
) -> None:
    second = reverse("gates:decision_second", args=[pending.public_id])

    own = client_for(buyer).post(second, follow=True)
    assert "another member of your team" in own.content.decode()
    client_for(evaluator).post(second, {"note": "Agreed."})

    pending.refresh_from_db()
    assert (pending.status, pending.second_note) == ("recorded", "Agreed.")
    withdraw = reverse("gates:decision_withdraw", args=[pending.public_id])
    late = client_for(buyer).post(withdraw, follow=True)
    assert "this decision is recorded." in late.content.decode()


def test_withdraw_a_pending_promotion(
    pending: Decision, client_for: Any, buyer: Any, vendor_a: Any
) -> None:
    withdraw = reverse("gates:decision_withdraw", args=[pending.public_id])

    assert client_for(vendor_a).post(withdraw).status_code == 403
    client_for(buyer).post(withdraw)

    pending.refresh_from_db()
    assert pending.status == "withdrawn"
