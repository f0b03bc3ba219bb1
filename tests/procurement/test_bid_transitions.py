from __future__ import annotations

import itertools
from typing import Any

import pytest

from accounts.exceptions import InvalidTransition
from accounts.models import AuditEvent, Organisation
from procurement.models import BID_TRANSITIONS, Bid
from procurement.services.bids import bid_transition
from tests.procurement.factories_bids import BidFactory, tender
from tests.transition_moves import Move

pytestmark = pytest.mark.django_db

ALL_MOVES = list(itertools.product(Bid.Status.values, Bid.Status.values))


def test_bid_transition_table_covers_every_status() -> None:
    assert set(BID_TRANSITIONS) == set(Bid.Status.values)


@pytest.mark.parametrize(("current", "to"), ALL_MOVES)
def test_bid_transition_follows_the_table(
    current: str,
    to: str,
    vendor_a: Any,
    buyer_org: Organisation,
    vendor_a_org: Organisation,
    transition_moves: list[Move],
) -> None:
    bid = BidFactory.create(
        rfp=tender(buyer_org, vendor_a_org),
        vendor_organisation=vendor_a_org,
        status=current,
    )
    allowed = to in BID_TRANSITIONS[current]

    if allowed:
        bid_transition(bid=bid, to=to, actor=vendor_a)
    else:
        with pytest.raises(InvalidTransition):
            bid_transition(bid=bid, to=to, actor=vendor_a)

    bid.refresh_from_db()
    assert bid.status == (to if allowed else current)
    events = AuditEvent.objects.filter(action="bid.transitioned")
    assert events.count() == allowed
    assert all(e.organisation_id == vendor_a_org.pk for e in events)
    assert transition_moves == (
        [Move("procurement.bid", current, to)] if allowed else []
    )
