"""The clock's side of the lifecycle: run by the beat task and on every access."""

from __future__ import annotations

from django.db import transaction

from procurement import clock
from procurement.models import Bid, Rfp
from procurement.services.rfps import rfp_transition


@transaction.atomic
def rfp_apply_deadlines(*, rfp: Rfp) -> Rfp:
    """Close a published RFP whose submission deadline has passed.

    Closing waits while any clarification is unanswered (as Prozorro's tendering
    cannot end with open questions); bids are refused after the deadline all the
    same. Closing with fewer submitted bids than ``min_bids`` makes the RFP
    unsuccessful: its bids are never opened."""
    rfp = Rfp.objects.select_for_update().get(pk=rfp.pk)
    if rfp.status != Rfp.Status.PUBLISHED or rfp.submission_deadline > clock.now():
        return rfp
    if rfp.clarifications.filter(answered_at__isnull=True).exists():
        return rfp
    rfp = rfp_transition(
        rfp=rfp, to=Rfp.Status.CLOSED, actor=None, note="submission deadline passed"
    )
    valid_bids = rfp.bids.filter(status=Bid.Status.SUBMITTED).count()
    if valid_bids < rfp.min_bids:
        rfp = rfp_transition(
            rfp=rfp,
            to=Rfp.Status.UNSUCCESSFUL,
            actor=None,
            note=f"{valid_bids} valid bid(s) at the deadline, {rfp.min_bids} required",
        )
    return rfp


def rfp_apply_all_deadlines() -> int:
    """The periodic sweep; returns how many RFPs changed status."""
    due = Rfp.objects.filter(
        status=Rfp.Status.PUBLISHED, submission_deadline__lte=clock.now()
    ).values_list("pk", flat=True)
    changed = 0
    for pk in list(due):
        rfp = rfp_apply_deadlines(rfp=Rfp.objects.get(pk=pk))
        changed += rfp.status != Rfp.Status.PUBLISHED
    return changed
