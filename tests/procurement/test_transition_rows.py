"""One call of a transition helper is one audit row: the verb's ``action``, the
move and the verb's details in its data (no second row for the same action)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from accounts.models import AuditEvent, Organisation
from procurement.models import Bid, Rfp
from procurement.services.bids import bid_transition, bid_withdraw
from procurement.services.rfp_lifecycle import rfp_transition
from tests.procurement.factories import BidFactory, RfpFactory
from tests.procurement.factories_bids import submit, tender

pytestmark = pytest.mark.django_db


def _rfp(actor: Any, **verb: Any) -> tuple[Any, str, str]:
    rfp = RfpFactory.create()
    rfp_transition(rfp=rfp, to=Rfp.Status.PUBLISHED, actor=actor, **verb)
    return rfp, Rfp.Status.DRAFT, Rfp.Status.PUBLISHED


def _bid(actor: Any, **verb: Any) -> tuple[Any, str, str]:
    bid = BidFactory.create()
    to = Bid.Status.WITHDRAWN
    bid_transition(bid=bid, to=to, actor=actor, **verb)
    return bid, Bid.Status.SUBMITTED, to


HELPERS: dict[str, Callable[..., tuple[Any, str, str]]] = {"rfp": _rfp, "bid": _bid}


@pytest.mark.parametrize("entity", sorted(HELPERS))
def test_a_bare_move_is_one_transitioned_row(entity: str, buyer: Any) -> None:
    before = AuditEvent.objects.count()

    obj, old, new = HELPERS[entity](buyer)

    assert AuditEvent.objects.count() == before + 1
    event = AuditEvent.objects.latest("id")
    assert event.action == f"{entity}.transitioned"
    assert event.target_id == str(obj.pk)
    assert (event.data["from"], event.data["to"]) == (old, new)


@pytest.mark.parametrize("entity", sorted(HELPERS))
def test_a_verbs_move_is_its_one_row_with_its_details(entity: str, buyer: Any) -> None:
    before = AuditEvent.objects.count()

    obj, old, new = HELPERS[entity](
        buyer, action=f"{entity}.verbed", data={"detail": 42}
    )

    assert AuditEvent.objects.count() == before + 1
    event = AuditEvent.objects.get()
    assert (event.action, event.target_id) == (f"{entity}.verbed", str(obj.pk))
    assert (event.data["from"], event.data["to"], event.data["detail"]) == (
        old,
        new,
        42,
    )
    obj.refresh_from_db()
    assert obj.status == new


def test_each_bid_verb_is_one_row_naming_its_receipt_and_move(
    buyer_org: Organisation, vendor_a: Any, vendor_a_org: Organisation, clock: Any
) -> None:
    rfp = tender(buyer_org, vendor_a_org)

    receipts = [
        submit(rfp, vendor_a, vendor_a_org),
        submit(rfp, vendor_a, vendor_a_org, cover_note="Second version"),
        bid_withdraw(rfp=rfp, organisation=vendor_a_org, actor=vendor_a),
        submit(rfp, vendor_a, vendor_a_org),
    ]

    rows = list(AuditEvent.objects.order_by("id"))
    assert [(e.action, e.data["from"], e.data["to"]) for e in rows] == [
        ("bid.submitted", None, "submitted"),  # a new bid: moved from nothing
        ("bid.replaced", "submitted", "submitted"),
        ("bid.withdrawn", "submitted", "withdrawn"),
        ("bid.submitted", "withdrawn", "submitted"),
    ]
    assert [e.data["receipt"] for e in rows] == [str(r.public_id) for r in receipts]
    assert [e.data["commitment"] for e in rows] == [r.commitment for r in receipts]
