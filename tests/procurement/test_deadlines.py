from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from rest_framework.test import APIClient

from accounts.models import AuditEvent, Notification, Organisation
from procurement.exceptions import ProcurementError
from procurement.models import Bid, Rfp
from procurement.services.deadlines import (
    rfp_apply_deadlines,
    rfp_close,
    rfp_declare_unsuccessful,
)
from procurement.tasks import rfp_apply_deadlines_task
from tests.procurement.factories_rfps import (
    QuestionFactory,
    SubmittedBidFactory,
    draft_rfp,
    published_rfp,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def tender(
    buyer_org: Organisation, vendor_a_org: Organisation, vendor_b_org: Organisation
) -> Rfp:
    """Published, two vendors invited, both have bid; deadline in 14 days."""
    rfp = published_rfp(buyer_org, vendor_a_org, vendor_b_org)
    SubmittedBidFactory.create(rfp=rfp, vendor_organisation=vendor_a_org)
    SubmittedBidFactory.create(rfp=rfp, vendor_organisation=vendor_b_org)
    Notification.objects.all().delete()  # the invitations
    return rfp


def _status(rfp: Rfp) -> str:
    rfp.refresh_from_db()
    return rfp.status


def test_nothing_happens_before_the_deadline(
    tender: Rfp, clock: Any, django_assert_num_queries: Any
) -> None:
    clock.advance(days=13)

    with django_assert_num_queries(0):
        same = rfp_apply_deadlines(rfp=tender)

    assert same is tender
    assert _status(tender) == Rfp.Status.PUBLISHED


def test_the_rfp_closes_once_the_deadline_passes(tender: Rfp, clock: Any) -> None:
    clock.advance(days=14, seconds=1)

    rfp = rfp_apply_deadlines(rfp=tender)

    assert rfp.status == Rfp.Status.CLOSED
    assert rfp.closed_at == clock.now()
    event = AuditEvent.objects.filter(action="rfp.transitioned").latest("occurred_at")
    assert (event.data["to"], event.actor) == ("closed", None)


def test_the_buyer_learns_the_number_of_bids_and_no_names(
    tender: Rfp, buyer: Any, evaluator: Any, vendor_a: Any, clock: Any
) -> None:
    clock.advance(days=15)

    rfp_apply_deadlines(rfp=tender)

    notices = Notification.objects.filter(subject__contains="closed with 2 bids")
    assert {n.recipient.username for n in notices} == {"buyer", "evaluator"}
    text = " ".join(f"{n.subject} {n.body}" for n in Notification.objects.all())
    for secret in ("Acme", "acme-flash", "Bolt", "bolt-storage", "vendor-a"):
        assert secret not in text


def test_closing_waits_while_a_clarification_is_unanswered(
    tender: Rfp, vendor_a_org: Organisation, clock: Any
) -> None:
    question = QuestionFactory.create(rfp=tender, asked_by_organisation=vendor_a_org)
    clock.advance(days=15)

    waiting = rfp_apply_deadlines(rfp=tender).status
    question.answer, question.answered_at = "RDMA.", clock.now()
    question.save()
    closed = rfp_apply_deadlines(rfp=tender).status

    assert waiting == Rfp.Status.PUBLISHED
    assert closed == Rfp.Status.CLOSED


def test_fewer_bids_than_the_minimum_make_the_rfp_unsuccessful(
    buyer_org: Organisation,
    vendor_a: Any,
    vendor_a_org: Organisation,
    vendor_b_org: Organisation,
    buyer: Any,
    clock: Any,
) -> None:
    rfp = published_rfp(buyer_org, vendor_a_org, vendor_b_org, min_bids=2)
    SubmittedBidFactory.create(rfp=rfp, vendor_organisation=vendor_a_org)
    clock.advance(days=15)

    rfp = rfp_apply_deadlines(rfp=rfp)

    assert rfp.status == Rfp.Status.UNSUCCESSFUL
    moves = AuditEvent.objects.filter(action="rfp.transitioned").order_by("id")
    assert [e.data["to"] for e in moves] == ["published", "closed", "unsuccessful"]
    to_buyer = Notification.objects.get(recipient=buyer, subject__contains="unsucc")
    assert "1 valid bid arrived" in to_buyer.body
    to_vendor = Notification.objects.get(recipient=vendor_a, subject__contains="uns")
    assert "valid bid arrived" not in to_vendor.body


def test_bids_awaiting_reconfirmation_do_not_count(tender: Rfp, clock: Any) -> None:
    Rfp.objects.filter(pk=tender.pk).update(min_bids=2)
    Bid.objects.filter(rfp=tender).update(status=Bid.Status.NEEDS_RECONFIRMATION)
    clock.advance(days=15)

    assert rfp_apply_deadlines(rfp=tender).status == Rfp.Status.UNSUCCESSFUL


def test_rfp_close_refuses_before_the_deadline(tender: Rfp) -> None:
    with pytest.raises(ProcurementError, match="has not passed"):
        rfp_close(rfp=tender)

    assert _status(tender) == Rfp.Status.PUBLISHED


def test_rfp_close_refuses_while_questions_are_open(
    tender: Rfp, vendor_a_org: Organisation, clock: Any
) -> None:
    QuestionFactory.create(rfp=tender, asked_by_organisation=vendor_a_org)
    clock.advance(days=15)

    with pytest.raises(ProcurementError, match="unanswered"):
        rfp_close(rfp=tender)

    assert _status(tender) == Rfp.Status.PUBLISHED


def test_an_rfp_with_enough_bids_cannot_be_declared_unsuccessful(
    tender: Rfp, clock: Any
) -> None:
    clock.advance(days=15)
    rfp = rfp_apply_deadlines(rfp=tender)

    with pytest.raises(ProcurementError, match="enough"):
        rfp_declare_unsuccessful(rfp=rfp)

    assert _status(tender) == Rfp.Status.CLOSED


def test_the_beat_task_sweeps_every_due_rfp(
    buyer_org: Organisation, vendor_a_org: Organisation, clock: Any
) -> None:
    due = published_rfp(buyer_org, vendor_a_org, reference="RFP-DUE-1")
    in_a_month = clock.now() + timedelta(days=30)
    later = published_rfp(
        buyer_org, vendor_a_org, reference="RFP-LATER-1", submission_deadline=in_a_month
    )
    rfp_draft = draft_rfp(buyer_org, reference="RFP-DRAFT-1")
    clock.advance(days=15)

    changed = rfp_apply_deadlines_task()

    assert changed == 1
    assert _status(due) == Rfp.Status.UNSUCCESSFUL  # no bid at all
    assert _status(later) == Rfp.Status.PUBLISHED
    assert _status(rfp_draft) == Rfp.Status.DRAFT


def test_the_beat_task_is_scheduled() -> None:
    tasks = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}

    assert "procurement.apply_deadlines" in tasks


