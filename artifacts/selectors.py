"""Reads of signing keys: an organisation's keys, those valid at a moment, and the
keys a user may see and manage."""

from __future__ import annotations

from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q, QuerySet

from accounts.models import Organisation, Role
from accounts.selectors import organisation_ids_for
from artifacts.models import SigningKey

AnyUser = AbstractBaseUser | AnonymousUser


def signing_key_list_for(organisation: Organisation) -> QuerySet[SigningKey]:
    """Every key the organisation registered, revoked ones included, newest first."""
    return SigningKey.objects.filter(organisation=organisation)


def signing_key_list_valid_at(
    organisation: Organisation, at: datetime
) -> QuerySet[SigningKey]:
    """Keys inside their window at ``at`` and not revoked by then."""
    return signing_key_list_for(organisation).filter(
        Q(revoked_at__isnull=True) | Q(revoked_at__gt=at),
        Q(valid_until__isnull=True) | Q(valid_until__gt=at),
        valid_from__lte=at,
    )


def signing_key_get_by_fingerprint(
    organisation: Organisation, fingerprint: str
) -> SigningKey | None:
    """The organisation's key with this fingerprint, whatever its state."""
    return signing_key_list_for(organisation).filter(fingerprint=fingerprint).first()


def signing_key_status_at(key: SigningKey, at: datetime) -> str:
    """``valid``, ``revoked``, ``expired`` or ``not_yet_valid`` at ``at``."""
    if key.revoked_at is not None and key.revoked_at <= at:
        return "revoked"
    if key.valid_until is not None and key.valid_until <= at:
        return "expired"
    if key.valid_from > at:
        return "not_yet_valid"
    return "valid"


def key_organisation_list_for(user: AnyUser) -> QuerySet[Organisation]:
    """Vendor organisations whose signing keys the user manages."""
    return Organisation.objects.filter(
        kind=Organisation.Kind.VENDOR,
        id__in=organisation_ids_for(user, Role.VENDOR, Role.ADMIN),
    )


def signing_key_list_visible_to(user: AnyUser) -> QuerySet[SigningKey]:
    """Keys of the organisations the user manages keys for."""
    return SigningKey.objects.filter(
        organisation__in=key_organisation_list_for(user)
    ).select_related("organisation")
