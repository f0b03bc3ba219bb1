"""The award service and page: winner, rationale, standstill, frozen terms,
notifications to every bidder (requested by a buyer, confirmed by an evaluator;
the two-person rules: ``test_award_two_people``)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from accounts.exceptions import StateConflict
from accounts.models import AuditEvent, Notification, Organisation, Role
from procurement.exceptions import ProcurementError
from procurement.models import Award, Bid, Rfp, TcoFormula
from procurement.services.award import award_confirm, award_request
from procurement.services.evaluation import ScoreEntry, score_sheet_save
from tests.accounts.factories import MembershipFactory, OrganisationFactory, UserFactory
from tests.procurement.factories_evaluation import (
    BidFactory,
    bid_of,
    opened_rfp,
    score_all,
)

pytestmark = pytest.mark.django_db

RATIONALE = "Best reproducibility evidence and the lowest cost per million tokens."


@pytest.fixture
def rfp(
    buyer_org: Organisation, vendor_a_org: Any, vendor_b_org: Any, evaluator: Any
) -> Rfp:
    rfp = opened_rfp(buyer_org, [vendor_a_org, vendor_b_org], standstill_days=10)
    score_all(rfp, evaluator, {"acme-flash": 8, "bolt-storage": 6})
    return rfp


def _award(
    rfp: Rfp, vendor: Organisation, buyer: Any, rationale: str = RATIONALE
) -> Award:
    """Requested by ``buyer``, confirmed by the evaluator who scored (``rfp``)."""
    award_request(rfp=rfp, bid=bid_of(rfp, vendor), rationale=rationale, actor=buyer)
    confirmer = rfp.score_sheets.get().evaluator
    return award_confirm(rfp=rfp, actor=confirmer)


def test_award_records_the_decision_and_the_standstill(
    buyer: Any, evaluator: Any, rfp: Rfp, vendor_a_org: Any, clock: Any
) -> None:
    award = _award(rfp, vendor_a_org, buyer)

    assert award.decided_at == clock.now()
    assert award.standstill_ends_at == clock.now() + timedelta(days=10)
    assert (award.decided_by, award.rationale) == (evaluator, RATIONALE)
    assert award.request.requested_by == buyer
    rfp.refresh_from_db()
    assert rfp.status == Rfp.Status.AWARDED
    assert rfp.terms_frozen_at == clock.now()


def test_award_audits_rank_total_and_formula(
    buyer: Any, rfp: Rfp, vendor_b_org: Any
) -> None:
    _award(rfp, vendor_b_org, buyer)

    event = AuditEvent.objects.get(action="award.created")
    assert event.data["vendor"] == "bolt-storage"
    assert (event.data["rank"], event.data["weighted_total"]) == (2, "60.00")
    assert event.data["tco_formula_version"] == 1
    assert TcoFormula.objects.get(rfp=rfp).version == 1  # recorded when needed
    assert (event.data["from"], event.data["to"]) == ("opened", "awarded")
    assert event.target_id == str(rfp.pk)  # the award and the RFP's move: one row
    assert not AuditEvent.objects.filter(action="rfp.transitioned", data__to="awarded")


def test_award_tells_the_winner_it_won(
    buyer: Any, vendor_a: Any, rfp: Rfp, vendor_a_org: Any
) -> None:
    _award(rfp, vendor_a_org, buyer)

    note = Notification.objects.get(recipient=vendor_a)
    assert "your bid won" in note.subject
    assert "ranked 1 of 2" in note.body


def test_award_tells_the_others_their_own_rank_only(
    buyer: Any, vendor_b: Any, rfp: Rfp, vendor_a_org: Any
) -> None:
    award = _award(rfp, vendor_a_org, buyer)

    note = Notification.objects.get(recipient=vendor_b)
    assert "has been awarded" in note.subject
    assert "ranked 2 of 2, with a weighted score of 60.00" in note.body
    assert award.standstill_ends_at.strftime("%Y-%m-%d %H:%M") in note.body
    assert "80.00" not in note.body
    assert "Acme" not in note.subject + note.body


def test_award_does_not_notify_withdrawn_bidders(
    buyer: Any, rfp: Rfp, vendor_a_org: Any
) -> None:
    quitter = OrganisationFactory.create(slug="quit-co", kind=Organisation.Kind.VENDOR)
    member = UserFactory.create(username="quitter")
    MembershipFactory.create(user=member, organisation=quitter, role=Role.VENDOR)
    BidFactory.create(rfp=rfp, vendor_organisation=quitter, status=Bid.Status.WITHDRAWN)

    _award(rfp, vendor_a_org, buyer)

    assert not Notification.objects.filter(recipient=member).exists()


@pytest.mark.parametrize(
    "status", [Rfp.Status.CLOSED, Rfp.Status.PUBLISHED, Rfp.Status.AWARDED]
)
def test_award_is_refused_unless_opened(
    buyer: Any, rfp: Rfp, vendor_a_org: Any, status: str
) -> None:
    Rfp.objects.filter(pk=rfp.pk).update(status=status)

    with pytest.raises(StateConflict):
        _award(rfp, vendor_a_org, buyer)

    assert not Award.objects.exists()


def test_award_refuses_a_withdrawn_bid(buyer: Any, rfp: Rfp, vendor_b_org: Any) -> None:
    Bid.objects.filter(vendor_organisation=vendor_b_org).update(status="withdrawn")

    with pytest.raises(ProcurementError, match="only a valid submitted bid") as error:
        _award(rfp, vendor_b_org, buyer)

    assert not isinstance(error.value, StateConflict)  # 400, not 409
    assert Rfp.objects.get(pk=rfp.pk).status == Rfp.Status.OPENED


def test_award_refuses_a_bid_of_another_rfp(
    buyer: Any, rfp: Rfp, buyer_org: Any
) -> None:
    stranger = BidFactory.create(rfp=opened_rfp(buyer_org, []))

    with pytest.raises(ProcurementError, match="not a bid on") as error:
        award_request(rfp=rfp, bid=stranger, rationale=RATIONALE, actor=buyer)

    assert not isinstance(error.value, StateConflict)


def test_award_needs_a_written_rationale(
    buyer: Any, rfp: Rfp, vendor_a_org: Any
) -> None:
    with pytest.raises(ProcurementError, match="at least 30 characters"):
        _award(rfp, vendor_a_org, buyer, rationale="  Cheapest.  ")

    assert not Award.objects.exists()


def test_award_waits_for_a_submitted_score_sheet(
    buyer: Any, buyer_org: Organisation, vendor_a_org: Any
) -> None:
    rfp = opened_rfp(buyer_org, [vendor_a_org])

    with pytest.raises(StateConflict, match="No evaluator has submitted"):
        _award(rfp, vendor_a_org, buyer)


def test_evaluation_is_read_only_after_the_award(
    buyer: Any, rfp: Rfp, vendor_a_org: Any, buyer_org: Organisation
) -> None:
    _award(rfp, vendor_a_org, buyer)
    late = UserFactory.create(username="late")
    MembershipFactory.create(user=late, organisation=buyer_org, role=Role.EVALUATOR)
    entry = ScoreEntry(
        bid_of(rfp, vendor_a_org).public_id, rfp.criteria.first().pk, 5, "x"
    )

    with pytest.raises(StateConflict, match="read-only"):
        score_sheet_save(rfp=rfp, entries=[entry], actor=late)


# --- page -----------------------------------------------------------------------


def test_page_offers_the_ranked_bids(client_for: Any, buyer: Any, rfp: Rfp) -> None:
    html = client_for(buyer).get(f"/rfps/{rfp.public_id}/award/").content.decode()

    assert 'data-testid="award-form"' in html
    assert "#1 Acme Flash · 80.00/100" in html
    assert "#2 Bolt Storage · 60.00/100" in html


def test_page_post_requests_and_another_member_confirms(
    client_for: Any, buyer: Any, evaluator: Any, rfp: Rfp, vendor_b_org: Any
) -> None:
    data = {"bid": str(bid_of(rfp, vendor_b_org).public_id), "rationale": RATIONALE}

    requested = client_for(buyer).post(f"/rfps/{rfp.public_id}/award/", data)
    awarded_before = Award.objects.exists()
    confirmed = client_for(evaluator).post(
        f"/rfps/{rfp.public_id}/award/confirm/", follow=True
    )

    assert (requested.status_code, awarded_before) == (302, False)
    html = confirmed.content.decode()
    assert 'data-testid="award-winner"><strong>Bolt Storage' in html
    assert RATIONALE in html
    assert Award.objects.get().bid.vendor_organisation == vendor_b_org


def test_page_post_with_a_short_rationale_awards_nothing(
    client_for: Any, buyer: Any, rfp: Rfp, vendor_a_org: Any
) -> None:
    data = {"bid": str(bid_of(rfp, vendor_a_org).public_id), "rationale": "ok"}

    response = client_for(buyer).post(f"/rfps/{rfp.public_id}/award/", data)

    assert response.status_code == 400
    assert not Award.objects.exists()


def test_page_post_is_forbidden_to_evaluators(
    client_for: Any, evaluator: Any, rfp: Rfp, vendor_a_org: Any
) -> None:
    data = {"bid": str(bid_of(rfp, vendor_a_org).public_id), "rationale": RATIONALE}

    response = client_for(evaluator).post(f"/rfps/{rfp.public_id}/award/", data)

    assert response.status_code == 403
    assert not Award.objects.exists()


def test_page_is_404_for_every_vendor(
    client_for: Any,
    vendor_a: Any,
    vendor_b: Any,
    rfp: Rfp,
    vendor_a_org: Any,
    buyer: Any,
) -> None:
    _award(rfp, vendor_a_org, buyer)

    for vendor in (vendor_a, vendor_b):
        assert (
            client_for(vendor).get(f"/rfps/{rfp.public_id}/award/").status_code == 404
        )
