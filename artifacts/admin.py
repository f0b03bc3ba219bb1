"""Admin of the artifacts app, read-only: the transparency log (entries, nodes,
checkpoints, state), escrow (deposits, their blobs, events), releases and fixity
runs can be looked at, never added, changed or deleted (their services are the
only writers, and the log is append-only)."""

from __future__ import annotations

import base64

from django.contrib import admin
from django.http import HttpRequest

from artifacts.models import (
    Checkpoint,
    Deposit,
    DepositBlob,
    EscrowEvent,
    FixityFinding,
    FixityRun,
    LogEntry,
    LogNode,
    LogState,
    Release,
    ReleaseStep,
)


def _b64(data: bytes | memoryview | None) -> str:
    return base64.b64encode(bytes(data or b"")).decode("ascii")


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(LogEntry)
class LogEntryAdmin(ReadOnlyAdmin):
    list_display = ["index", "leaf_hash_b64", "leaf_size", "created_at"]
    fields = ("index", "created_at", "leaf_hash_b64", "leaf_size", "leaf_text")
    readonly_fields = fields

    @admin.display(description="leaf hash (base64)")
    def leaf_hash_b64(self, entry: LogEntry) -> str:
        return _b64(entry.leaf_hash)

    @admin.display(description="leaf bytes")
    def leaf_size(self, entry: LogEntry) -> int:
        return len(entry.leaf)

    @admin.display(description="leaf (UTF-8, for reading only)")
    def leaf_text(self, entry: LogEntry) -> str:
        return bytes(entry.leaf).decode("utf-8", errors="replace")


@admin.register(LogNode)
class LogNodeAdmin(ReadOnlyAdmin):
    list_display = ["level", "index", "hash_b64"]
    list_filter = ["level"]
    fields = ("level", "index", "hash_b64")
    readonly_fields = fields

    @admin.display(description="hash (base64)")
    def hash_b64(self, node: LogNode) -> str:
        return _b64(node.hash)


@admin.register(Checkpoint)
class CheckpointAdmin(ReadOnlyAdmin):
    list_display = ["size", "root_hash_b64", "origin", "created_at"]
    fields = (
        "size",
        "root_hash_b64",
        "origin",
        "verifier_key",
        "note",
        "created_at",
    )
    readonly_fields = fields

    @admin.display(description="root hash (base64)")
    def root_hash_b64(self, checkpoint: Checkpoint) -> str:
        return _b64(checkpoint.root_hash)


@admin.register(LogState)
class LogStateAdmin(ReadOnlyAdmin):
    list_display = ["size"]
    fields = ("size",)
    readonly_fields = fields


def _leaf_text(row: Deposit | EscrowEvent) -> str:
    return bytes(row.leaf).decode("utf-8", errors="replace")


class DepositBlobInline(admin.TabularInline):
    model = DepositBlob
    fields = ("position", "role", "path", "blob")
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
    fields = ("public_id", "log_index", "kind", "rfp", "organisation", "bundle",
              "deposited_by", "deposited_at", "retain_until", "legal_hold",
              "leaf_hash", "leaf_text")  # fmt: skip
    readonly_fields = fields
    inlines = [DepositBlobInline]

    @admin.display(description="leaf (canonical JSON)")
    def leaf_text(self, deposit: Deposit) -> str:
        return _leaf_text(deposit)


@admin.register(EscrowEvent)
class EscrowEventAdmin(ReadOnlyAdmin):
    list_display = ["log_index", "action", "deposit", "actor", "occurred_at"]
    list_filter = ["action"]
    fields = ("public_id", "log_index", "action", "deposit", "bundle", "actor",
              "occurred_at", "leaf_hash", "leaf_text")  # fmt: skip
    readonly_fields = fields

    @admin.display(description="leaf (canonical JSON)")
    def leaf_text(self, event: EscrowEvent) -> str:
        return _leaf_text(event)


class ReleaseStepInline(admin.TabularInline):
    model = ReleaseStep
    fields = ("occurred_at", "action", "role", "actor", "acknowledges_objection",
              "text", "event")  # fmt: skip
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
    fields = ("public_id", "rfp", "organisation", "condition", "statement",
              "contract_clause", "status", "requested_by", "requested_at",
              "notice_ends_at", "executed_at")  # fmt: skip
    readonly_fields = fields
    inlines = [ReleaseStepInline]


class FixityFindingInline(admin.TabularInline):
    model = FixityFinding
    fields = (
        "kind",
        "subject",
        "detail",
        "rfp_reference",
        "log_index",
    )
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
    fields = ("public_id", "trigger", "started_at", "finished_at", "blobs_checked",
              "bytes_hashed", "objects_listed", "deposits_checked", "events_checked",
              "log_entries_checked", "log_size", "checkpoint_size",
              "findings_count")  # fmt: skip
    readonly_fields = fields
    inlines = [FixityFindingInline]
