"""The release workflow's services: the transition table, the request's
preconditions, the vendor's objection within the notice period, approvals
(two roles, two people, after the notice), execution and its certificate.
Every step is one escrow event (a log entry naming the deposits) and one
audit row; a refused step leaves neither."""

from __future__ import annotations

import hashlib
import itertools
import json
from typing import Any

import pytest
from django.core.exceptions import PermissionDenied

from accounts.exceptions import ApplicationError, InvalidTransition, StateConflict
from accounts.models import AuditEvent, Notification, Role
from artifacts.models import (
    RELEASE_TRANSITIONS,
    Deposit,
    EscrowEvent,
    LogEntry,
    Release,
    ReleaseStep,
)
from artifacts.services.release import (
    release_object,
    release_reject,
    release_request,
    release_transition,
    release_withdraw,
)
from artifacts.services.release_execution import release_approve, release_execute
from procurement.models import Rfp
from tests.accounts.factories import MembershipFactory, UserFactory
from tests.escrow.conftest import open_bids
from tests.escrow.release_support import (
    BREACH,
    after_notice,
    approve_both,
    award_to,
    request_breach,
)
from tests.transition_moves import Move

pytestmark = pytest.mark.django_db

ALL_MOVES = list(itertools.product(Release.Status.values, Release.Status.values))


@pytest.fixture
def awarded(deposit: Deposit, vendor_a_org: Any, buyer: Any) -> Rfp:
    award_to(deposit.rfp, vendor_a_org, buyer)
    return deposit.rfp


@pytest.fixture
def release(awarded: Rfp, buyer: Any, clock: Any) -> Release:
    return request_breach(awarded, buyer)


def _leaf(event: EscrowEvent) -> dict[str, Any]:
    return json.loads(bytes(event.leaf))


@pytest.mark.parametrize(("current", "to"), ALL_MOVES)
def test_release_transition_follows_the_table(
    release: Release, current: str, to: str, transition_moves: list[Move]
) -> None:
    Release.objects.filter(pk=release.pk).update(
        status=current, executed_at=release.requested_at, certificate_sha256="0" * 64
    )
    release.refresh_from_db()

    rows = AuditEvent.objects.count()
    move: dict[str, Any] = {
        "release": release,
        "to": to,
        "actor": release.requested_by,
        "action": ReleaseStep.Action.WITHDRAWN,
        "role": ReleaseStep.Role.BUYER,
    }

    if to in RELEASE_TRANSITIONS[current]:
        release_transition(**move)
    else:
        with pytest.raises(InvalidTransition):
            release_transition(**move)

    release.refresh_from_db()
    allowed = to in RELEASE_TRANSITIONS[current]
    assert release.status == (to if allowed else current)
    assert AuditEvent.objects.count() == rows + allowed  # the step's one row
    assert transition_moves == (
        [Move("artifacts.release", current, to)] if allowed else []
    )


def test_the_table_covers_every_status_and_ends_in_final_states() -> None:
    assert set(RELEASE_TRANSITIONS) == set(Release.Status.values)
    for final in ("released", "rejected", "withdrawn"):
        assert RELEASE_TRANSITIONS[final] == frozenset()
    assert "released" in RELEASE_TRANSITIONS["approved"]
    assert "released" not in RELEASE_TRANSITIONS["pending"]


def test_request_names_the_deposits_cites_the_clause_and_tells_the_vendor(
    release: Release, deposit: Deposit, vendor_a: Any, clock: Any
) -> None:
    event = EscrowEvent.objects.get(action="release.requested")
    assert release.status == Release.Status.PENDING
    assert list(release.deposits.all()) == [deposit]
    assert release.requested_at == clock.now()
    assert (release.notice_ends_at - release.requested_at).days == 14
    assert release.contract_clause == deposit.rfp.escrow_clause
    clause = deposit.rfp.escrow_clause.encode()
    assert release.contract_clause_sha256 == hashlib.sha256(clause).hexdigest()
    assert _leaf(event)["deposits"] == [
        {"deposit": str(deposit.public_id), "leaf_index": deposit.log_index}
    ]
    assert _leaf(event)["condition"] == "breach"
    assert _leaf(event)["text"] == BREACH
    assert Notification.objects.filter(recipient=vendor_a).count() == 1


def test_notice_period_comes_from_the_setting(
    awarded: Rfp, buyer: Any, settings: Any, clock: Any
) -> None:
    settings.ESCROW_RELEASE_NOTICE_DAYS = 3

    release = request_breach(awarded, buyer)

    assert (release.notice_ends_at - clock.now()).days == 3


def test_request_refused_before_the_award(
    deposit: Deposit, buyer: Any, clock: Any
) -> None:
    rfp = open_bids(deposit.rfp)

    with pytest.raises(StateConflict) as raised:
        request_breach(rfp, buyer)

    assert raised.value.code == "rfp_not_awarded"
    assert not Release.objects.exists()


def test_request_refused_without_an_escrow_clause(awarded: Rfp, buyer: Any) -> None:
    Rfp.objects.filter(pk=awarded.pk).update(escrow_clause="  ")
    awarded.refresh_from_db()

    with pytest.raises(ApplicationError) as raised:
        request_breach(awarded, buyer)

    assert raised.value.code == "no_escrow_clause"


