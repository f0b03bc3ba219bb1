from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from accounts.models import Organisation
from procurement.models import Bid, BidOpening, Rfp
from procurement.selectors.attention import attention_for
from tests.procurement.factories_bids import BidFactory, tender
from tests.procurement.factories_clarifications import ClarificationFactory
from tests.procurement.factories_evaluation import opened_rfp, score_all

pytestmark = pytest.mark.django_db


def _kinds(user: Any) -> list[tuple[str, str]]:
    return [(a.kind, a.rfp.reference) for a in attention_for(user)]


def test_buyer_is_asked_to_answer_open_questions(
    buyer: Any, vendor_a: Any, buyer_org: Organisation, vendor_a_org: Organisation
) -> None:
    rfp = tender(buyer_org, vendor_a_org, reference="RFP-Q-1")
    ClarificationFactory.create(
        rfp=rfp, asked_by=vendor_a, asked_by_organisation=vendor_a_org
    )

    items = attention_for(buyer)

    assert [(a.kind, a.rfp.reference) for a in items] == [("questions", "RFP-Q-1")]
    assert "1 unanswered" in items[0].text


def test_closed_rfp_asks_the_buyer_to_request_opening_then_another_to_confirm(
    buyer: Any, evaluator: Any, buyer_org: Organisation
) -> None:
    rfp = tender(buyer_org, reference="RFP-C-1")
    Rfp.objects.filter(pk=rfp.pk).update(status=Rfp.Status.CLOSED)
    assert _kinds(buyer) == [("opening", "RFP-C-1")]

    BidOpening.objects.create(rfp=rfp, requested_by=buyer, requested_at=timezone.now())

    assert _kinds(buyer) == []
    assert _kinds(evaluator) == [("opening", "RFP-C-1")]


def test_evaluator_is_asked_to_score_until_the_sheet_is_submitted(
    evaluator: Any, buyer_org: Organisation, vendor_a_org: Organisation
) -> None:
    rfp = opened_rfp(buyer_org, [vendor_a_org], reference="RFP-E-1")
    assert _kinds(evaluator) == [("scores", "RFP-E-1")]

    score_all(rfp, evaluator)

    assert _kinds(evaluator) == []


def test_vendor_sees_invitation_without_bid_and_reconfirmation(
    vendor_a: Any, buyer_org: Organisation, vendor_a_org: Organisation
) -> None:
    tender(buyer_org, vendor_a_org, reference="RFP-V-1")
    amended = tender(buyer_org, vendor_a_org, reference="RFP-V-2")
    BidFactory.create(
        rfp=amended,
        vendor_organisation=vendor_a_org,
        status=Bid.Status.NEEDS_RECONFIRMATION,
    )

    assert sorted(_kinds(vendor_a)) == [("bid", "RFP-V-1"), ("reconfirm", "RFP-V-2")]


def test_other_vendor_sees_nothing_of_a_tender_it_is_not_invited_to(
    vendor_b: Any, buyer_org: Organisation, vendor_a_org: Organisation
) -> None:
    tender(buyer_org, vendor_a_org)

    assert attention_for(vendor_b) == []


def test_dashboard_shows_the_attention_panel(
    client_for: Any, vendor_a: Any, buyer_org: Organisation, vendor_a_org: Organisation
) -> None:
    tender(buyer_org, vendor_a_org, reference="RFP-V-9")

    html = client_for(vendor_a).get("/dashboard/").content.decode()

    assert 'data-testid="panel-attention"' in html
    assert "RFP-V-9" in html
    assert "no bid submitted yet" in html
