"""Verdict disputes: the judged vendor contests within the RFP's window, once
per evaluation, with a reason; the buyer side upholds (a re-test at the
buyer's cost) or rejects in writing; the vendor withdraws. While one is open
the gate is neither promoted nor rolled back and its obligation is no breach.
Every step: one audit row, one transparency-log entry, the other side told."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.db import transaction

from accounts.exceptions import InvalidTransition
from accounts.models import AuditEvent, Notification
from artifacts.models import LogEntry
from gates.exceptions import GatesConflict, GatesError
from gates.models import (
    DISPUTE_TRANSITIONS,
    Dispute,
    Evaluation,
    GatePlan,
    RetestObligation,
)
from gates.selectors.breaches import obligation_breaches
from gates.selectors.decisions import gate_state
from gates.services.decisions import decision_record
from gates.services.disputes import (
    dispute_open,
    dispute_reject,
    dispute_transition,
    dispute_uphold,
    dispute_withdraw,
)
from gates.services.obligations import obligations_expire
from procurement.models import Rfp
from tests.gates.support import FAIL, LAB, PASS, evaluate_fixture  # noqa: F401
from tests.transition_moves import Move

pytestmark = pytest.mark.django_db

DS = Dispute.Status
REASON = "The lab ran cold-c1 with the page cache warm: see run r-2's capture."


@pytest.fixture
def failed(frozen_plan: GatePlan, evaluate: Any) -> Evaluation:
    """Acme's lab-validation FAILed (an open re-test obligation on the vendor)."""
    return evaluate(frozen_plan, FAIL)


@pytest.fixture
def opened(failed: Evaluation, vendor_a: Any) -> Dispute:
    return dispute_open(evaluation=failed, reason=REASON, actor=vendor_a)


def leaf(dispute: Dispute) -> dict[str, Any]:
    return json.loads(bytes(LogEntry.objects.get(index=dispute.log_index).leaf))


def test_acceptance_bolt_contests_its_fail_and_the_buyer_upholds_it(
    two_vendors: Rfp, vendor_b: Any, vendor_a: Any, buyer: Any, vendor_b_org: Any
) -> None:
    evaluation = Evaluation.objects.get(vendor_organisation=vendor_b_org)
    assert evaluation.verdict == "FAIL"

    dispute = dispute_open(evaluation=evaluation, reason=REASON, actor=vendor_b)

    assert (dispute.status, dispute.gate, dispute.rfp) == (DS.OPEN, LAB, two_vendors)
    assert Notification.objects.filter(recipient=buyer, subject__contains="contests")
    assert not Notification.objects.filter(recipient=vendor_a, subject__contains="dis")
    assert leaf(dispute)["action"] == "dispute.opened"
    upheld = dispute_uphold(dispute=dispute, actor=buyer, reason="Cache was warm.")
    retest = upheld.retest
    assert retest is not None
    assert (retest.status, retest.cost_bearer) == ("scheduled", "buyer")
    assert retest.bundle == evaluation.campaign.bundle  # the judged bundle again
    assert leaf(upheld)["retest_cost_bearer"] == "buyer"
    trail = AuditEvent.objects.filter(action__startswith="dispute.")
    assert [(e.action, e.target_id) for e in trail.order_by("id")] == [
        ("dispute.opened", str(dispute.pk)),
        ("dispute.upheld", str(dispute.pk)),
    ]
    assert Notification.objects.filter(recipient=vendor_b, subject__contains="upheld")


def test_only_the_judged_vendor_contests(
    failed: Evaluation, vendor_b: Any, buyer: Any
) -> None:
    for actor in (vendor_b, buyer):
        with pytest.raises(GatesError, match="judged vendor"):
            dispute_open(evaluation=failed, reason=REASON, actor=actor)

    assert not Dispute.objects.exists()


@pytest.mark.parametrize(
    ("reason", "match"), [("   ", "Write the reason"), ("x" * 4001, "at most 4000")]
)
def test_the_reason_is_required_and_bounded(
    failed: Evaluation, vendor_a: Any, reason: str, match: str
) -> None:
    with pytest.raises(GatesError, match=match):
        dispute_open(evaluation=failed, reason=reason, actor=vendor_a)


def test_a_pass_has_nothing_to_contest(
    frozen_plan: GatePlan, evaluate: Any, vendor_a: Any
) -> None:
    passed = evaluate(frozen_plan, PASS)

    with pytest.raises(GatesError, match="nothing to contest"):
        dispute_open(evaluation=passed, reason=REASON, actor=vendor_a)


