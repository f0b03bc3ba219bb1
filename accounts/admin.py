from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from accounts.models import ApiToken, AuditEvent, Membership, Organisation


@admin.register(Organisation)
class OrganisationAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "kind", "created_at"]
    list_filter = ["kind"]
    search_fields = ["name", "slug"]
    readonly_fields = ["public_id", "created_at", "updated_at"]

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False  # changes go through services, which write the audit trail

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Membership)
class MembershipAdmin(OrganisationAdmin):
    list_display = ["user", "organisation", "role", "created_at"]
    list_filter = ["role", "organisation__kind"]
    search_fields = ["user__username", "organisation__name"]
    readonly_fields = ["created_at", "updated_at"]


@admin.register(ApiToken)
class ApiTokenAdmin(OrganisationAdmin):
    list_display = [
        "name",
        "user",
        "prefix",
        "expires_at",
        "last_used_at",
        "revoked_at",
    ]
    list_filter = []
    search_fields = ["user__username", "name", "prefix"]
    exclude = ["digest"]
    readonly_fields = ["public_id", "created_at", "updated_at"]


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    """Read-only: the trail is append-only."""

    list_display = [
        "occurred_at",
        "actor_repr",
        "action",
        "target_repr",
        "organisation",
    ]
    list_filter = ["action", "organisation"]
    search_fields = ["actor_repr", "action", "target_repr", "request_id"]
    date_hierarchy = "occurred_at"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
