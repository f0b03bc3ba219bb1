from __future__ import annotations

from collections.abc import Iterable
from datetime import date
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q, QuerySet

from accounts.models import (
    ApiToken,
    AuditEvent,
    Membership,
    Notification,
    Organisation,
    Role,
)

AnyUser = AbstractBaseUser | AnonymousUser


def membership_list_for(user: AnyUser) -> QuerySet[Membership]:
    if not user.is_authenticated:
        return Membership.objects.none()
    return Membership.objects.filter(user=user).select_related("organisation")


def user_roles(user: AnyUser) -> frozenset[str]:
    """Every role the user holds in any organisation (cached on the user object)."""
    if not user.is_authenticated:
        return frozenset()
    cached: frozenset[str] | None = getattr(user, "_reprogate_roles", None)
    if cached is None:
        cached = frozenset(membership_list_for(user).values_list("role", flat=True))
        user._reprogate_roles = cached  # type: ignore[union-attr]
    return cached


def organisation_ids_for(user: AnyUser, *roles: str) -> set[int]:
    """Organisations in which the user holds one of ``roles`` (any role if none)."""
    memberships = membership_list_for(user)
    if roles:
        memberships = memberships.filter(role__in=roles)
    return set(memberships.values_list("organisation_id", flat=True))


def buyer_organisation_ids_served_by(user: AnyUser, *roles: str) -> set[int]:
    """Buyer organisations that engaged one where the user holds ``roles``."""
    own = organisation_ids_for(user, *roles)
    if not own:
        return set()
    return set(
        Organisation.objects.filter(
            kind=Organisation.Kind.BUYER, engages__in=own
        ).values_list("id", flat=True)
    )


def audit_trail_organisation_ids(user: AnyUser) -> set[int]:
    """Whose trail the user may read: their own buyer organisation (buyers, admins)
    and the buyers that engaged the user's audit organisation (auditors)."""
    buyer_side = organisation_ids_for(user, Role.BUYER, Role.ADMIN)
    return buyer_side | buyer_organisation_ids_served_by(user, Role.AUDITOR)


def audit_event_list_visible_to(
    user: AnyUser,
    *,
    action: str = "",
    actor: str = "",
    target_type: str = "",
    since: date | None = None,
    until: date | None = None,
) -> QuerySet[AuditEvent]:
    events = AuditEvent.objects.filter(
        organisation_id__in=audit_trail_organisation_ids(user)
    )
    if action:
        events = events.filter(Q(action=action) | Q(action__startswith=f"{action}."))
    if actor:
        events = events.filter(actor_repr=actor)
    if target_type:
        events = events.filter(target_type__model=target_type)
    if since is not None:
        events = events.filter(occurred_at__date__gte=since)
    if until is not None:
        events = events.filter(occurred_at__date__lte=until)
    return events.select_related("target_type", "organisation")


def api_token_list_for(user: AnyUser) -> QuerySet[ApiToken]:
    if not user.is_authenticated:
        return ApiToken.objects.none()
    return ApiToken.objects.filter(user=user)


def notification_list_for(user: AnyUser) -> QuerySet[Notification]:
    if not user.is_authenticated:
        return Notification.objects.none()
    return Notification.objects.filter(recipient=user)


def user_list_in(organisation_ids: Iterable[int], *roles: str) -> QuerySet[Any]:
    """Active members of these organisations (holding one of ``roles``, if given)."""
    memberships = Membership.objects.filter(organisation_id__in=list(organisation_ids))
    if roles:
        memberships = memberships.filter(role__in=roles)
    return get_user_model().objects.filter(
        is_active=True, id__in=memberships.values("user_id")
    )
