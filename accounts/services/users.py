from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import transaction

from accounts import conf
from accounts.exceptions import ApplicationError
from accounts.models import ApiToken, Membership, Notification, Organisation
from accounts.selectors import clock
from accounts.selectors.users import memberships_forget
from accounts.services.audit import audit_record

TOKEN_PREFIX = "rgt_"  # noqa: S105 - a marker for secret scanners, not a secret


def token_digest(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


@transaction.atomic
def organisation_create(
    *, slug: str, name: str, kind: str, actor: User | None
) -> Organisation:
    organisation = Organisation(slug=slug, name=name, kind=kind)
    organisation.full_clean()
    organisation.save()
    audit_record(
        actor=actor,
        action="organisation.created",
        target=organisation,
        organisation=organisation,
        data={"slug": slug, "kind": kind},
    )
    return organisation


@transaction.atomic
def organisation_engage(
    *, buyer: Organisation, provider: Organisation, actor: User | None
) -> Organisation:
    """A buyer engages a lab or an audit organisation to work on its RFPs."""
    if buyer.kind != Organisation.Kind.BUYER:
        raise ApplicationError("Only a buyer organisation engages labs and auditors.")
    if provider.kind not in {Organisation.Kind.LAB, Organisation.Kind.AUDIT}:
        raise ApplicationError("A buyer engages only lab or audit organisations.")
    buyer.engages.add(provider)
    audit_record(
        actor=actor,
        action="organisation.engaged",
        target=buyer,
        organisation=buyer,
        data={"provider": provider.slug, "provider_kind": provider.kind},
    )
    return buyer


@transaction.atomic
def membership_grant(
    *,
    user: User,
    organisation: Organisation,
    role: str,
    actor: User | None,
) -> Membership:
    membership = Membership(user=user, organisation=organisation, role=role)
    membership.full_clean()
    membership.save()
    memberships_forget(user)
    audit_record(
        actor=actor,
        action="membership.granted",
        target=membership,
        organisation=organisation,
        data={"user": user.get_username(), "role": role},
    )
    return membership


@transaction.atomic
def user_create(
    *, username: str, password: str, email: str = "", actor: User | None
) -> User:
    user = get_user_model()(username=username, email=email)
    user.set_password(password)
    user.full_clean()
    user.save()
    audit_record(actor=actor, action="user.created", target=user)
    return user


@transaction.atomic
def user_password_change(
    *,
    user: User,
    new_password: str | None,
    actor: User | None = None,
) -> tuple[User, int]:
    """Set a new password (None: disable password sign-in) and revoke the user's
    active API tokens (one got with a stolen password must not outlive it), in
    one audit row by ``actor`` (an admin; the user when not given). Returns the
    user and how many tokens were revoked."""
    user.set_password(new_password)
    user.save(update_fields=["password"])
    now = clock.now()
    revoked = ApiToken.objects.filter(
        user=user, revoked_at__isnull=True, expires_at__gt=now
    ).update(revoked_at=now, updated_at=now)
    audit_record(
        actor=actor or user,
        action="user.password_changed",
        target=user,
        data={"api_tokens_revoked": revoked},
    )
    return user, revoked


@transaction.atomic
def user_login_record(*, user: User | None, username: str, ok: bool) -> None:
    audit_record(
        actor=user,
        action="user.logged_in" if ok else "user.login_failed",
        target=user,
        data={} if ok else {"username": username[:150]},
    )


@transaction.atomic
def api_token_issue(*, user: User, name: str) -> tuple[ApiToken, str]:
    """Make a token; the raw value is returned once and never stored."""
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken(
        user=user,
        name=name,
        prefix=raw[:10],
        digest=token_digest(raw),
        expires_at=clock.now() + timedelta(days=conf.api_token_ttl_days()),
    )
    token.full_clean()
    token.save()
    audit_record(
        actor=user, action="api_token.issued", target=token, data={"name": name}
    )
    return token, raw


@transaction.atomic
def api_token_revoke(*, token: ApiToken, actor: User) -> ApiToken:
    token = ApiToken.objects.select_for_update().get(pk=token.pk)
    if token.revoked_at is not None:
        raise ApplicationError("This token is already revoked.", code="already_revoked")
    token.revoked_at = clock.now()
    token.save(update_fields=["revoked_at", "updated_at"])
    audit_record(actor=actor, action="api_token.revoked", target=token)
    return token


def notifications_mark_read(*, user: User) -> int:
    """Reading one's notifications is not a state change worth an audit row."""
    return Notification.objects.filter(recipient=user, read_at__isnull=True).update(
        read_at=clock.now()
    )