@pytest.mark.parametrize("statement", ["", "   ", "too short"])
def test_other_condition_needs_a_statement(
    awarded: Rfp, buyer: Any, statement: str
) -> None:
    with pytest.raises(ApplicationError) as raised:
        release_request(
            rfp=awarded, condition="other", statement=statement, actor=buyer
        )

    assert raised.value.code == "text_required"
    assert not EscrowEvent.objects.exists()


def test_other_condition_with_its_statement_is_accepted(
    awarded: Rfp, buyer: Any
) -> None:
    release = release_request(
        rfp=awarded,
        condition="other",
        statement="The appliance line was discontinued in March.",
        actor=buyer,
    )

    assert release.condition == "other"


def test_unknown_condition_refused(awarded: Rfp, buyer: Any) -> None:
    with pytest.raises(ApplicationError) as raised:
        release_request(rfp=awarded, condition="boredom", statement=BREACH, actor=buyer)

    assert raised.value.code == "invalid_condition"


def test_second_open_request_refused(release: Release, buyer: Any) -> None:
    with pytest.raises(StateConflict) as raised:
        request_breach(release.rfp, buyer)

    assert raised.value.code == "release_open"


def test_request_refused_when_the_contractor_deposited_nothing(
    deposit: Deposit, vendor_b_org: Any, buyer: Any
) -> None:
    award_to(deposit.rfp, vendor_b_org, buyer)

    with pytest.raises(ApplicationError) as raised:
        request_breach(deposit.rfp, buyer)

    assert raised.value.code == "nothing_deposited"


def test_vendor_objects_within_the_notice_period(
    release: Release, vendor_a: Any, auditor: Any, clock: Any
) -> None:
    clock.advance(days=13)

    release = release_object(
        release=release, reason="Support was given: ticket 4711.", actor=vendor_a
    )

    assert release.status == Release.Status.DISPUTED
    step = release.steps.get(action="objected")
    assert (step.role, step.text) == ("vendor", "Support was given: ticket 4711.")
    told = Notification.objects.filter(subject__contains="objects to the escrow")
    assert sorted(n.recipient.get_username() for n in told) == ["auditor", "buyer"]


def test_objection_after_the_notice_period_refused(
    release: Release, vendor_a: Any, clock: Any
) -> None:
    after_notice(clock)

    with pytest.raises(StateConflict) as raised:
        release_object(release=release, reason="Too late, but still.", actor=vendor_a)

    assert raised.value.code == "notice_over"
    release.refresh_from_db()
    assert release.status == Release.Status.PENDING


def test_second_objection_refused(release: Release, vendor_a: Any) -> None:
    release_object(release=release, reason="Support was given.", actor=vendor_a)

    with pytest.raises(InvalidTransition):
        release_object(release=release, reason="And once more.", actor=vendor_a)


def test_approval_during_the_notice_period_refused(
    release: Release, buyer: Any
) -> None:
    with pytest.raises(StateConflict) as raised:
        release_approve(release=release, actor=buyer)

    assert raised.value.code == "notice_running"
    assert not release.steps.filter(action="approved").exists()


def test_a_single_approval_does_not_release(
    release: Release, buyer: Any, clock: Any
) -> None:
    after_notice(clock)
    release = release_approve(release=release, actor=buyer)

    with pytest.raises(StateConflict) as raised:
        release_execute(release=release, actor=buyer)

    assert raised.value.code == "approvals_missing"
    release.refresh_from_db()
    assert release.status == Release.Status.PENDING
    assert release.certificate_sha256 == ""


def test_second_approval_in_the_same_role_refused(
    release: Release, buyer: Any, buyer_org: Any, clock: Any
) -> None:
    colleague = UserFactory.create(username="buyer-2")
    MembershipFactory.create(user=colleague, organisation=buyer_org, role=Role.ADMIN)
    after_notice(clock)
    release_approve(release=release, actor=buyer)

    with pytest.raises(StateConflict) as raised:
        release_approve(release=release, actor=colleague)

    assert raised.value.code == "role_already_approved"
    assert release.steps.filter(action="approved").count() == 1


def test_the_same_person_cannot_approve_twice(
    release: Release, buyer: Any, clock: Any
) -> None:
    after_notice(clock)
    release_approve(release=release, actor=buyer)

    with pytest.raises(StateConflict) as raised:
        release_approve(release=release, actor=buyer)

    assert raised.value.code == "already_approved"


@pytest.mark.parametrize("persona", ["evaluator", "vendor_a", "labops", "outsider"])
def test_only_buyers_and_auditors_approve(
    request: Any, release: Release, clock: Any, persona: str
) -> None:
    after_notice(clock)

    with pytest.raises(ApplicationError) as raised:
        release_approve(release=release, actor=request.getfixturevalue(persona))

    assert raised.value.code == "not_an_approver"


