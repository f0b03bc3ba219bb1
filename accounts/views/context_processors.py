from __future__ import annotations

from django.http import HttpRequest
from django.urls import reverse

from accounts.models import Role
from accounts.selectors.users import notification_list_for, user_roles


def navigation(request: HttpRequest) -> dict[str, object]:
    """The navigation a user sees follows the roles they hold."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"nav_items": [], "user_roles": frozenset(), "unread_notifications": 0}
    roles = user_roles(user)
    items = [("Dashboard", reverse("portal:dashboard"))]
    if roles & {
        Role.BUYER,
        Role.EVALUATOR,
        Role.VENDOR,
        Role.LABOPS,
        Role.AUDITOR,
        Role.ADMIN,
    }:
        items.append(("RFPs", reverse("procurement:rfp_list")))
        items.append(("Escrow", reverse("artifacts:escrow_deposits")))
        items.append(("Lab", reverse("benchmarks:campaign_list")))
    if roles & {Role.BUYER, Role.ADMIN, Role.AUDITOR}:
        items.append(("Audit trail", reverse("accounts:audit_list")))
    if Role.VENDOR in roles:
        items.append(("Signing keys", reverse("artifacts:signing_keys")))
    items.append(("API docs", reverse("api-docs")))
    current = request.path
    nav = [
        {
            "label": label,
            "url": url,
            "active": current == url or (url != "/" and current.startswith(url)),
        }
        for label, url in items
    ]
    unread = notification_list_for(user).filter(read_at__isnull=True).count()
    return {"nav_items": nav, "user_roles": roles, "unread_notifications": unread}