def test_the_rfp_page_shows_closed_before_the_sweep_records_it(
    tender: Rfp, vendor_a: Any, client_for: Any, clock: Any
) -> None:
    clock.advance(days=15)

    response = client_for(vendor_a).get(f"/rfps/{tender.public_id}/")

    assert 'data-testid="rfp-status">Closed' in response.content.decode()
    assert _status(tender) == Rfp.Status.PUBLISHED  # the read wrote nothing
    assert not AuditEvent.objects.filter(action="rfp.transitioned", data__to="closed")


def test_the_rfp_list_page_shows_deadlines_by_the_clock(
    tender: Rfp, buyer: Any, client_for: Any, clock: Any
) -> None:
    clock.advance(days=15)

    html = client_for(buyer).get("/rfps/?status=closed").content.decode()

    assert _status(tender) == Rfp.Status.PUBLISHED
    assert tender.reference in html
    assert "(passed)" in html
    assert ">Closed<" in html


@pytest.mark.parametrize("listing", [True, False])
def test_the_api_shows_deadlines_by_the_clock(
    listing: bool, tender: Rfp, buyer: Any, clock: Any
) -> None:
    api = APIClient()
    api.force_authenticate(buyer)
    clock.advance(days=15)

    if listing:
        body = api.get("/api/v1/rfps/").json()["results"][0]
    else:
        body = api.get(f"/api/v1/rfps/{tender.public_id}/").json()

    assert body["status"] == "closed"
    assert _status(tender) == Rfp.Status.PUBLISHED
