from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin as AuthUserAdmin  # registers it
from django.contrib.auth.forms import AdminPasswordChangeForm
from django.http import HttpRequest, HttpResponse

from accounts.models import ApiToken, AuditEvent, Membership, Organisation
from accounts.services.users import user_password_change

# who is changing a password in the admin, and what it revoked (per request)
_password_change: ContextVar[dict[str, Any] | None] = ContextVar(
    "admin_password_change", default=None
)


class ServicePasswordChangeForm(AdminPasswordChangeForm):
    """The admin's password form saved through ``user_password_change``, as the
    password page is: the user's API tokens are revoked and the change is
    audited (by the admin). Disabling password sign-in goes the same way."""

    def save(self, commit: bool = True) -> Any:
        usable = self.cleaned_data.get("set_usable_password", True)
        change = _password_change.get() or {}
        user, change["revoked"] = user_password_change(
            user=self.user,
            new_password=self.cleaned_data["password1"] if usable else None,
            actor=change.get("actor"),
        )
        return user


class UserAdmin(AuthUserAdmin):
    change_password_form = ServicePasswordChangeForm

    def user_change_password(
        self, request: HttpRequest, id: str, form_url: str = ""
    ) -> HttpResponse:
        change: dict[str, Any] = {"actor": request.user}
        token = _password_change.set(change)
        try:
            response = super().user_change_password(request, id, form_url)
        finally:
            _password_change.reset(token)
        revoked = change.get("revoked")
        if revoked:
            messages.info(
                request,
                f"{revoked} API token{'s were' if revoked > 1 else ' was'} revoked "
                "with the old password.",
            )
        return response


admin.site.unregister(get_user_model())
admin.site.register(get_user_model(), UserAdmin)


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