def test_disputed_release_needs_the_objection_acknowledged(
    release: Release, vendor_a: Any, buyer: Any, clock: Any
) -> None:
    release_object(release=release, reason="Support was given.", actor=vendor_a)
    after_notice(clock)

    with pytest.raises(ApplicationError) as raised:
        release_approve(release=release, actor=buyer, note="We disagree: see log.")

    assert raised.value.code == "objection_not_acknowledged"
    release = release_approve(
        release=release,
        actor=buyer,
        note="Tickets 4711-4720 stayed unanswered.",
        acknowledge_objection=True,
    )
    assert release.steps.get(action="approved").acknowledges_objection is True


def test_approvals_of_both_roles_approve_and_execution_certifies(
    release: Release, deposit: Deposit, buyer: Any, auditor: Any, clock: Any
) -> None:
    after_notice(clock)
    release = approve_both(release, buyer, auditor)
    assert release.status == Release.Status.APPROVED

    release = release_execute(release=release, actor=buyer)

    certificate = json.loads(bytes(release.certificate))
    assert release.status == Release.Status.RELEASED
    digests = {item.blob.sha256 for item in deposit.items.select_related("blob")}
    assert {b["sha256"] for b in certificate["released_blobs"]} == digests
    assert [d["leaf_index"] for d in certificate["deposits"]] == [deposit.log_index]
    assert certificate["condition"] == "breach"
    assert [(s["action"], s["role"]) for s in certificate["steps"]] == [
        ("requested", "buyer"),
        ("approved", "buyer"),
        ("approved", "auditor"),
    ]
    executed = EscrowEvent.objects.get(action="release.executed")
    assert _leaf(executed)["certificate_sha256"] == release.certificate_sha256
    assert hashlib.sha256(bytes(release.certificate)).hexdigest() == (
        release.certificate_sha256
    )


def test_auditor_rejects_and_nothing_is_released(
    release: Release, auditor: Any, buyer: Any
) -> None:
    release = release_reject(
        release=release, reason="The clause requires 30 days' notice.", actor=auditor
    )

    assert release.status == Release.Status.REJECTED
    with pytest.raises(InvalidTransition):
        release_execute(release=release, actor=buyer)


def test_buyer_withdraws(release: Release, buyer: Any, vendor_a: Any) -> None:
    release = release_withdraw(
        release=release, reason="The vendor resumed support.", actor=buyer
    )

    assert release.status == Release.Status.WITHDRAWN
    told = Notification.objects.filter(
        recipient=vendor_a, subject__contains="withdrawn"
    )
    assert told.count() == 1


def test_every_step_is_one_log_entry_and_one_audit_row(
    awarded: Rfp, vendor_a: Any, buyer: Any, auditor: Any, clock: Any
) -> None:
    entries = LogEntry.objects.count()

    release = request_breach(awarded, buyer)
    release_object(release=release, reason="Support was given.", actor=vendor_a)
    after_notice(clock)
    ack = {"note": "Unanswered since March.", "acknowledge_objection": True}
    release = approve_both(release, buyer, auditor, **ack)
    release_execute(release=release, actor=buyer)

    actions = ["requested", "objected", "approved", "approved", "executed"]
    assert LogEntry.objects.count() == entries + len(actions)
    logged = EscrowEvent.objects.filter(action__startswith="release.")
    assert list(logged.order_by("log_index").values_list("action", flat=True)) == [
        f"release.{a}" for a in actions
    ]
    audited = AuditEvent.objects.filter(action__startswith="release.")
    assert sorted(audited.values_list("action", flat=True)) == sorted(
        f"release.{a}" for a in actions
    )
    assert {e.organisation for e in audited} == {awarded.buyer_organisation}
    assert list(ReleaseStep.objects.values_list("action", flat=True)) == actions


def test_refused_step_logs_and_audits_nothing(release: Release, buyer: Any) -> None:
    entries, audits = LogEntry.objects.count(), AuditEvent.objects.count()

    with pytest.raises(StateConflict):
        release_approve(release=release, actor=buyer)

    assert (LogEntry.objects.count(), AuditEvent.objects.count()) == (entries, audits)


@pytest.mark.parametrize(
    ("step", "persona"),
    [
        ("object", "buyer"),  # only the depositing vendor objects
        ("reject", "vendor_a"),  # only an engaged auditor rules
        ("withdraw", "vendor_b"),  # only the buyer side withdraws
        ("execute", "auditor"),  # only the buyer side executes
    ],
)
def test_services_refuse_an_actor_without_the_role(
    release: Release, step: str, persona: str, request: Any
) -> None:
    actor = request.getfixturevalue(persona)
    call = {
        "object": lambda: release_object(release=release, reason="No.", actor=actor),
        "reject": lambda: release_reject(release=release, reason="No.", actor=actor),
        "withdraw": lambda: release_withdraw(
            release=release, reason="No.", actor=actor
        ),
        "execute": lambda: release_execute(release=release, actor=actor),
    }[step]

    with pytest.raises(PermissionDenied):
        call()

    release.refresh_from_db()
    assert release.status == Release.Status.PENDING
    assert not release.steps.exclude(action=ReleaseStep.Action.REQUESTED).exists()
