"""Opening the sealed bids: one buyer-side member requests, another confirms.

Who may do what is checked at the interface: buyers and organisation admins request
(and the requester cancels); any other buyer-side member, evaluators included,
confirms, so that a technical evaluator can be the second witness. These services
enforce what holds whoever calls them: the RFP is closed, and the confirmer is not
the requester (also a database constraint on ``BidOpening``)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction
from django.urls import reverse

from accounts.exceptions import InvalidTransition
from accounts.models import Role
from accounts.selectors import clock
from accounts.selectors.users import user_list_in
from accounts.services.audit import audit_record
from accounts.services.notifications import notify_users
from procurement.exceptions import ProcurementError
from procurement.models import Bid, BidOpening, Rfp
from procurement.services.deadlines import rfp_apply_deadlines
from procurement.services.rfp_lifecycle import rfp_transition

LIVE_STATUSES = (Bid.Status.SUBMITTED, Bid.Status.NEEDS_RECONFIRMATION)


class OpeningRefused(InvalidTransition):
    """The RFP is not closed (yet, or any more): HTTP 409."""

    def __init__(self, rfp: Rfp) -> None:
        super().__init__(entity="RFP", current=rfp.status, requested="opened")
        self.message = (
            f"Bids can be opened only while {rfp.reference} is closed by its "
            f"submission deadline; it is {rfp.get_status_display().lower()}."
        )


def _locked(rfp: Rfp) -> tuple[Rfp, BidOpening | None]:
    """The RFP locked, its due deadline applied first (reads only derive it)."""
    rfp = rfp_apply_deadlines(rfp=Rfp.objects.select_for_update().get(pk=rfp.pk))
    opening = BidOpening.objects.select_for_update().filter(rfp=rfp).first()
    return rfp, opening


def _pending(rfp: Rfp, opening: BidOpening | None) -> BidOpening:
    if opening is None or opening.confirmed_at is not None:
        raise ProcurementError(
            f"No opening of {rfp.reference} is waiting for confirmation.",
            code="no_pending_opening",
        )
    return opening


def _bids_url(rfp: Rfp) -> str:
    return reverse("procurement:rfp_bids", args=[rfp.public_id])


@transaction.atomic
def bid_opening_request(*, rfp: Rfp, actor: User) -> BidOpening:
    rfp, opening = _locked(rfp)
    if rfp.status != Rfp.Status.CLOSED:
        raise OpeningRefused(rfp)
    if opening is not None:
        raise ProcurementError(
            f"{opening.requested_by} already requested the opening; another "
            "member confirms it.",
            code="opening_already_requested",
        )
    opening = BidOpening(rfp=rfp, requested_by=actor, requested_at=clock.now())
    opening.full_clean()
    opening.save()
    audit_record(
        actor=actor,
        action="rfp.opening_requested",
        target=rfp,
        organisation=rfp.buyer_organisation,
        data={"rfp": rfp.reference},
    )
    notify_users(  # the buyer's whole team: any one of them may confirm
        users=user_list_in([rfp.buyer_organisation_id]).exclude(pk=actor.pk),
        template="opening_requested",
        context={"rfp": rfp, "requested_by": actor.get_username()},
        url=_bids_url(rfp),
    )
    return opening


@transaction.atomic
def bid_opening_confirm(*, rfp: Rfp, actor: User) -> BidOpening:
    """Unseal: record the second person and move the RFP to opened, together."""
    rfp, opening = _locked(rfp)
    opening = _pending(rfp, opening)
    if rfp.status != Rfp.Status.CLOSED:
        raise OpeningRefused(rfp)
    if opening.requested_by_id == actor.pk:
        raise ProcurementError(
            "You requested this opening: another member of the buyer's team must "
            "confirm it.",
            code="opening_same_person",
        )
    opening.confirmed_by, opening.confirmed_at = actor, clock.now()
    opening.full_clean()
    opening.save(update_fields=["confirmed_by", "confirmed_at"])
    bids = list(rfp.bids.filter(status__in=LIVE_STATUSES))
    rfp = rfp_transition(
        rfp=rfp,
        to=Rfp.Status.OPENED,
        actor=actor,
        action="rfp.opening_confirmed",
        data={
            "requested_by": opening.requested_by.get_username(),
            "bids": len(bids),
        },
    )
    _notify_opened(rfp, bids)
    return opening


def _notify_opened(rfp: Rfp, bids: list[Bid]) -> None:
    team = user_list_in([rfp.buyer_organisation_id])
    notify_users(
        users=team,
        template="opening_confirmed",
        context={"rfp": rfp, "count": len(bids)},
        url=_bids_url(rfp),
    )
    for bid in bids:  # each vendor hears of its own bid only
        notify_users(
            users=user_list_in([bid.vendor_organisation_id], Role.VENDOR, Role.ADMIN),
            template="bid_opened",
            context={"rfp": rfp, "bid": bid},
            url=_bids_url(rfp),
        )


@transaction.atomic
def bid_opening_cancel(*, rfp: Rfp, actor: User) -> Rfp:
    """The requester takes a pending request back (a new one may follow)."""
    rfp, opening = _locked(rfp)
    opening = _pending(rfp, opening)
    if opening.requested_by_id != actor.pk:
        raise ProcurementError(
            f"Only {opening.requested_by}, who requested the opening, can cancel it.",
            code="opening_not_requester",
        )
    opening.delete()
    audit_record(
        actor=actor,
        action="rfp.opening_cancelled",
        target=rfp,
        organisation=rfp.buyer_organisation,
        data={"rfp": rfp.reference},
    )
    return rfp
