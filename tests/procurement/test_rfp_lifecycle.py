from __future__ import annotations

from typing import Any

import pytest

from accounts.exceptions import InvalidTransition
from accounts.models import AuditEvent, Notification, Organisation, Role
from procurement.exceptions import ProcurementError
from procurement.models import Rfp
from procurement.services.cancellation import rfp_cancel
from procurement.services.rfp_lifecycle import rfp_publish
from procurement.services.rfps import (
    RfpNotEditable,
    rfp_invite_vendor,
    rfp_set_criteria,
    rfp_uninvite_vendor,
    rfp_update,
)
from tests.accounts.factories import MembershipFactory, UserFactory
from tests.procurement.factories import RfpFactory
from tests.procurement.factories_rfps import draft_rfp, published_rfp

pytestmark = pytest.mark.django_db


def _notified(template_subject: str) -> set[str]:
    return set(
        Notification.objects.filter(subject__contains=template_subject).values_list(
            "recipient__username", flat=True
        )
    )


# --- publishing ---------------------------------------------------------------------


def test_rfp_publish_notifies_every_member_of_each_invited_vendor(
    buyer: Any,
    buyer_org: Organisation,
    vendor_a: Any,
    vendor_b: Any,
    vendor_a_org: Organisation,
    vendor_b_org: Organisation,
) -> None:
    admin = UserFactory.create(username="acme-admin")
    MembershipFactory.create(user=admin, organisation=vendor_a_org, role=Role.ADMIN)
    rfp = draft_rfp(buyer_org, vendor_a_org, vendor_b_org)

    rfp = rfp_publish(rfp=rfp, actor=buyer)

    assert rfp.status == Rfp.Status.PUBLISHED
    assert _notified("Invitation to bid") == {"vendor-a", "vendor-b", "acme-admin"}
    body = Notification.objects.filter(recipient=vendor_a).get().body
    assert rfp.reference in body
    assert f"/rfps/{rfp.public_id}/" in body
    event = AuditEvent.objects.get(action="rfp.transitioned")
    assert (event.data["to"], event.actor) == ("published", buyer)


def _spoil(rfp: Rfp, problem: str, clock: Any) -> None:
    """Make a complete draft fail one publishing check."""
    if problem == "weights":
        rows = [{"name": "TCO", "weight": 90}]
        rfp_set_criteria(rfp=rfp, criteria=rows, actor=None)
    elif problem == "deadline_passed":
        clock.advance(days=15)
    elif problem == "questions_deadline":  # passed, the submission one not yet
        clock.advance(days=8)
    elif problem == "min_bids":  # two required, one vendor invited
        rfp_update(rfp=rfp, fields={"min_bids": 2}, actor=None)


@pytest.mark.parametrize(
    "problem", ["weights", "deadline_passed", "questions_deadline", "min_bids"]
)
def test_rfp_publish_refuses_an_incomplete_draft(
    problem: str,
    buyer_org: Organisation,
    vendor_a: Any,
    vendor_a_org: Organisation,
    clock: Any,
) -> None:
    rfp = draft_rfp(buyer_org, vendor_a_org)
    _spoil(rfp, problem, clock)

    with pytest.raises(ProcurementError) as refused:
        rfp_publish(rfp=rfp, actor=None)

    assert problem in [p.code for p in refused.value.problems]
    rfp.refresh_from_db()
    assert rfp.status == Rfp.Status.DRAFT
    assert not Notification.objects.exists()


def test_rfp_publish_without_vendors_says_to_invite_one(
    buyer_org: Organisation,
) -> None:
    rfp = draft_rfp(buyer_org)

    with pytest.raises(ProcurementError, match="Invite at least one vendor"):
        rfp_publish(rfp=rfp, actor=None)


def test_rfp_publish_checks_the_reference_format(
    buyer_org: Organisation, vendor_a_org: Organisation
) -> None:
    rfp = draft_rfp(buyer_org, vendor_a_org)
    Rfp.objects.filter(pk=rfp.pk).update(reference="rfp 7")

    with pytest.raises(ProcurementError, match="capital letters"):
        rfp_publish(rfp=rfp, actor=None)