def test_the_window_closes_after_the_contract_days(
    failed: Evaluation, vendor_a: Any, clock: Any
) -> None:
    days = failed.rfp.dispute_window_days
    clock.travel_to(failed.evaluated_at + timedelta(days=days, seconds=1))

    with pytest.raises(GatesConflict, match="dispute window") as refused:
        dispute_open(evaluation=failed, reason=REASON, actor=vendor_a)

    assert refused.value.code == "dispute_window_closed"
    assert not AuditEvent.objects.filter(action="dispute.opened").exists()


def test_the_window_is_open_on_its_last_second(
    failed: Evaluation, vendor_a: Any, clock: Any
) -> None:
    clock.travel_to(
        failed.evaluated_at + timedelta(days=failed.rfp.dispute_window_days)
    )

    assert dispute_open(evaluation=failed, reason=REASON, actor=vendor_a).is_open


def test_one_open_dispute_per_evaluation(opened: Dispute, vendor_a: Any) -> None:
    with pytest.raises(GatesConflict, match="open already"):
        dispute_open(evaluation=opened.evaluation, reason=REASON, actor=vendor_a)

    dispute_withdraw(dispute=opened, actor=vendor_a)
    again = dispute_open(evaluation=opened.evaluation, reason=REASON, actor=vendor_a)
    assert again.status == DS.OPEN


def test_promotion_and_rollback_are_refused_while_open_but_hold_is_not(
    opened: Dispute, frozen_plan: GatePlan, buyer: Any
) -> None:
    assert any("contests" in r for r in gate_state(frozen_plan, LAB).why_not)

    for kind in ("promote", "rollback"):
        with pytest.raises(GatesConflict, match="contests the verdict"):
            decision_record(
                plan=frozen_plan, gate=LAB, kind=kind, rationale="r", actor=buyer
            )

    hold = decision_record(
        plan=frozen_plan, gate=LAB, kind="hold", rationale="r", actor=buyer
    )
    assert hold.status == "recorded"


def test_a_later_pass_is_not_promoted_while_the_fail_is_disputed(
    opened: Dispute, frozen_plan: GatePlan, evaluate: Any, buyer: Any, vendor_a: Any
) -> None:
    evaluate(frozen_plan, PASS)

    with pytest.raises(GatesConflict) as refused:
        decision_record(
            plan=frozen_plan, gate=LAB, kind="promote", rationale="r", actor=buyer
        )

    assert "contests the verdict" in refused.value.message
    dispute_withdraw(dispute=opened, actor=vendor_a)
    assert gate_state(frozen_plan, LAB).promotable


def test_rollback_is_recorded_again_once_the_dispute_is_rejected(
    opened: Dispute, frozen_plan: GatePlan, buyer: Any
) -> None:
    dispute_reject(dispute=opened, actor=buyer, reason="The capture shows it cold.")

    rollback = decision_record(
        plan=frozen_plan, gate=LAB, kind="rollback", rationale="r", actor=buyer
    )
    assert rollback.kind == "rollback"


def test_an_open_dispute_suspends_the_obligations_breach(
    opened: Dispute, rfp: Rfp, vendor_a_org: Any, buyer: Any, clock: Any
) -> None:
    obligation = RetestObligation.objects.get()
    clock.travel_to(obligation.deadline + timedelta(hours=1))

    assert obligation_breaches(rfp, vendor_a_org.pk) == []
    assert obligations_expire() == 0

    dispute_reject(dispute=opened, actor=buyer, reason="The capture shows it cold.")
    assert [b.id for b in obligation_breaches(rfp, vendor_a_org.pk)] == [
        str(obligation.public_id)
    ]
    assert obligations_expire() == 1


def test_uphold_takes_over_the_open_obligation_at_the_buyers_cost(
    opened: Dispute, buyer: Any, labops: Any
) -> None:
    before = RetestObligation.objects.get()

    upheld = dispute_uphold(dispute=opened, actor=buyer)

    after = RetestObligation.objects.get()
    assert upheld.retest == after == before
    assert (after.status, after.cost_bearer) == ("scheduled", "buyer")
    assert after.attempts_left == before.attempts_left  # not the vendor's attempt
    assert after.deadline >= before.deadline
    [told] = Notification.objects.filter(recipient=labops)
    assert "upheld" in told.body
    assert "at the buyer's cost" in told.body


