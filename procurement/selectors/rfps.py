from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q, QuerySet

from accounts.models import Organisation, Role
from accounts.selectors import buyer_organisation_ids_served_by, membership_list_for
from procurement.models import Rfp

AnyUser = AbstractBaseUser | AnonymousUser


def _organisation_ids_of_kind(user: AnyUser, kind: str) -> set[int]:
    return set(
        membership_list_for(user)
        .filter(organisation__kind=kind)
        .values_list("organisation_id", flat=True)
    )


def rfp_list_visible_to(user: AnyUser) -> QuerySet[Rfp]:
    """Buyers see their organisation's RFPs; vendors the published RFPs they are
    invited to; labs and auditors the published RFPs of the buyers that engaged them."""
    if not user.is_authenticated:
        return Rfp.objects.none()
    own_buyer = _organisation_ids_of_kind(user, Organisation.Kind.BUYER)
    own_vendor = _organisation_ids_of_kind(user, Organisation.Kind.VENDOR)
    served = buyer_organisation_ids_served_by(
        user, Role.LABOPS, Role.AUDITOR, Role.ADMIN
    )
    visible = (
        Q(buyer_organisation_id__in=own_buyer)
        | (Q(invited_vendors__in=own_vendor) & ~Q(status=Rfp.Status.DRAFT))
        | (Q(buyer_organisation_id__in=served) & ~Q(status=Rfp.Status.DRAFT))
    )
    ids = Rfp.objects.filter(visible).values("id")
    return Rfp.objects.filter(id__in=ids).select_related("buyer_organisation")


def rfp_get_visible(user: AnyUser, *, public_id: uuid.UUID) -> Rfp | None:
    return rfp_list_visible_to(user).filter(public_id=public_id).first()


@dataclass(frozen=True)
class InvitedVendorScope:
    """Which invited vendors a user may see: all of them on RFPs of their own buyer
    organisation (or of the buyers that engaged them), otherwise only their own."""

    full_view_buyer_ids: frozenset[int]
    own_vendor_ids: frozenset[int]

    def visible(self, rfp: Rfp) -> list[Organisation]:
        invited = list(rfp.invited_vendors.all())
        if rfp.buyer_organisation_id in self.full_view_buyer_ids:
            return invited
        return [org for org in invited if org.id in self.own_vendor_ids]


def invited_vendor_scope_for(user: AnyUser) -> InvitedVendorScope:
    full = _organisation_ids_of_kind(user, Organisation.Kind.BUYER)
    full |= buyer_organisation_ids_served_by(
        user, Role.LABOPS, Role.AUDITOR, Role.ADMIN
    )
    own = _organisation_ids_of_kind(user, Organisation.Kind.VENDOR)
    return InvitedVendorScope(frozenset(full), frozenset(own))
