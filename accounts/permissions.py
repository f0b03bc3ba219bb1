"""Who may do what: pure predicates plus thin DRF wrappers."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.views import APIView

from accounts.models import Role
from accounts.selectors.users import user_roles

AnyUser = User | AnonymousUser

BUYER_SIDE = frozenset({Role.BUYER, Role.EVALUATOR, Role.ADMIN})


def has_role(user: AnyUser, *roles: str) -> bool:
    return bool(user_roles(user) & set(roles))


def can_view_audit_trail(user: AnyUser) -> bool:
    return has_role(user, Role.BUYER, Role.ADMIN, Role.AUDITOR)


class HasAnyRole(BasePermission):
    """DRF wrapper: ``permission_classes = [HasAnyRole.of(Role.BUYER)]``."""

    roles: frozenset[str] = frozenset()

    @classmethod
    def of(cls, *roles: str) -> type[HasAnyRole]:
        return type("HasAnyRole", (cls,), {"roles": frozenset(roles)})

    def has_permission(self, request: Request, view: APIView) -> bool:
        return has_role(request.user, *self.roles)