def test_rfp_publish_twice_is_an_invalid_transition(
    buyer_org: Organisation, vendor_a_org: Organisation
) -> None:
    rfp = published_rfp(buyer_org, vendor_a_org)

    with pytest.raises(InvalidTransition):
        rfp_publish(rfp=rfp, actor=None)

    assert AuditEvent.objects.filter(action="rfp.transitioned").count() == 1


# --- invitations --------------------------------------------------------------------


def test_inviting_after_publication_notifies_only_the_new_vendor(
    buyer_org: Organisation,
    vendor_a: Any,
    vendor_b: Any,
    vendor_a_org: Organisation,
    vendor_b_org: Organisation,
) -> None:
    rfp = published_rfp(buyer_org, vendor_a_org)

    rfp_invite_vendor(rfp=rfp, vendor=vendor_b_org, actor=None)

    assert Notification.objects.filter(recipient=vendor_a).count() == 1
    assert Notification.objects.filter(recipient=vendor_b).count() == 1


def test_inviting_after_the_deadline_is_refused(
    buyer_org: Organisation,
    vendor_a_org: Organisation,
    vendor_b_org: Organisation,
    clock: Any,
) -> None:
    rfp = published_rfp(buyer_org, vendor_a_org)
    clock.advance(days=15)

    with pytest.raises(ProcurementError, match="before the deadline"):
        rfp_invite_vendor(rfp=rfp, vendor=vendor_b_org, actor=None)

    assert list(rfp.invited_vendors.all()) == [vendor_a_org]


def test_withdrawing_an_invitation_is_for_drafts_only(
    buyer_org: Organisation, vendor_a_org: Organisation
) -> None:
    rfp = published_rfp(buyer_org, vendor_a_org)

    with pytest.raises(RfpNotEditable):
        rfp_uninvite_vendor(rfp=rfp, vendor=vendor_a_org, actor=None)

    assert rfp.invited_vendors.count() == 1


# --- cancelling ---------------------------------------------------------------------


@pytest.mark.parametrize("status", ["draft", "published", "closed", "opened"])
def test_rfp_cancel_works_from_every_state_that_is_not_final(
    status: str, buyer: Any
) -> None:
    rfp = RfpFactory.create(status=status)

    rfp = rfp_cancel(rfp=rfp, reason="Budget withdrawn.", actor=buyer)

    assert rfp.status == Rfp.Status.CANCELLED
    event = AuditEvent.objects.get(action="rfp.transitioned")
    assert (event.data["from"], event.data["note"]) == (status, "Budget withdrawn.")


@pytest.mark.parametrize("status", ["awarded", "unsuccessful", "cancelled"])
def test_rfp_cancel_refuses_a_final_state(status: str, buyer: Any) -> None:
    rfp = RfpFactory.create(status=status)

    with pytest.raises(InvalidTransition):
        rfp_cancel(rfp=rfp, reason="Too late.", actor=buyer)

    rfp.refresh_from_db()
    assert rfp.status == status


def test_rfp_cancel_requires_a_reason(buyer: Any) -> None:
    rfp = RfpFactory.create(published=True)

    with pytest.raises(ProcurementError, match="reason"):
        rfp_cancel(rfp=rfp, reason="   ", actor=buyer)

    rfp.refresh_from_db()
    assert rfp.status == Rfp.Status.PUBLISHED


