"""The clock's side of the lifecycle: closing at the submission deadline.

Deadlines are enforced twice: the Celery beat task ``procurement.apply_deadlines``
(``procurement.tasks``, every minute) sweeps every due RFP, and every page or API
request that reads an RFP re-checks it first (``rfp_apply_deadlines``, or
``rfp_apply_due_deadlines`` for a list), so nobody ever sees an RFP that should
have closed. What happens at the deadline, as a user would expect:

(a) Closing waits while any clarification is unanswered (as Prozorro's tendering
    cannot end with open questions): vendors must be able to read every answer
    before bids are sealed for good. Bids are refused after the deadline all the
    same; the RFP closes on the first check after the last answer.
(b) With fewer submitted bids than ``min_bids`` at closing (bids that need
    re-confirmation or were withdrawn do not count), the RFP becomes unsuccessful
    at once: its bids are never opened, and the buyer and the invited vendors are
    told. The buyer is told only how many bids there were, never by whom.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import QuerySet

from accounts.notifications import notify_users
from accounts.selectors import user_list_in
from procurement import clock
from procurement.exceptions import ProcurementError
from procurement.models import Bid, Rfp
from procurement.services.rfps import (
    Actor,
    notify_vendors,
    rfp_transition,
    rfp_url,
)


def _valid_bid_count(rfp: Rfp) -> int:
    return rfp.bids.filter(status=Bid.Status.SUBMITTED).count()


def _close_blocker(rfp: Rfp) -> str:
    """Why a published RFP cannot close now ("" when it can)."""
    if rfp.submission_deadline > clock.now():
        return "The submission deadline has not passed yet."
    unanswered = rfp.clarifications.filter(answered_at__isnull=True).count()
    if unanswered:
        return (
            f"{unanswered} clarification(s) are unanswered; the RFP closes as soon "
            "as every question has its answer."
        )
    return ""


def _notify_buyer(rfp: Rfp, template: str, **context: object) -> None:
    """The buyer organisation's members; ``context`` must hold no bidder identity."""
    notify_users(
        users=user_list_in([rfp.buyer_organisation_id]),
        template=template,
        context={"rfp": rfp, **context},
        url=rfp_url(rfp),
    )


@transaction.atomic
def rfp_close(*, rfp: Rfp, actor: Actor = None) -> Rfp:
    """Close a published RFP whose deadline passed; see the module docstring.
    The buyer organisation is told the number of bids (``rfp_closed``), nothing
    else, or that the RFP is unsuccessful (``rfp_unsuccessful``)."""
    rfp = Rfp.objects.select_for_update().get(pk=rfp.pk)
    if rfp.status == Rfp.Status.PUBLISHED:
        blocker = _close_blocker(rfp)
        if blocker:
            raise ProcurementError(blocker, code="cannot_close")
    rfp = rfp_transition(
        rfp=rfp, to=Rfp.Status.CLOSED, actor=actor, note="submission deadline passed"
    )
    bids = _valid_bid_count(rfp)
    if bids < rfp.min_bids:
        return rfp_declare_unsuccessful(rfp=rfp, actor=actor)
    _notify_buyer(rfp, "rfp_closed", bid_count=bids)
    return rfp


@transaction.atomic
def rfp_declare_unsuccessful(*, rfp: Rfp, actor: Actor = None) -> Rfp:
    """A closed RFP with fewer valid bids than ``min_bids`` ends unsuccessful."""
    rfp = Rfp.objects.select_for_update().get(pk=rfp.pk)
    bids = _valid_bid_count(rfp)
    if rfp.status == Rfp.Status.CLOSED and bids >= rfp.min_bids:
        raise ProcurementError(
            f"The RFP has {bids} valid bid(s), enough to open them.",
            code="enough_bids",
        )
    note = f"{bids} valid bid(s) at the deadline, {rfp.min_bids} required"
    rfp = rfp_transition(rfp=rfp, to=Rfp.Status.UNSUCCESSFUL, actor=actor, note=note)
    _notify_buyer(rfp, "rfp_unsuccessful", bid_count=bids, for_buyer=True)
    vendor_ids = rfp.invited_vendors.values_list("pk", flat=True)
    notify_vendors(rfp, vendor_ids, "rfp_unsuccessful", for_buyer=False)
    return rfp


def rfp_apply_deadlines(*, rfp: Rfp) -> Rfp:
    """Close ``rfp`` if its deadline passed and nothing blocks it. Costs no query
    when nothing is due, and then returns the very instance it was given."""
    if rfp.status != Rfp.Status.PUBLISHED or rfp.submission_deadline > clock.now():
        return rfp
    with transaction.atomic():
        locked = Rfp.objects.select_for_update().get(pk=rfp.pk)
        if locked.status != Rfp.Status.PUBLISHED or _close_blocker(locked):
            return locked
        return rfp_close(rfp=locked, actor=None)


def rfp_apply_due_deadlines(rfps: QuerySet[Rfp]) -> int:
    """Apply deadlines to the due RFPs among ``rfps``; one query when none is due.
    Returns how many RFPs changed status."""
    due = rfps.filter(
        status=Rfp.Status.PUBLISHED, submission_deadline__lte=clock.now()
    ).values_list("pk", flat=True)
    changed = 0
    for pk in list(due):
        rfp = rfp_apply_deadlines(rfp=Rfp.objects.get(pk=pk))
        changed += rfp.status != Rfp.Status.PUBLISHED
    return changed


def rfp_apply_all_deadlines() -> int:
    """The periodic sweep (the beat task); returns how many RFPs changed status."""
    return rfp_apply_due_deadlines(Rfp.objects.all())
