"""The dispute pages: the judged vendor's "Contest this verdict" on the
evaluation page (within the window only), the buyer's open disputes on the gate
board and the evaluation page with uphold and reject forms, the disputes list
and page; another vendor sees none of it (404, an empty list)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from gates.models import Dispute, Evaluation
from gates.services.disputes import dispute_open
from procurement.models import Rfp

pytestmark = pytest.mark.django_db
REASON = "The lab ran cold-c1 with a warm page cache."


@pytest.fixture
def bolt_fail(two_vendors: Rfp, vendor_b_org: Any) -> Evaluation:
    return Evaluation.objects.get(rfp=two_vendors, vendor_organisation=vendor_b_org)


def page(user: Any, url: str) -> Any:
    client = Client()
    client.force_login(user)
    return client.get(url)


def evaluation_url(evaluation: Evaluation) -> str:
    return reverse("gates:evaluation", args=[evaluation.public_id])


def test_the_judged_vendor_contests_from_the_evaluation_page(
    bolt_fail: Evaluation, vendor_b: Any
) -> None:
    assert (
        'data-testid="contest-form"' in page(vendor_b, evaluation_url(bolt_fail)).text
    )
    client = Client()
    client.force_login(vendor_b)

    response = client.post(
        reverse("gates:dispute_contest", args=[bolt_fail.public_id]),
        {"reason": REASON, "bundle": ""},
    )

    dispute = Dispute.objects.get()
    assert response["Location"] == reverse("gates:dispute", args=[dispute.public_id])
    assert (dispute.reason, dispute.bundle) == (REASON, None)
    again = page(vendor_b, evaluation_url(bolt_fail)).text
    assert 'data-testid="contest-form"' not in again  # one open at a time
    assert REASON in again


def test_no_contest_form_after_the_window(
    bolt_fail: Evaluation, vendor_b: Any, clock: Any
) -> None:
    days = bolt_fail.rfp.dispute_window_days
    clock.travel_to(bolt_fail.evaluated_at + timedelta(days=days, minutes=1))

    assert (
        'data-testid="contest-form"'
        not in page(vendor_b, evaluation_url(bolt_fail)).text
    )


def test_the_buyer_sees_open_disputes_with_the_answer_forms(
    bolt_fail: Evaluation, vendor_b: Any, buyer: Any, two_vendors: Rfp
) -> None:
    dispute = dispute_open(evaluation=bolt_fail, reason=REASON, actor=vendor_b)

    board = page(buyer, reverse("gates:board", args=[two_vendors.public_id])).text
    evaluation = page(buyer, evaluation_url(bolt_fail)).text
    detail = page(buyer, reverse("gates:dispute", args=[dispute.public_id])).text

    assert 'data-testid="board-dispute"' in board
    assert board.count('data-testid="disputed"') == 1
    for html in (evaluation, detail):
        assert 'data-testid="dispute-uphold"' in html
        assert 'data-testid="dispute-reject"' in html
    assert 'data-testid="contest-form"' not in evaluation


def test_the_buyers_dashboard_asks_for_an_answer(
    bolt_fail: Evaluation, vendor_b: Any, buyer: Any, vendor_a: Any
) -> None:
    dispute_open(evaluation=bolt_fail, reason=REASON, actor=vendor_b)

    assert (
        "contests the FAIL of its lab-validation gate"
        in page(buyer, "/dashboard/").text
    )
    assert "contests" not in page(vendor_a, "/dashboard/").text


def test_the_buyer_rejects_from_the_page(
    bolt_fail: Evaluation, vendor_b: Any, buyer: Any
) -> None:
    dispute = dispute_open(evaluation=bolt_fail, reason=REASON, actor=vendor_b)
    client = Client()
    client.force_login(buyer)
    url = reverse("gates:dispute_reject", args=[dispute.public_id])

    client.post(url, {"reason": ""})
    assert Dispute.objects.get().status == "open"  # a rejection needs its reason
    client.post(url, {"reason": "The capture shows it cold."})

    assert Dispute.objects.get().status == "rejected"


def test_another_vendor_sees_nothing_of_it(
    bolt_fail: Evaluation, vendor_b: Any, vendor_a: Any, two_vendors: Rfp
) -> None:
    dispute = dispute_open(evaluation=bolt_fail, reason=REASON, actor=vendor_b)

    detail = page(vendor_a, reverse("gates:dispute", args=[dispute.public_id]))
    listing = page(vendor_a, reverse("gates:disputes")).text
    board = page(vendor_a, reverse("gates:board", args=[two_vendors.public_id])).text

    assert detail.status_code == 404
    assert 'data-testid="dispute-empty"' in listing
    assert REASON not in listing
    assert 'data-testid="board-dispute"' not in board
    assert 'data-testid="disputed"' not in board
    assert page(vendor_a, evaluation_url(bolt_fail)).status_code == 404


def test_the_list_shows_the_vendor_its_own(
    bolt_fail: Evaluation, vendor_b: Any
) -> None:
    dispute_open(evaluation=bolt_fail, reason=REASON, actor=vendor_b)

    listing = page(vendor_b, reverse("gates:disputes")).text

    assert listing.count('data-testid="dispute-row"') == 1