def test_uphold_runs_the_revised_bundle_when_the_vendor_named_one(
    failed: Evaluation, vendor_a: Any, buyer: Any, gate_bundle: Any
) -> None:
    dispute = dispute_open(
        evaluation=failed, reason=REASON, actor=vendor_a, bundle=gate_bundle
    )

    upheld = dispute_uphold(dispute=dispute, actor=buyer)

    assert upheld.retest is not None
    assert upheld.retest.bundle == gate_bundle
    assert leaf(dispute)["action"] == "dispute.opened"
    assert leaf(upheld)["bundle_sha256"] == gate_bundle.sha256


def test_uphold_of_a_halt_schedules_a_new_buyer_funded_retest(
    frozen_plan: GatePlan, evaluate: Any, vendor_a: Any, buyer: Any
) -> None:
    halted = evaluate(frozen_plan, PASS, drift="major")
    assert halted.verdict == "HALTED"
    assert not RetestObligation.objects.exists()
    dispute = dispute_open(evaluation=halted, reason=REASON, actor=vendor_a)

    upheld = dispute_uphold(dispute=dispute, actor=buyer)

    retest = RetestObligation.objects.get()
    assert upheld.retest == retest
    assert (retest.status, retest.cost_bearer, retest.evaluation) == (
        "scheduled", "buyer", halted,
    )  # fmt: skip
    assert retest.criteria == ["ttft-p99-cold-c1"]


def test_reject_needs_a_written_reason_from_the_buyer_side(
    opened: Dispute, vendor_a: Any, buyer: Any
) -> None:
    with pytest.raises(GatesError, match="Write the reason"):
        dispute_reject(dispute=opened, actor=buyer, reason=" ")
    with pytest.raises(GatesError, match="Only members"):
        dispute_reject(dispute=opened, actor=vendor_a, reason="no")

    rejected = dispute_reject(dispute=opened, actor=buyer, reason="Runs were cold.")

    assert (rejected.status, rejected.decided_by) == (DS.REJECTED, buyer)
    assert leaf(rejected)["action"] == "dispute.rejected"
    assert Notification.objects.filter(recipient=vendor_a, subject__contains="rejec")


def test_only_the_vendor_withdraws_and_the_buyer_is_told(
    opened: Dispute, vendor_b: Any, vendor_a: Any, buyer: Any
) -> None:
    with pytest.raises(GatesError, match="vendor's members"):
        dispute_withdraw(dispute=opened, actor=buyer)
    with pytest.raises(GatesError, match="vendor's members"):
        dispute_withdraw(dispute=opened, actor=vendor_b)

    withdrawn = dispute_withdraw(dispute=opened, actor=vendor_a)

    assert withdrawn.status == DS.WITHDRAWN
    assert Notification.objects.filter(recipient=buyer, subject__contains="withdrew")
    event = AuditEvent.objects.get(action="dispute.withdrawn")
    assert (event.data["from"], event.data["to"]) == ("open", "withdrawn")


def test_a_decided_dispute_is_not_decided_again(opened: Dispute, buyer: Any) -> None:
    dispute_reject(dispute=opened, actor=buyer, reason="Runs were cold.")

    with pytest.raises(InvalidTransition, match="this one is rejected"):
        dispute_uphold(dispute=opened, actor=buyer)


STATUSES = [s.value for s in DS]


@pytest.mark.parametrize("current", STATUSES)
@pytest.mark.parametrize("to", STATUSES)
def test_dispute_transition_matrix(
    current: str,
    to: str,
    opened: Dispute,
    buyer: Any,
    transition_moves: list[Move],
) -> None:
    retest = RetestObligation.objects.get()
    decided = {} if current == DS.OPEN else {"decided_by": buyer}
    Dispute.objects.filter(pk=opened.pk).update(
        status=current, retest=retest, decided_at=opened.opened_at, **decided
    )
    opened.refresh_from_db()
    allowed = to in DISPUTE_TRANSITIONS[current]

    with transaction.atomic():
        if allowed:
            dispute_transition(dispute=opened, to=to, actor=buyer)
        else:
            with pytest.raises(InvalidTransition):
                dispute_transition(dispute=opened, to=to, actor=buyer)

    opened.refresh_from_db()
    assert opened.status == (to if allowed else current)
    expected = [Move("gates.dispute", current, to)] if allowed else []
    assert transition_moves == expected
    assert AuditEvent.objects.filter(action=f"dispute.{to}").exists() == allowed
