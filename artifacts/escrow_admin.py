"""Read-only admin of escrow: deposits, the blobs they name and escrow events
can be looked at, never added, changed or deleted (their services are the only
writers, and nothing rewrites a deposit). Imported by ``artifacts/admin.py``."""

from __future__ import annotations

from django.contrib import admin

from artifacts.log_admin import ReadOnlyAdmin
from artifacts.models import Deposit, DepositBlob, EscrowEvent


def _leaf_text(row: Deposit | EscrowEvent) -> str:
    return bytes(row.leaf).decode("utf-8", errors="replace")


class DepositBlobInline(admin.TabularInline):
    model = DepositBlob
    fields = ["position", "role", "path", "blob"]
    readonly_fields = fields
    can_delete = False
    extra = 0

    def has_add_permission(self, request: object, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: object, obj: object = None) -> bool:
        return False


@admin.register(Deposit)
class DepositAdmin(ReadOnlyAdmin):
    list_display = ["log_index", "kind", "rfp", "organisation", "deposited_at",
                    "retain_until", "legal_hold"]  # fmt: skip
    list_filter = ["kind", "legal_hold"]
    search_fields = ["rfp__reference", "organisation__slug", "leaf_hash"]
    fields = ["public_id", "log_index", "kind", "rfp", "organisation", "bundle",
              "deposited_by", "deposited_at", "retain_until", "legal_hold",
              "leaf_hash", "leaf_text"]  # fmt: skip
    readonly_fields = fields
    inlines = [DepositBlobInline]

    @admin.display(description="leaf (canonical JSON)")
    def leaf_text(self, deposit: Deposit) -> str:
        return _leaf_text(deposit)


@admin.register(EscrowEvent)
class EscrowEventAdmin(ReadOnlyAdmin):
    list_display = ["log_index", "action", "deposit", "actor", "occurred_at"]
    list_filter = ["action"]
    fields = ["public_id", "log_index", "action", "deposit", "bundle", "actor",
              "occurred_at", "leaf_hash", "leaf_text"]  # fmt: skip
    readonly_fields = fields

    @admin.display(description="leaf (canonical JSON)")
    def leaf_text(self, event: EscrowEvent) -> str:
        return _leaf_text(event)
