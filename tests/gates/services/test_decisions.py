"""Decisions on a gate: hold and rollback recorded at once, a promotion pending
its second sign-off by another buyer-side person (service and database), the
canary streak, a stop-loss forcing hold, gate order, withdrawal, the
transparency-log entry, audit rows and the vendor's notification."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import IntegrityError, transaction
from django.urls import reverse

from accounts.exceptions import InvalidTransition
from accounts.models import AuditEvent, Notification
from accounts.services.notifications import notification_link_label
from artifacts.models import LogEntry
from gates.exceptions import GatesConflict, GatesError
from gates.models import DECISION_TRANSITIONS, Decision, GatePlan
from gates.selectors.decisions import gate_state
from gates.services.decisions import (
    decision_record,
    decision_second,
    decision_transition,
    decision_withdraw,
)
from gates.services.pipeline import gate_judge
from procurement.models import Rfp
from tests.gates.support import (
    FAIL,
    LAB,
    PASS,
    evaluate_fixture,  # noqa: F401
    finish_runs,
    make_frozen_plan,
    plan_document,
)
from tests.transition_moves import Move

pytestmark = pytest.mark.django_db


@pytest.fixture
def pending(frozen_plan: GatePlan, evaluate: Any, buyer: Any) -> Decision:
    """The buyer's promotion of lab-validation on a PASS, waiting for its second
    sign-off."""
    evaluate(frozen_plan, PASS)
    return decision_record(
        plan=frozen_plan, gate=LAB, kind="promote", rationale="Meets.", actor=buyer
    )


def canary_plan(rfp: Rfp, vendor: Any, buyer: Any, passes: int) -> GatePlan:
    doc = plan_document(rfp.reference, vendor.slug, consecutive_passes=passes)
    return make_frozen_plan(rfp, vendor, buyer, doc)


def test_hold_is_recorded_logged_audited_and_told_to_the_vendor(
    frozen_plan: GatePlan, evaluate: Any, buyer: Any, vendor_a: Any
) -> None:
    evaluation = evaluate(frozen_plan, FAIL)

    decision = decision_record(
        plan=frozen_plan, gate=LAB, kind="hold", rationale="Misses p99.", actor=buyer
    )

    assert (decision.status, decision.evaluation) == ("recorded", evaluation)
    leaf = json.loads(bytes(LogEntry.objects.get(index=decision.log_index).leaf))
    assert leaf["schema"] == "reprogate.gate-decision/v1"
    assert (leaf["kind"], leaf["gate"]) == ("hold", LAB)
    assert leaf["evaluation_sha256"] == evaluation.evaluation_sha256
    event = AuditEvent.objects.get(action="gate.decided")
    assert event.data["rationale"] == "Misses p99."
    assert event.data["log_index"] == decision.log_index
    told = Notification.objects.filter(recipient=vendor_a, subject__contains="hold")
    assert told.get().subject.endswith("lab-validation on hold")
    rfp = frozen_plan.rfp
    gate_page = reverse("gates:gate", args=[rfp.public_id, "acme-flash", LAB])
    assert told.get().url == gate_page
    assert notification_link_label(gate_page) == "Open the gate"


def test_rationale_and_buyer_side_are_required(
    frozen_plan: GatePlan, evaluate: Any, buyer: Any, vendor_a: Any, labops: Any
) -> None:
    evaluate(frozen_plan, PASS)

    with pytest.raises(GatesError, match="rationale"):
        decision_record(
            plan=frozen_plan, gate=LAB, kind="hold", rationale=" ", actor=buyer
        )
    for outsider in (vendor_a, labops):
        with pytest.raises(GatesError, match="Only members"):
            decision_record(
                plan=frozen_plan, gate=LAB, kind="hold", rationale="x", actor=outsider
            )
    with pytest.raises(GatesError, match="promote, hold or roll back"):
        decision_record(
            plan=frozen_plan, gate=LAB, kind="ship", rationale="x", actor=buyer
        )
    assert not Decision.objects.exists()


def test_no_decision_before_an_evaluation(frozen_plan: GatePlan, buyer: Any) -> None:
    with pytest.raises(GatesConflict, match="not been evaluated"):
        decision_record(
            plan=frozen_plan, gate=LAB, kind="hold", rationale="x", actor=buyer
        )


def test_promotion_takes_a_second_person(
    frozen_plan: GatePlan, evaluate: Any, buyer: Any, evaluator: Any, vendor_a: Any
) -> None:
    evaluate(frozen_plan, PASS)

    pending = decision_record(
        plan=frozen_plan, gate=LAB, kind="promote", rationale="Meets.", actor=buyer
    )
    assert pending.status == "pending"
    asked = Notification.objects.filter(recipient=evaluator)
    assert asked.get().subject.endswith("waits for your sign-off")
    with pytest.raises(GatesError, match="another member"):
        decision_second(decision=pending, actor=buyer)
    first_index = pending.log_index

    recorded = decision_second(decision=pending, actor=evaluator, note="Agreed.")

    assert (recorded.status, recorded.second_by) == ("recorded", evaluator)
    assert recorded.log_index != first_index
    leaf = json.loads(bytes(LogEntry.objects.get(index=recorded.log_index).leaf))
    assert (leaf["status"], leaf["first_log_index"]) == ("recorded", first_index)
    assert AuditEvent.objects.filter(action="gate.decision_seconded").count() == 1
    assert gate_state(frozen_plan, LAB).promoted
    told = Notification.objects.filter(recipient=vendor_a, subject__contains="promot")
    assert [n.subject.split(": ", 1)[1] for n in told.order_by("id")] == [
        "promotion of lab-validation proposed",
        "lab-validation promoted",
    ]


def test_database_refuses_the_same_person_twice(pending: Decision, buyer: Any) -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        Decision.objects.filter(pk=pending.pk).update(second_by=buyer)


def test_withdrawn_promotion_cannot_be_seconded(
    pending: Decision, buyer: Any, evaluator: Any
) -> None:
    withdrawn = decision_withdraw(decision=pending, actor=evaluator)

    assert (withdrawn.status, withdrawn.withdrawn_by) == ("withdrawn", evaluator)
    with pytest.raises(InvalidTransition):
        decision_second(decision=pending, actor=evaluator)
    with pytest.raises(InvalidTransition):
        decision_withdraw(decision=pending, actor=buyer)
    assert AuditEvent.objects.filter(action="gate.decision_withdrawn").count() == 1


def test_canary_streak_needs_consecutive_passes(
    rfp: Rfp, vendor_a_org: Any, buyer: Any, evaluate: Any
) -> None:
    plan = canary_plan(rfp, vendor_a_org, buyer, passes=2)
    for values in (PASS, FAIL, PASS):
        evaluate(plan, values)

    state = gate_state(plan, LAB)
    assert (state.streak, state.passes_to_go) == (1, 1)
    with pytest.raises(GatesConflict, match="1 of 2 consecutive passes: 1 more"):
        decision_record(plan=plan, gate=LAB, kind="promote", rationale="x", actor=buyer)

    evaluate(plan, PASS)

    assert gate_state(plan, LAB).streak == 2
    decision = decision_record(
        plan=plan, gate=LAB, kind="promote", rationale="Two in a row.", actor=buyer
    )
    assert decision.status == "pending"


def test_re_evaluating_one_campaign_does_not_add_a_pass(
    rfp: Rfp, vendor_a_org: Any, buyer: Any, gate_campaign: Any, clock: Any
) -> None:
    plan = canary_plan(rfp, vendor_a_org, buyer, passes=2)
    campaign = gate_campaign(3)
    finish_runs(campaign, {"cold-c1": PASS})

    for _ in range(2):
        clock.advance(minutes=1)
        gate_judge(plan=plan, gate=LAB, campaign=campaign, actor=buyer)

    assert gate_state(plan, LAB).streak == 1


def test_stop_loss_forces_hold_until_a_later_pass(
    frozen_plan: GatePlan, evaluate: Any, buyer: Any, evaluator: Any
) -> None:
    evaluate(frozen_plan, PASS)
    halted = evaluate(frozen_plan, PASS, drift="major")
    assert halted.verdict == "HALTED"

    with pytest.raises(GatesConflict, match="stop-loss"):
        decision_record(
            plan=frozen_plan, gate=LAB, kind="promote", rationale="x", actor=buyer
        )
    hold = decision_record(
        plan=frozen_plan, gate=LAB, kind="hold", rationale="Halted.", actor=buyer
    )
    assert hold.status == "recorded"

    evaluate(frozen_plan, PASS)

    pending = decision_record(
        plan=frozen_plan, gate=LAB, kind="promote", rationale="Back.", actor=buyer
    )
    assert decision_second(decision=pending, actor=evaluator).status == "recorded"


def test_second_sign_off_rechecks_a_newer_evaluation(
    pending: Decision, frozen_plan: GatePlan, evaluate: Any, evaluator: Any
) -> None:
    evaluate(frozen_plan, FAIL)

    with pytest.raises(GatesConflict, match="latest evaluation is FAIL"):
        decision_second(decision=pending, actor=evaluator)
    pending.refresh_from_db()
    assert pending.status == "pending"


def test_a_gate_is_promoted_after_the_previous_one(
    frozen_plan: GatePlan, evaluate: Any, buyer: Any, evaluator: Any
) -> None:
    evaluate(frozen_plan, PASS, gate="pilot")

    with pytest.raises(GatesConflict, match="Promote lab-validation first"):
        decision_record(
            plan=frozen_plan, gate="pilot", kind="promote", rationale="x", actor=buyer
        )

    evaluate(frozen_plan, PASS)
    first = decision_record(
        plan=frozen_plan, gate=LAB, kind="promote", rationale="Lab ok.", actor=buyer
    )
    decision_second(decision=first, actor=evaluator)
    pilot = decision_record(
        plan=frozen_plan, gate="pilot", kind="promote", rationale="ok", actor=buyer
    )
    assert pilot.status == "pending"


def test_rollback_takes_effect_at_once_over_a_promotion(
    frozen_plan: GatePlan, evaluate: Any, buyer: Any, evaluator: Any
) -> None:
    evaluate(frozen_plan, PASS)
    promotion = decision_record(
        plan=frozen_plan, gate=LAB, kind="promote", rationale="ok", actor=buyer
    )
    decision_second(decision=promotion, actor=evaluator)

    decision_record(
        plan=frozen_plan, gate=LAB, kind="rollback", rationale="Regressed.", actor=buyer
    )

    state = gate_state(frozen_plan, LAB)
    assert (state.recorded.kind, state.promoted) == ("rollback", False)


STATUSES = [s.value for s in Decision.Status]


@pytest.mark.parametrize("current", STATUSES)
@pytest.mark.parametrize("to", STATUSES)
def test_decision_transition_matrix(
    current: str,
    to: str,
    frozen_plan: GatePlan,
    evaluate: Any,
    buyer: Any,
    transition_moves: list[Move],
) -> None:
    decision = Decision.objects.create(
        plan=frozen_plan,
        gate=LAB,
        evaluation=evaluate(frozen_plan, PASS),
        kind="hold",
        status=current,
        rationale="r",
        decided_by=buyer,
        decided_at=frozen_plan.frozen_at,
    )
    allowed = to in DECISION_TRANSITIONS[current]
    rows = AuditEvent.objects.count()

    with transaction.atomic():
        if allowed:
            decision_transition(decision=decision, to=to, actor=buyer, action="t")
        else:
            with pytest.raises(InvalidTransition):
                decision_transition(decision=decision, to=to, actor=buyer, action="t")

    decision.refresh_from_db()
    assert decision.status == (to if allowed else current)
    assert AuditEvent.objects.count() == rows + allowed  # one call, one row
    assert transition_moves == (
        [Move("gates.decision", current, to)] if allowed else []
    )


def test_decisions_are_taken_on_the_current_plan_only(
    frozen_plan: GatePlan, evaluate: Any, buyer: Any
) -> None:
    evaluate(frozen_plan, PASS)
    GatePlan.objects.filter(pk=frozen_plan.pk).update(status="superseded")
    frozen_plan.refresh_from_db()

    with pytest.raises(GatesConflict, match="current frozen plan"):
        decision_record(
            plan=frozen_plan, gate=LAB, kind="hold", rationale="x", actor=buyer
        )


def test_gate_state_reads_in_four_queries_whatever_the_history(
    frozen_plan: GatePlan, evaluate: Any, buyer: Any, django_assert_num_queries: Any
) -> None:
    for _ in range(3):
        evaluate(frozen_plan, PASS, gate="pilot")
    decision_record(
        plan=frozen_plan, gate="pilot", kind="hold", rationale="Wait.", actor=buyer
    )

    # evaluations, decisions, the previous gate's, an open dispute
    with django_assert_num_queries(4):
        state = gate_state(frozen_plan, "pilot")

    assert (state.streak, state.recorded.kind) == (3, "hold")
    assert state.why_not == ["Promote lab-validation first."]
