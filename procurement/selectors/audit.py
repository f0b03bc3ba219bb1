"""The RFP's audit trail, and what procurement tells accounts about RFPs so that
a buyer's trail includes its vendors' events, sealed until opening
(``accounts.selectors.audit_scope.rfp_scope``, filled in
``ProcurementConfig.ready()``)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Exists, OuterRef, Q, QuerySet

from accounts.models import AuditEvent
from accounts.selectors.users import audit_event_list_visible_to
from procurement.models import Rfp

OPENED = (Rfp.Status.OPENED, Rfp.Status.AWARDED)  # ``Rfp.is_sealed`` is False


def rfp_audit_events(user: User | AnonymousUser, *, rfp: Rfp) -> QuerySet[AuditEvent]:
    """The RFP's trail as the user may read it: the events naming the RFP in the
    user's trail scope, with its vendors' bid and bundle events (sealed until
    opening) and, once opened, its vendors' signing-key events."""
    return audit_event_list_visible_to(user, rfp=rfp.reference, vendor_events=True)


class RfpTrailScope:
    """``accounts.selectors.audit_scope.RfpScope`` over procurement's RFPs."""

    def references(self, buyer_organisation_ids: Collection[int]) -> QuerySet[Any]:
        return Rfp.objects.filter(
            buyer_organisation_id__in=list(buyer_organisation_ids)
        ).values_list("reference", flat=True)

    def opened_references(
        self, buyer_organisation_ids: Collection[int]
    ) -> QuerySet[Any]:
        return self.references(buyer_organisation_ids).filter(status__in=OPENED)

    def key_events_shown(
        self, buyer_organisation_ids: Collection[int], reference: str = ""
    ) -> Q:
        invitations = Rfp.invited_vendors.through.objects.filter(
            rfp__buyer_organisation_id__in=list(buyer_organisation_ids),
            rfp__status__in=OPENED,
            organisation_id=OuterRef("organisation_id"),
            rfp__opened_at__gte=OuterRef("occurred_at"),
        )
        if reference:
            invitations = invitations.filter(rfp__reference=reference)
        return Q(Exists(invitations))


RFP_TRAIL_SCOPE = RfpTrailScope()