def test_rfp_cancel_tells_invited_vendors_why(
    buyer_org: Organisation, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    rfp = published_rfp(buyer_org, vendor_a_org)

    rfp_cancel(rfp=rfp, reason="Budget withdrawn.", actor=None)

    notice = Notification.objects.get(subject__contains="cancelled")
    assert notice.recipient == vendor_a
    assert "Budget withdrawn." in notice.body


def test_cancelling_a_draft_notifies_nobody(
    buyer_org: Organisation, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    rfp = draft_rfp(buyer_org, vendor_a_org)

    rfp_cancel(rfp=rfp, reason="Started over.", actor=None)

    assert not Notification.objects.exists()


# --- pages --------------------------------------------------------------------------


def test_publish_button_publishes_and_returns_to_the_overview(
    buyer: Any, buyer_org: Organisation, vendor_a_org: Organisation, client_for: Any
) -> None:
    rfp = draft_rfp(buyer_org, vendor_a_org)

    response = client_for(buyer).post(f"/rfps/{rfp.public_id}/publish/", follow=True)

    rfp.refresh_from_db()
    assert rfp.status == Rfp.Status.PUBLISHED
    assert "published; 1 vendor(s) notified" in response.content.decode()


def test_publish_button_on_an_incomplete_draft_lists_the_problems(
    buyer: Any, buyer_org: Organisation, client_for: Any
) -> None:
    rfp = draft_rfp(buyer_org)

    response = client_for(buyer).post(f"/rfps/{rfp.public_id}/publish/", follow=True)

    assert response.redirect_chain[-1][0].endswith("?step=review")
    assert "Invite at least one vendor." in response.content.decode()
    rfp.refresh_from_db()
    assert rfp.status == Rfp.Status.DRAFT


def test_publish_and_cancel_are_refused_to_other_roles(
    evaluator: Any,
    vendor_a: Any,
    buyer_org: Organisation,
    vendor_a_org: Organisation,
    client_for: Any,
) -> None:
    draft = draft_rfp(buyer_org, vendor_a_org)
    published = published_rfp(buyer_org, vendor_a_org, reference="RFP-T-901")
    reason = {"reason": "no"}

    assert (
        client_for(evaluator).post(f"/rfps/{draft.public_id}/publish/").status_code
        == 403
    )
    assert (
        client_for(vendor_a).post(f"/rfps/{draft.public_id}/publish/").status_code
        == 404
    )
    cancel = f"/rfps/{published.public_id}/cancel/"
    assert client_for(vendor_a).post(cancel, reason).status_code == 403
    assert client_for(evaluator).post(cancel, reason).status_code == 403
    published.refresh_from_db()
    assert published.status == Rfp.Status.PUBLISHED


def test_cancel_button_needs_a_reason_and_shows_it_afterwards(
    buyer: Any, buyer_org: Organisation, vendor_a_org: Organisation, client_for: Any
) -> None:
    rfp = published_rfp(buyer_org, vendor_a_org)
    client = client_for(buyer)
    url = f"/rfps/{rfp.public_id}/cancel/"

    refused = client.post(url, {"reason": ""}, follow=True).content.decode()
    done = client.post(url, {"reason": "Scope changed."}, follow=True).content.decode()

    assert "Give a reason for cancelling." in refused
    assert 'data-testid="rfp-cancelled-note"' in done
    assert "Scope changed." in done


def test_overview_invites_a_vendor_after_publication(
    buyer: Any,
    buyer_org: Organisation,
    vendor_a_org: Organisation,
    vendor_b: Any,
    vendor_b_org: Organisation,
    client_for: Any,
) -> None:
    rfp = published_rfp(buyer_org, vendor_a_org)

    response = client_for(buyer).post(
        f"/rfps/{rfp.public_id}/invitations/", {"vendor": "bolt-storage"}, follow=True
    )

    assert "Bolt Storage invited." in response.content.decode()
    assert Notification.objects.filter(recipient=vendor_b).count() == 1


def test_overview_offers_invitations_only_before_the_deadline(
    buyer: Any,
    buyer_org: Organisation,
    vendor_a_org: Organisation,
    vendor_b_org: Organisation,
    client_for: Any,
    clock: Any,
) -> None:
    rfp = published_rfp(buyer_org, vendor_a_org)
    url = f"/rfps/{rfp.public_id}/"
    client = client_for(buyer)

    before = client.get(url).content.decode()
    clock.advance(days=15)
    after = client.get(url).content.decode()

    assert 'data-testid="invite-form"' in before
    assert 'data-testid="invite-form"' not in after
