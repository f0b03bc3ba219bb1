"""'The RFP takes submissions' is one rule (``Rfp.takes_submissions``) with one
message set (``rfp_submissions_closed``): the bid service, the bundle upload,
the bid pages and the buyer's invitation all follow it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from accounts.exceptions import ApplicationError
from accounts.models import Organisation
from accounts.selectors import clock as installation_clock
from artifacts.services.ingest import bundle_refuse_upload
from procurement.exceptions import ProcurementError
from procurement.models import Rfp
from procurement.selectors.rfps import (
    rfp_list_taking_submissions,
    rfp_submissions_closed,
)
from procurement.services.rfps import rfp_invite_vendor
from tests.accounts.factories import OrganisationFactory
from tests.procurement.factories_bids import submit, tender

pytestmark = pytest.mark.django_db

STATES = [
    ("open", ""),
    ("deadline_passed", "deadline_passed"),
    (Rfp.Status.CLOSED, "deadline_passed"),
    (Rfp.Status.OPENED, "rfp_not_published"),
    (Rfp.Status.CANCELLED, "rfp_not_published"),
]


@pytest.fixture
def rfp(buyer_org: Organisation, vendor_a_org: Organisation, clock: Any) -> Rfp:
    return tender(buyer_org, vendor_a_org)


def _put(rfp: Rfp, state: str) -> Rfp:
    """Set the state directly, as factories do; past the deadline unless open."""
    if state != "open":
        past = installation_clock.now() - timedelta(hours=1)
        status = Rfp.Status.PUBLISHED if state == "deadline_passed" else state
        Rfp.objects.filter(pk=rfp.pk).update(status=status, submission_deadline=past)
    return Rfp.objects.get(pk=rfp.pk)


@pytest.mark.parametrize(("state", "code"), STATES)
def test_the_model_rule_the_reason_and_the_sql_agree(
    rfp: Rfp, state: str, code: str
) -> None:
    rfp = _put(rfp, state)
    now = installation_clock.now()

    closed = rfp_submissions_closed(rfp)

    assert rfp.takes_submissions(now) is (closed is None) is (code == "")
    assert (closed.code if closed else "") == code
    taking = rfp_list_taking_submissions(Rfp.objects.all(), now)
    assert taking.filter(pk=rfp.pk).exists() is (code == "")


@pytest.mark.parametrize(("state", "code"), STATES[1:])
def test_bids_and_bundles_are_refused_with_the_same_message(
    rfp: Rfp, state: str, code: str, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    rfp = _put(rfp, state)
    closed = rfp_submissions_closed(rfp)
    assert closed is not None

    with pytest.raises(ProcurementError) as bid:
        submit(rfp, vendor_a, vendor_a_org)
    with pytest.raises(ApplicationError) as bundle:
        bundle_refuse_upload(rfp=rfp, organisation=vendor_a_org)

    assert bid.value.message == bundle.value.message == closed.message
    assert bid.value.code == bundle.value.code == code


def test_the_bid_form_of_a_cancelled_rfp_gives_the_reason_not_a_deadline(
    rfp: Rfp, vendor_a: Any, client_for: Any
) -> None:
    rfp = _put(rfp, Rfp.Status.CANCELLED)
    Rfp.objects.filter(pk=rfp.pk).update(
        submission_deadline=installation_clock.now() + timedelta(days=3)
    )

    page = client_for(vendor_a).get(f"/rfps/{rfp.public_id}/bid/").content.decode()

    assert "is cancelled: bids and bundles can be submitted or changed only" in page
    assert "the deadline was" not in page


def test_invitations_follow_the_rule(rfp: Rfp, buyer: Any, clock: Any) -> None:
    late = OrganisationFactory.create(kind=Organisation.Kind.VENDOR)
    clock.travel_to(rfp.submission_deadline)

    with pytest.raises(ProcurementError, match="only before the deadline"):
        rfp_invite_vendor(rfp=rfp, vendor=late, actor=buyer)
