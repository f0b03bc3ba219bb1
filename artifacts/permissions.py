"""Who may manage an organisation's signing keys: pure predicates over memberships."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from accounts.models import Organisation, Role
from accounts.selectors import organisation_ids_for

AnyUser = AbstractBaseUser | AnonymousUser


def can_manage_keys(user: AnyUser, organisation: Organisation) -> bool:
    """Vendors and admins of a vendor organisation manage its signing keys."""
    return (
        organisation.kind == Organisation.Kind.VENDOR
        and organisation.id in organisation_ids_for(user, Role.VENDOR, Role.ADMIN)
    )
