from __future__ import annotations

from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from accounts.audit import audit_record
from accounts.exceptions import InvalidTransition
from accounts.models import Organisation
from procurement import clock
from procurement.exceptions import ProcurementError
from procurement.models import RFP_TRANSITIONS, Rfp


@transaction.atomic
def rfp_create(
    *,
    reference: str,
    title: str,
    buyer_organisation: Organisation,
    submission_deadline: datetime,
    actor: AbstractBaseUser | None,
) -> Rfp:
    if buyer_organisation.kind != Organisation.Kind.BUYER:
        raise ProcurementError("Only a buyer organisation issues RFPs.")
    rfp = Rfp(
        reference=reference,
        title=title,
        buyer_organisation=buyer_organisation,
        submission_deadline=submission_deadline,
    )
    rfp.full_clean()
    rfp.save()
    audit_record(
        actor=actor,
        action="rfp.created",
        target=rfp,
        organisation=buyer_organisation,
        data={"rfp": reference},
    )
    return rfp


@transaction.atomic
def rfp_invite_vendor(
    *, rfp: Rfp, vendor: Organisation, actor: AbstractBaseUser | None
) -> Rfp:
    if vendor.kind != Organisation.Kind.VENDOR:
        raise ProcurementError(f"{vendor} is not a vendor organisation.")
    if rfp.status not in {Rfp.Status.DRAFT, Rfp.Status.PUBLISHED}:
        raise ProcurementError("Vendors can be invited only before the deadline.")
    if rfp.invited_vendors.filter(pk=vendor.pk).exists():
        raise ProcurementError(f"{vendor} is already invited.", code="already_invited")
    rfp.invited_vendors.add(vendor)
    audit_record(
        actor=actor,
        action="rfp.vendor_invited",
        target=rfp,
        organisation=rfp.buyer_organisation,
        data={"rfp": rfp.reference, "vendor": vendor.slug},
    )
    return rfp


@transaction.atomic
def rfp_transition(
    *, rfp: Rfp, to: str, actor: AbstractBaseUser | None, note: str = ""
) -> Rfp:
    rfp = Rfp.objects.select_for_update().get(pk=rfp.pk)
    if to not in RFP_TRANSITIONS[rfp.status]:
        raise InvalidTransition(entity="RFP", current=rfp.status, requested=to)
    old, rfp.status = rfp.status, to
    stamp = {Rfp.Status.CLOSED: "closed_at", Rfp.Status.OPENED: "opened_at"}.get(to)
    if stamp:
        setattr(rfp, stamp, clock.now())
    rfp.save(update_fields=["status", "updated_at", *([stamp] if stamp else [])])
    audit_record(
        actor=actor,
        action="rfp.transitioned",
        target=rfp,
        organisation=rfp.buyer_organisation,
        data={"rfp": rfp.reference, "from": old, "to": to, "note": note},
    )
    return rfp
