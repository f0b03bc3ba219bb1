from __future__ import annotations

import itertools
from typing import Any

import pytest

from accounts.exceptions import InvalidTransition
from accounts.models import AuditEvent, Organisation
from procurement.exceptions import ProcurementError
from procurement.models import RFP_TRANSITIONS, Rfp
from procurement.services.rfp_lifecycle import rfp_transition
from procurement.services.rfps import rfp_create, rfp_invite_vendor
from tests.procurement.factories import RfpFactory
from tests.transition_moves import Move

pytestmark = pytest.mark.django_db

ALL_MOVES = list(itertools.product(Rfp.Status.values, Rfp.Status.values))


@pytest.mark.parametrize(("current", "to"), ALL_MOVES)
def test_rfp_transition_follows_the_table(
    current: str, to: str, buyer: Any, transition_moves: list[Move]
) -> None:
    rfp = RfpFactory.create(status=current)

    if to in RFP_TRANSITIONS[current]:
        rfp_transition(rfp=rfp, to=to, actor=buyer)
    else:
        with pytest.raises(InvalidTransition):
            rfp_transition(rfp=rfp, to=to, actor=buyer)

    rfp.refresh_from_db()
    allowed = to in RFP_TRANSITIONS[current]
    assert rfp.status == (to if allowed else current)
    assert AuditEvent.objects.filter(action="rfp.transitioned").count() == allowed
    assert transition_moves == (
        [Move("procurement.rfp", current, to)] if allowed else []
    )


def test_the_matrix_covers_every_status_including_unsuccessful() -> None:
    assert set(RFP_TRANSITIONS) == set(Rfp.Status.values)
    assert ("closed", "unsuccessful") in ALL_MOVES
    assert ("unsuccessful", "opened") in ALL_MOVES
    assert RFP_TRANSITIONS[Rfp.Status.UNSUCCESSFUL] == frozenset()
    assert len(ALL_MOVES) == len(Rfp.Status.values) ** 2 == 49


def test_rfp_transition_event_names_both_states(buyer: Any) -> None:
    rfp = RfpFactory.create()

    rfp_transition(rfp=rfp, to=Rfp.Status.PUBLISHED, actor=buyer, note="go")

    event = AuditEvent.objects.get(action="rfp.transitioned")
    assert event.data == {
        "rfp": rfp.reference,
        "from": "draft",
        "to": "published",
        "note": "go",
    }
    assert event.actor == buyer
    assert event.organisation_id == rfp.buyer_organisation_id


def test_rfp_create_refuses_a_vendor_as_buyer(vendor_a_org: Organisation) -> None:
    with pytest.raises(ProcurementError):
        rfp_create(
            reference="RFP-X-1",
            title="x",
            buyer_organisation=vendor_a_org,
            submission_deadline=RfpFactory.build().submission_deadline,
            actor=None,
        )

    assert not Rfp.objects.exists()
    assert not AuditEvent.objects.exists()


def test_rfp_create_rejects_a_malformed_reference(buyer_org: Organisation) -> None:
    with pytest.raises(Exception, match="capital letters"):
        rfp_create(
            reference="rfp 1",
            title="x",
            buyer_organisation=buyer_org,
            submission_deadline=RfpFactory.build().submission_deadline,
            actor=None,
        )

    assert not Rfp.objects.exists()


def test_rfp_invite_vendor_refuses_non_vendors_and_duplicates(
    buyer_org: Organisation, vendor_a_org: Organisation
) -> None:
    rfp = RfpFactory.create(buyer_organisation=buyer_org)
    rfp_invite_vendor(rfp=rfp, vendor=vendor_a_org, actor=None)

    with pytest.raises(ProcurementError, match="already invited"):
        rfp_invite_vendor(rfp=rfp, vendor=vendor_a_org, actor=None)
    with pytest.raises(ProcurementError, match="not a vendor"):
        rfp_invite_vendor(rfp=rfp, vendor=buyer_org, actor=None)

    assert AuditEvent.objects.filter(action="rfp.vendor_invited").count() == 1


def test_a_stale_copy_moves_from_the_status_as_stored(buyer: Any) -> None:
    """The helper reads the locked row's status: a copy loaded before another
    move cannot make a move its stored status no longer allows."""
    stale = RfpFactory.create()
    rfp_transition(rfp=Rfp.objects.get(pk=stale.pk), to="cancelled", actor=buyer)

    with pytest.raises(InvalidTransition) as refused:
        rfp_transition(rfp=stale, to=Rfp.Status.PUBLISHED, actor=buyer)

    assert refused.value.current == "cancelled"
    assert AuditEvent.objects.filter(action="rfp.transitioned").count() == 1
