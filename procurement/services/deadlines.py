"""The clock's side of the lifecycle: closing at the submission deadline.

Reads never write. What an RFP's status is at any moment is derived from the
clock by one selector (``procurement.selectors.rfps.rfp_effective_status`` and its
SQL form, which every page, API and list reads through ``rfp_list_visible_to``),
so a page read after the deadline shows the RFP closed before anything recorded
it. The move is persisted by the Celery beat task ``procurement.apply_deadlines``
(``procurement.tasks``, every minute: ``rfp_apply_all_deadlines``) and by every
write service that depends on the status: it calls ``rfp_apply_deadlines`` inside
its own transaction before checking its preconditions. What happens at the
deadline, as a user would expect:

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

from accounts.selectors import clock
from accounts.selectors.users import user_list_in
from accounts.services.actor import Actor
from accounts.services.notifications import notify_users
from procurement.exceptions import ProcurementError
from procurement.models import Bid, Rfp
from procurement.selectors.rfps import rfp_effective_status, rfp_list_due
from procurement.services.rfp_common import notify_vendors, rfp_url
from procurement.services.rfp_lifecycle import rfp_transition


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
    """Record the status the clock gives ``rfp`` (``rfp_effective_status``): close
    it if its deadline passed and nothing blocks it. For write services, inside
    their transaction and before their own checks; never on a read. Costs no query
    when nothing is due, and then returns the very instance it was given."""
    now = clock.now()
    if rfp_effective_status(rfp, now) == rfp.status:
        return rfp
    with transaction.atomic():
        locked = Rfp.objects.select_for_update().get(pk=rfp.pk)
        if rfp_effective_status(locked, now) == locked.status:
            return locked
        return rfp_close(rfp=locked, actor=None)


def rfp_apply_due_deadlines(rfps: QuerySet[Rfp]) -> int:
    """Apply deadlines to the due RFPs among ``rfps``; one query when none is due.
    Returns how many RFPs changed status."""
    changed = 0
    for pk in list(rfp_list_due(rfps, clock.now()).values_list("pk", flat=True)):
        rfp = rfp_apply_deadlines(rfp=Rfp.objects.get(pk=pk))
        changed += rfp.status != Rfp.Status.PUBLISHED
    return changed


def rfp_apply_all_deadlines() -> int:
    """The periodic sweep (the beat task); returns how many RFPs changed status."""
    return rfp_apply_due_deadlines(Rfp.objects.all())
