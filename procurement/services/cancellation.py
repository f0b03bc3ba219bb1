"""Cancelling an RFP. It records what the clock says first (a published RFP
past its deadline closes, ``procurement.services.deadlines``), so it sits above
both the deadlines and ``rfp_transition``."""

from __future__ import annotations

from django.db import transaction

from accounts.services.actor import Actor
from procurement.exceptions import ProcurementError
from procurement.models import Rfp
from procurement.services.deadlines import rfp_apply_deadlines
from procurement.services.rfp_common import locked_rfp, notify_vendors
from procurement.services.rfp_lifecycle import rfp_transition


@transaction.atomic
def rfp_cancel(*, rfp: Rfp, reason: str, actor: Actor) -> Rfp:
    """Cancel from any state that is not final; invited vendors are told why,
    unless the RFP was still a draft that they never saw."""
    reason = reason.strip()
    if not reason:
        raise ProcurementError(
            "Give a reason for cancelling; invited vendors will read it.",
            code="reason_required",
        )
    was = rfp_apply_deadlines(rfp=locked_rfp(rfp)).status
    rfp = rfp_transition(rfp=rfp, to=Rfp.Status.CANCELLED, actor=actor, note=reason)
    if was != Rfp.Status.DRAFT:
        vendor_ids = rfp.invited_vendors.values_list("pk", flat=True)
        notify_vendors(rfp, vendor_ids, "rfp_cancelled", reason=reason)
    return rfp
