"""Opening sealed bids: two distinct buyer-side members, after the deadline."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.exceptions import InvalidTransition
from accounts.models import AuditEvent, Notification, Organisation
from procurement.exceptions import ProcurementError
from procurement.models import BidOpening, Rfp
from procurement.services.deadlines import rfp_apply_deadlines
from procurement.services.opening import (
    bid_opening_cancel,
    bid_opening_confirm,
    bid_opening_request,
)
from tests.procurement.factories_bids import submit, tender

pytestmark = pytest.mark.django_db


@pytest.fixture
def rfp(
    buyer_org: Organisation,
    vendor_a: Any,
    vendor_a_org: Organisation,
    vendor_b: Any,
    vendor_b_org: Organisation,
    clock: Any,
) -> Rfp:
    """Closed by its deadline with a bid from each vendor."""
    rfp = tender(buyer_org, vendor_a_org, vendor_b_org)
    submit(rfp, vendor_a, vendor_a_org)
    submit(rfp, vendor_b, vendor_b_org, cover_note="Bolt offer.")
    clock.advance(days=15)
    return rfp_apply_deadlines(rfp=rfp)


def _api(user: Any) -> APIClient:
    api = APIClient()
    api.force_authenticate(user)
    return api


def _post(user: Any, rfp: Rfp, step: str) -> Any:
    return _api(user).post(f"/api/v1/rfps/{rfp.public_id}/opening/{step}/")


def test_opening_needs_a_request_and_a_confirmation_by_another(
    rfp: Rfp, buyer: Any, evaluator: Any
) -> None:
    assert rfp.status == Rfp.Status.CLOSED

    bid_opening_request(rfp=rfp, actor=buyer)
    bid_opening_confirm(rfp=rfp, actor=evaluator)

    rfp.refresh_from_db()
    opening = BidOpening.objects.get()
    assert rfp.status == Rfp.Status.OPENED
    assert (opening.requested_by, opening.confirmed_by) == (buyer, evaluator)
    assert rfp.opened_at is not None


def test_opening_writes_audit_events_in_the_buyer_trail(
    rfp: Rfp, buyer: Any, evaluator: Any, buyer_org: Organisation
) -> None:
    bid_opening_request(rfp=rfp, actor=buyer)
    bid_opening_confirm(rfp=rfp, actor=evaluator)

    events = AuditEvent.objects.filter(action__startswith="rfp.opening_")
    assert [(e.action, e.actor) for e in events.order_by("id")] == [
        ("rfp.opening_requested", buyer),
        ("rfp.opening_confirmed", evaluator),
    ]
    assert {e.organisation_id for e in events} == {buyer_org.pk}


def test_the_confirmation_is_one_audit_row_with_the_move(
    rfp: Rfp, buyer: Any, evaluator: Any
) -> None:
    bid_opening_request(rfp=rfp, actor=buyer)
    before = AuditEvent.objects.count()

    bid_opening_confirm(rfp=rfp, actor=evaluator)

    assert AuditEvent.objects.count() == before + 1
    event = AuditEvent.objects.get(action="rfp.opening_confirmed")
    assert (event.data["from"], event.data["to"]) == ("closed", "opened")
    assert event.data["requested_by"] == buyer.username
    assert event.data["bids"] == rfp.bids.count()


def test_the_requester_cannot_confirm(rfp: Rfp, buyer: Any) -> None:
    bid_opening_request(rfp=rfp, actor=buyer)

    with pytest.raises(ProcurementError, match="another member") as exc:
        bid_opening_confirm(rfp=rfp, actor=buyer)

    assert exc.value.code == "opening_same_person"
    rfp.refresh_from_db()
    assert rfp.status == Rfp.Status.CLOSED


def test_the_requester_confirming_over_the_api_gets_a_clear_refusal(
    rfp: Rfp, buyer: Any
) -> None:
    _post(buyer, rfp, "request")

    response = _post(buyer, rfp, "confirm")

    assert response.status_code == 400
    assert "another member of the buyer's team" in response.json()["message"]


def test_opening_before_the_rfp_is_closed_is_409(
    buyer_org: Organisation, buyer: Any, vendor_a_org: Organisation, clock: Any
) -> None:
    published = tender(buyer_org, vendor_a_org)

    response = _post(buyer, published, "request")

    assert response.status_code == 409
    assert "only while" in response.json()["message"]
    assert not BidOpening.objects.exists()


def test_confirming_without_a_request_is_refused(rfp: Rfp, evaluator: Any) -> None:
    with pytest.raises(ProcurementError, match="No opening"):
        bid_opening_confirm(rfp=rfp, actor=evaluator)


def test_a_second_request_is_refused(rfp: Rfp, buyer: Any, buyer_org: Any) -> None:
    bid_opening_request(rfp=rfp, actor=buyer)

    with pytest.raises(ProcurementError, match="already requested"):
        bid_opening_request(rfp=rfp, actor=buyer)


def test_opening_an_opened_rfp_again_is_refused(
    rfp: Rfp, buyer: Any, evaluator: Any
) -> None:
    bid_opening_request(rfp=rfp, actor=buyer)
    bid_opening_confirm(rfp=rfp, actor=evaluator)

    with pytest.raises(InvalidTransition):
        bid_opening_request(rfp=rfp, actor=buyer)


def test_the_requester_can_cancel_and_someone_may_request_again(
    rfp: Rfp, buyer: Any, evaluator: Any
) -> None:
    bid_opening_request(rfp=rfp, actor=buyer)
    with pytest.raises(ProcurementError, match="Only buyer"):
        bid_opening_cancel(rfp=rfp, actor=evaluator)

    bid_opening_cancel(rfp=rfp, actor=buyer)

    assert not BidOpening.objects.exists()
    assert AuditEvent.objects.filter(action="rfp.opening_cancelled").count() == 1
    bid_opening_request(rfp=rfp, actor=buyer)


def test_evaluators_confirm_but_do_not_request(
    rfp: Rfp, buyer: Any, evaluator: Any
) -> None:
    assert _post(evaluator, rfp, "request").status_code == 403

    _post(buyer, rfp, "request")
    response = _post(evaluator, rfp, "confirm")

    assert response.status_code == 200
    assert response.json()["rfp_status"] == "opened"
    assert response.json()["confirmed_by"] == "evaluator"


@pytest.mark.parametrize(
    ("persona", "expected"),
    [("outsider", 404), ("vendor_a", 403), ("auditor", 403), ("labops", 403)],
)
def test_opening_api_refuses_others(
    rfp: Rfp, persona: str, expected: int, request: Any
) -> None:
    user = request.getfixturevalue(persona)

    assert _post(user, rfp, "request").status_code == expected
    assert _post(user, rfp, "confirm").status_code == expected
    assert not BidOpening.objects.exists()


@pytest.mark.parametrize(
    ("persona", "expected"), [("outsider", 404), ("vendor_a", 403)]
)
def test_opening_pages_refuse_others(
    rfp: Rfp, persona: str, expected: int, request: Any, client_for: Any
) -> None:
    client = client_for(request.getfixturevalue(persona))

    response = client.post(f"/rfps/{rfp.public_id}/opening/request/")

    assert response.status_code == expected


def test_opening_by_the_page_buttons(
    rfp: Rfp, buyer: Any, evaluator: Any, client_for: Any
) -> None:
    page = client_for(buyer).get(f"/rfps/{rfp.public_id}/bids/").content.decode()
    assert 'data-testid="opening-request"' in page

    client_for(buyer).post(f"/rfps/{rfp.public_id}/opening/request/")
    page = client_for(evaluator).get(f"/rfps/{rfp.public_id}/bids/").content.decode()
    assert 'data-testid="opening-confirm"' in page

    response = client_for(evaluator).post(
        f"/rfps/{rfp.public_id}/opening/confirm/", follow=True
    )
    assert "Bids opened." in response.content.decode()
    assert 'data-testid="bid-row"' in response.content.decode()


def test_request_notifies_the_rest_of_the_buyer_team(
    rfp: Rfp, buyer: Any, evaluator: Any
) -> None:
    bid_opening_request(rfp=rfp, actor=buyer)

    notice = Notification.objects.get(recipient=evaluator, subject__contains="Confirm")
    assert "buyer requested the opening" in notice.body
    assert not Notification.objects.filter(recipient=buyer, subject__contains="Confirm")


def test_opening_tells_each_vendor_about_its_own_bid_only(
    rfp: Rfp, buyer: Any, evaluator: Any, vendor_a: Any, vendor_b: Any
) -> None:
    bid_opening_request(rfp=rfp, actor=buyer)
    bid_opening_confirm(rfp=rfp, actor=evaluator)

    notice = Notification.objects.get(recipient=vendor_a, subject__contains="opened")
    own = rfp.bids.get(vendor_organisation__slug="acme-flash").commitment
    other = rfp.bids.get(vendor_organisation__slug="bolt-storage").commitment
    assert own in notice.body
    assert other not in notice.body
