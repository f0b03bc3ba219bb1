"""Read-only admin of the transparency log: entries, nodes, checkpoints and the
state row can be looked at, never added, changed or deleted (the log is
append-only and written by ``artifacts.services.transparency`` alone).
Imported by ``artifacts/admin.py``."""

from __future__ import annotations

import base64

from django.contrib import admin
from django.http import HttpRequest

from artifacts.models import Checkpoint, LogEntry, LogNode, LogState


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
    fields = ["index", "created_at", "leaf_hash_b64", "leaf_size", "leaf_text"]
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
    fields = ["level", "index", "hash_b64"]
    readonly_fields = fields

    @admin.display(description="hash (base64)")
    def hash_b64(self, node: LogNode) -> str:
        return _b64(node.hash)


@admin.register(Checkpoint)
class CheckpointAdmin(ReadOnlyAdmin):
    list_display = ["size", "root_hash_b64", "origin", "created_at"]
    fields = ["size", "root_hash_b64", "origin", "verifier_key", "note", "created_at"]
    readonly_fields = fields

    @admin.display(description="root hash (base64)")
    def root_hash_b64(self, checkpoint: Checkpoint) -> str:
        return _b64(checkpoint.root_hash)


@admin.register(LogState)
class LogStateAdmin(ReadOnlyAdmin):
    list_display = ["size"]
    fields = ["size"]
    readonly_fields = fields
