"""Read-only admin of escrow releases and fixity runs: their services are the
only writers. Imported by ``artifacts/admin.py``."""

from __future__ import annotations

from django.contrib import admin

from artifacts.log_admin import ReadOnlyAdmin
from artifacts.models import FixityFinding, FixityRun, Release, ReleaseStep


class ReleaseStepInline(admin.TabularInline):
    model = ReleaseStep
    fields = ["occurred_at", "action", "role", "actor", "acknowledges_objection",
              "text", "event"]  # fmt: skip
    readonly_fields = fields
    can_delete = False
    extra = 0

    def has_add_permission(self, request: object, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: object, obj: object = None) -> bool:
        return False


@admin.register(Release)
class ReleaseAdmin(ReadOnlyAdmin):
    list_display = ["public_id", "rfp", "organisation", "condition", "status",
                    "requested_at", "executed_at"]  # fmt: skip
    list_filter = ["status", "condition"]
    search_fields = ["rfp__reference", "organisation__slug"]
    fields = ["public_id", "rfp", "organisation", "condition", "statement",
              "contract_clause", "status", "requested_by", "requested_at",
              "notice_ends_at", "executed_at"]  # fmt: skip
    readonly_fields = fields
    inlines = [ReleaseStepInline]


class FixityFindingInline(admin.TabularInline):
    model = FixityFinding
    fields = ["kind", "subject", "detail", "rfp_reference", "log_index"]
    readonly_fields = fields
    can_delete = False
    extra = 0

    def has_add_permission(self, request: object, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: object, obj: object = None) -> bool:
        return False


@admin.register(FixityRun)
class FixityRunAdmin(ReadOnlyAdmin):
    list_display = ["started_at", "trigger", "blobs_checked", "deposits_checked",
                    "log_size", "findings_count"]  # fmt: skip
    list_filter = ["trigger"]
    fields = ["public_id", "trigger", "started_at", "finished_at", "blobs_checked",
              "bytes_hashed", "objects_listed", "deposits_checked", "events_checked",
              "log_entries_checked", "log_size", "checkpoint_size",
              "findings_count"]  # fmt: skip
    readonly_fields = fields
    inlines = [FixityFindingInline]
