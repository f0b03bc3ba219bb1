"""Read-only admin for the tender. Every change goes through a service.

Sealing holds here too: a bid is listed only once its RFP is opened, and bid
content models (documents, receipts, cost inputs) and clarifications (whose asker
is private) are not registered at all. The audit trail's admin (registered by
accounts) is re-registered below without the events of sealed bids, whose actor
and organisation name the bidder."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Q, QuerySet
from django.http import HttpRequest

from accounts.admin import AuditEventAdmin
from accounts.models import AuditEvent
from procurement.models import (
    Addendum,
    Award,
    Bid,
    BidOpening,
    Rfp,
    RfpTemplate,
    TcoFormula,
)

OPENED = [Rfp.Status.OPENED, Rfp.Status.AWARDED]


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # changes go through services, which write the audit trail

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Rfp)
class RfpAdmin(ReadOnlyAdmin):
    list_display = ["reference", "title", "buyer_organisation", "status"]
    list_filter = ["status"]
    search_fields = ["reference", "title"]
    # Not the invitations: the list of invited vendors is the buyer's business.
    fields = [
        "reference",
        "title",
        "buyer_organisation",
        "status",
        "questions_deadline",
        "submission_deadline",
        "min_bids",
        "closed_at",
        "opened_at",
        "terms_frozen_at",
    ]


@admin.register(RfpTemplate)
class RfpTemplateAdmin(ReadOnlyAdmin):
    list_display = ["name", "buyer_organisation", "created_at"]
    search_fields = ["name"]
    exclude = ["data"]


@admin.register(Addendum)
class AddendumAdmin(ReadOnlyAdmin):
    list_display = ["rfp", "number", "issued_at", "deadline_extended_to"]
    search_fields = ["rfp__reference"]


@admin.register(Bid)
class BidAdmin(ReadOnlyAdmin):
    """Only bids of opened (or awarded) RFPs exist for the admin; sealed ones
    are neither listed, searched nor shown (their change page redirects)."""

    list_display = ["commitment", "rfp", "status", "version"]
    list_filter = ["status"]
    search_fields = ["commitment", "rfp__reference"]
    fields = [
        "rfp",
        "vendor_organisation",
        "status",
        "version",
        "submitted_at",
        "commitment",
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Bid]:
        return super().get_queryset(request).filter(rfp__status__in=OPENED)


@admin.register(BidOpening)
class BidOpeningAdmin(ReadOnlyAdmin):
    list_display = ["rfp", "requested_by", "requested_at", "confirmed_by"]
    search_fields = ["rfp__reference"]


@admin.register(TcoFormula)
class TcoFormulaAdmin(ReadOnlyAdmin):
    list_display = ["rfp", "version", "created_at", "created_by"]


@admin.register(Award)
class AwardAdmin(ReadOnlyAdmin):
    list_display = ["rfp", "bid", "decided_at", "standstill_ends_at"]


class SealedAuditEventAdmin(AuditEventAdmin):
    """The trail minus ``bid.*`` events of RFPs whose bids are still sealed."""

    def get_queryset(self, request: HttpRequest) -> QuerySet[AuditEvent]:
        sealed = Rfp.objects.exclude(status__in=OPENED).values_list(
            "reference", flat=True
        )
        bid_event = Q(action__startswith="bid.") & Q(data__rfp__in=list(sealed))
        return super().get_queryset(request).exclude(bid_event)


admin.site.unregister(AuditEvent)
admin.site.register(AuditEvent, SealedAuditEventAdmin)
