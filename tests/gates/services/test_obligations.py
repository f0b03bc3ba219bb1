"""Re-test obligations: raised by a blocking FAIL on a matching (or accepted)
environment and not otherwise, asked for with a revised bundle, run by the lab,
answered by the re-test's evaluation (passed, back to open, failed: a breach),
expired by the clock (read before the beat, persisted by it); every transition
of the table, audit rows and notifications."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from django.db import transaction

from accounts.exceptions import ApplicationError, InvalidTransition
from accounts.models import AuditEvent, Notification
from accounts.services.notifications import notification_link_label
from artifacts.models import Bundle, Release
from artifacts.selectors.breaches import breaches_citable
from artifacts.services.release import release_request
from benchmarks.models import Campaign
from gates.exceptions import GatesConflict, GatesError
from gates.models import (
    OBLIGATION_TRANSITIONS,
    GateCampaign,
    GatePlan,
    RetestObligation,
)
from gates.services.obligations import (
    obligation_campaign_start,
    obligation_request_retest,
    obligation_transition,
    obligations_expire,
)
from gates.services.pipeline import campaign_ended_judge
from gates.tasks import obligations_expire_task
from procurement.models import Rfp
from tests.benchmarks.runner.support import GOOD_HARNESS, accepted_bundle, make_pool
from tests.escrow.release_support import award_to
from tests.gates.read_support import oblige
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

OB = RetestObligation.Status


@pytest.fixture
def revised(tmp_path: Path, rfp: Rfp, vendor_a_org: Any, vendor_a: Any) -> Any:
    """``revised(n)``: the vendor's n-th revised accepted bundle on the RFP,
    uploaded after opening (an open re-test obligation lets the vendor upload)."""

    def make(n: int = 1) -> Bundle:
        harness = GOOD_HARNESS + f"\n# revision {n}\n".encode()
        return accepted_bundle(
            tmp_path / f"rev-{n}", rfp, vendor_a_org, vendor_a, harness=harness
        )

    return make


def no_drift_stop_plan(rfp: Rfp, vendor: Any, buyer: Any, **kw: Any) -> GatePlan:
    """A plan whose only stop-loss is a failed run, so that a major drift is
    judged (FAIL) instead of halting the gate."""
    doc = plan_document(
        rfp.reference, vendor.slug, stop_loss=[{"id": "f", "run_failed": True}]
    )
    return make_frozen_plan(rfp, vendor, buyer, doc, **kw)


@pytest.fixture
def obligation(frozen_plan: GatePlan, evaluate: Any) -> RetestObligation:
    """The open obligation a blocking FAIL of the frozen plan raised."""
    evaluate(frozen_plan, FAIL)
    return RetestObligation.objects.get()


def told(user: Any, words: str) -> list[str]:
    found = Notification.objects.filter(recipient=user, subject__contains=words)
    return list(found.values_list("subject", flat=True))


def test_blocking_fail_raises_an_obligation_on_the_vendor(
    frozen_plan: GatePlan, evaluate: Any, rfp: Rfp, vendor_a: Any
) -> None:
    evaluation = evaluate(frozen_plan, FAIL)

    obligation = RetestObligation.objects.get()
    assert (obligation.status, obligation.criteria) == (OB.OPEN, ["ttft-p99-cold-c1"])
    assert obligation.evaluation == evaluation
    assert obligation.reason.startswith("ttft-p99-cold-c1: ")
    assert "claimed 180" in obligation.reason
    assert "accepted up to 198" in obligation.reason
    assert "measured median 236.5" in obligation.reason
    assert obligation.deadline == evaluation.evaluated_at + timedelta(
        days=rfp.retest_deadline_days
    )
    assert obligation.max_attempts == rfp.retest_max_attempts
    assert obligation.cost_bearer == "vendor"
    assert AuditEvent.objects.filter(action="retest.raised").count() == 1
    [due] = Notification.objects.filter(recipient=vendor_a, subject__contains="due by")
    assert notification_link_label(due.url) == "Open the re-test obligation"


def test_buyer_funded_retest_is_borne_by_the_buyer(
    frozen_plan: GatePlan, evaluate: Any, rfp: Rfp
) -> None:
    Rfp.objects.filter(pk=rfp.pk).update(retest_vendor_funded=False)

    evaluate(frozen_plan, FAIL)

    assert RetestObligation.objects.get().cost_bearer == "buyer"


def test_pass_and_halt_raise_nothing(frozen_plan: GatePlan, evaluate: Any) -> None:
    assert evaluate(frozen_plan, PASS).verdict == "PASS"
    assert evaluate(frozen_plan, FAIL, drift="major").verdict == "HALTED"

    assert not RetestObligation.objects.exists()


def test_major_drift_is_a_lab_deviation_unless_the_plan_accepts_the_lab(
    rfp: Rfp, vendor_a_org: Any, buyer: Any, evaluate: Any
) -> None:
    plan = no_drift_stop_plan(rfp, vendor_a_org, buyer)
    failed = evaluate(plan, FAIL, drift="major")
    assert (failed.verdict, failed.max_drift) == ("FAIL", "major")
    assert not RetestObligation.objects.exists()

    GatePlan.objects.filter(pk=plan.pk).update(lab_environment_accepted=True)
    plan.refresh_from_db()
    evaluate(plan, FAIL, drift="major")

    assert RetestObligation.objects.count() == 1


def test_one_live_obligation_per_gate(frozen_plan: GatePlan, evaluate: Any) -> None:
    evaluate(frozen_plan, FAIL)
    evaluate(frozen_plan, FAIL)

    assert RetestObligation.objects.count() == 1


def test_vendor_requests_the_retest_with_a_revised_bundle(
    obligation: RetestObligation,
    revised: Any,
    vendor_a: Any,
    labops: Any,
) -> None:
    bundle = revised()

    scheduled = obligation_request_retest(
        obligation=obligation, bundle=bundle, actor=vendor_a
    )

    assert (scheduled.status, scheduled.attempts_used) == (OB.SCHEDULED, 1)
    assert (scheduled.bundle, scheduled.requested_by) == (bundle, vendor_a)
    assert AuditEvent.objects.filter(action="retest.scheduled").count() == 1
    assert told(labops, "to run")


def test_request_refuses_others_and_unrevised_or_rejected_bundles(
    frozen_plan: GatePlan,
    evaluate: Any,
    revised: Any,
    vendor_a: Any,
    vendor_b: Any,
    buyer: Any,
) -> None:
    failed = evaluate(frozen_plan, FAIL)
    obligation = RetestObligation.objects.get()
    bundle = revised()

    for actor in (vendor_b, buyer):
        with pytest.raises(GatesError, match="vendor's members"):
            obligation_request_retest(obligation=obligation, bundle=bundle, actor=actor)
    with pytest.raises(GatesError, match="revised bundle"):
        obligation_request_retest(
            obligation=obligation, bundle=failed.campaign.bundle, actor=vendor_a
        )
    Bundle.objects.filter(pk=bundle.pk).update(status=Bundle.Status.REJECTED)
    bundle.refresh_from_db()
    with pytest.raises(GatesError, match="accepted bundle"):
        obligation_request_retest(obligation=obligation, bundle=bundle, actor=vendor_a)
    obligation.refresh_from_db()
    assert (obligation.status, obligation.attempts_used) == (OB.OPEN, 0)


@pytest.fixture
def retest(revised: Any, vendor_a: Any, labops: Any) -> Any:
    """``retest(obligation, n=1)``: the vendor asks for the re-test with its n-th
    revised bundle, then a lab operator starts the re-test campaign (returned)."""

    def make(obligation: RetestObligation, n: int = 1) -> Campaign:
        obligation = obligation_request_retest(
            obligation=obligation, bundle=revised(n), actor=vendor_a
        )
        lab_org = obligation.rfp.buyer_organisation.engages.get(kind="lab")
        pool = make_pool(lab_org, f"retest-{obligation.attempts_used}")
        return obligation_campaign_start(obligation=obligation, pool=pool, actor=labops)

    return make


def test_lab_starts_the_retest_campaign_linked_to_the_gate(
    obligation: RetestObligation, frozen_plan: GatePlan, labops: Any, retest: Any
) -> None:
    campaign = retest(obligation)

    obligation.refresh_from_db()
    assert obligation.campaign == campaign
    assert (campaign.bundle, campaign.repetitions) == (obligation.bundle, 3)
    link = GateCampaign.objects.get(campaign=campaign)
    assert (link.plan, link.gate, link.requested_by) == (frozen_plan, LAB, labops)
    with pytest.raises(GatesConflict, match="started already"):
        obligation_campaign_start(
            obligation=obligation, pool=campaign.pool, actor=labops
        )


def test_passing_retest_answers_the_obligation(
    obligation: RetestObligation,
    frozen_plan: GatePlan,
    evaluate: Any,
    vendor_a: Any,
    buyer: Any,
    retest: Any,
) -> None:
    campaign: Campaign = retest(obligation)

    answer = evaluate(frozen_plan, PASS, campaign=campaign)

    obligation.refresh_from_db()
    assert answer.obligation == obligation
    assert (obligation.status, obligation.breached_at) == (OB.PASSED, None)
    assert obligation.closed_at == answer.evaluated_at
    assert told(vendor_a, "passed")
    assert told(buyer, "passed")


def test_failing_retest_uses_an_attempt_then_breaches(
    obligation: RetestObligation,
    frozen_plan: GatePlan,
    evaluate: Any,
    vendor_a: Any,
    buyer: Any,
    retest: Any,
) -> None:
    deadline = obligation.deadline

    evaluate(
        frozen_plan,
        FAIL,
        campaign=retest(obligation, 1),
    )

    obligation.refresh_from_db()
    assert (obligation.status, obligation.attempts_left) == (OB.OPEN, 1)
    assert obligation.deadline == deadline
    assert AuditEvent.objects.filter(action="retest.reopened").count() == 1

    last = evaluate(
        frozen_plan,
        FAIL,
        campaign=retest(obligation, 2),
    )

    obligation.refresh_from_db()
    assert (obligation.status, obligation.attempts_left) == (OB.FAILED, 0)
    assert obligation.breached_at == last.evaluated_at
    assert told(vendor_a, "obligation breached")
    assert told(buyer, "obligation breached")
    assert RetestObligation.objects.count() == 1  # a breach, not a new obligation


def test_inconclusive_retest_leaves_it_scheduled(
    obligation: RetestObligation, frozen_plan: GatePlan, evaluate: Any, retest: Any
) -> None:
    campaign = retest(obligation)

    assert evaluate(frozen_plan, PASS[:1], campaign=campaign).verdict == "INCONCLUSIVE"

    obligation.refresh_from_db()
    assert (obligation.status, obligation.attempts_used) == (OB.SCHEDULED, 1)


def test_expiry_is_read_by_the_clock_then_persisted_by_the_beat(
    obligation: RetestObligation,
    clock: Any,
    vendor_a: Any,
    buyer: Any,
    rfp: Rfp,
) -> None:
    assert obligation.status_now == OB.OPEN

    clock.advance(days=rfp.retest_deadline_days, minutes=1)

    obligation.refresh_from_db()
    assert (obligation.status, obligation.status_now) == (OB.OPEN, OB.EXPIRED)
    with pytest.raises(GatesConflict, match="deadline"):
        obligation_request_retest(
            obligation=obligation, bundle=Bundle(), actor=vendor_a
        )

    assert obligations_expire_task() == 1

    obligation.refresh_from_db()
    assert obligation.status == OB.EXPIRED
    assert obligation.breached_at == obligation.deadline
    assert AuditEvent.objects.filter(action="retest.expired").count() == 1
    assert told(vendor_a, "expired")
    assert told(buyer, "expired")
    assert obligations_expire() == 0


def test_expire_leaves_obligations_within_their_deadline(
    frozen_plan: GatePlan, evaluate: Any, clock: Any
) -> None:
    evaluate(frozen_plan, FAIL)

    assert obligations_expire(now=clock.now() + timedelta(days=29)) == 0
    assert RetestObligation.objects.get().status == OB.OPEN


STATUSES = [s.value for s in OB]


@pytest.mark.parametrize("current", STATUSES)
@pytest.mark.parametrize("to", STATUSES)
def test_obligation_transition_matrix(
    current: str,
    to: str,
    frozen_plan: GatePlan,
    evaluate: Any,
    clock: Any,
    transition_moves: list[Move],
) -> None:
    evaluation = evaluate(frozen_plan, PASS)
    breached = clock.now() if current in ("failed", "expired") else None
    obligation = oblige(evaluation, days=1, status=current, breached_at=breached)
    allowed = to in OBLIGATION_TRANSITIONS[current]
    rows = AuditEvent.objects.count()

    with transaction.atomic():
        if allowed:
            obligation_transition(obligation=obligation, to=to, actor=None)
        else:
            with pytest.raises(InvalidTransition):
                obligation_transition(obligation=obligation, to=to, actor=None)

    obligation.refresh_from_db()
    assert obligation.status == (to if allowed else current)
    assert AuditEvent.objects.count() == rows + allowed  # one call, one row
    model = "gates.retestobligation"
    assert transition_moves == ([Move(model, current, to)] if allowed else [])
    if allowed:
        assert (obligation.breached_at is not None) == (to in ("failed", "expired"))
        assert (obligation.closed_at is not None) == (
            to in ("passed", "failed", "expired")
        )


def expired_obligation(plan: GatePlan, evaluate: Any, clock: Any) -> RetestObligation:
    evaluate(plan, FAIL)
    clock.advance(days=31)
    return RetestObligation.objects.get()


def test_a_breach_is_citable_by_an_escrow_release(
    frozen_plan: GatePlan,
    evaluate: Any,
    clock: Any,
    rfp: Rfp,
    vendor_a_org: Any,
    buyer: Any,
) -> None:
    obligation = expired_obligation(frozen_plan, evaluate, clock)
    [cited] = breaches_citable(rfp, vendor_a_org.pk)  # by the clock, before the beat
    assert (cited.id, cited.kind) == (str(obligation.public_id), "retest_obligation")
    award_to(rfp, vendor_a_org, buyer)

    release = release_request(
        rfp=rfp,
        condition="breach",
        statement="Support lapsed too.",
        actor=buyer,
        breach=cited.id,
    )

    assert release.statement.startswith(f"Re-test obligation {obligation.public_id}")
    assert obligation.reason in release.statement
    assert release.statement.endswith("expired.\n\nSupport lapsed too.")
    step = release.steps.get()
    leaf = json.loads(bytes(step.event.leaf))
    assert leaf["breach"]["id"] == cited.id
    audit = AuditEvent.objects.get(action="release.requested")
    assert audit.data["breach"]["kind"] == "retest_obligation"


def test_a_release_cites_only_the_vendors_breaches_on_the_breach_condition(
    frozen_plan: GatePlan,
    evaluate: Any,
    clock: Any,
    rfp: Rfp,
    vendor_a_org: Any,
    buyer: Any,
) -> None:
    obligation = expired_obligation(frozen_plan, evaluate, clock)
    award_to(rfp, vendor_a_org, buyer)

    with pytest.raises(ApplicationError, match="breach condition"):
        release_request(
            rfp=rfp,
            condition="support_lapsed",
            statement="",
            actor=buyer,
            breach=str(obligation.public_id),
        )
    with pytest.raises(ApplicationError, match="not a breach"):
        release_request(
            rfp=rfp, condition="breach", statement="", actor=buyer, breach=str(uuid4())
        )
    assert not Release.objects.exists()


def test_a_live_or_passed_obligation_is_no_breach(
    frozen_plan: GatePlan, evaluate: Any, rfp: Rfp, vendor_a_org: Any
) -> None:
    evaluate(frozen_plan, FAIL)

    assert breaches_citable(rfp, vendor_a_org.pk) == []


def test_a_retest_evaluated_after_the_deadline_answers_nothing(
    obligation: RetestObligation,
    frozen_plan: GatePlan,
    evaluate: Any,
    clock: Any,
    rfp: Rfp,
    retest: Any,
) -> None:
    campaign = retest(obligation)
    clock.advance(days=rfp.retest_deadline_days)

    evaluate(frozen_plan, PASS, campaign=campaign)

    obligation.refresh_from_db()
    assert (obligation.status, obligation.breached_at) == (
        OB.EXPIRED,
        obligation.deadline,
    )


def test_the_finished_retest_campaign_is_evaluated_and_answers_the_obligation(
    obligation: RetestObligation, retest: Any
) -> None:
    campaign = retest(obligation)
    finish_runs(campaign, {"cold-c1": PASS, "warm-c1": PASS})

    [evaluation] = campaign_ended_judge(campaign=campaign)

    obligation.refresh_from_db()
    assert (evaluation.obligation, evaluation.verdict) == (obligation, "PASS")
    assert obligation.status == OB.PASSED
