"""Host tokens: how a lab host joins a pool, and how its agent is known.

``host_token_issue`` returns the token once (only its digest is kept);
``host_token_revoke`` ends it, and the runner API refuses the agent at its next
call; ``host_token_authenticate`` is what the runner API's authentication calls
on every request. Issuing and revoking are audited; use (``last_used_at``) is
telemetry, written at most every few minutes."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Final

from django.db import transaction

from accounts.selectors import clock
from accounts.services.actor import Actor, person
from accounts.services.audit import audit_record
from accounts.services.users import token_digest
from benchmarks.models import HostToken, LabHost, LabPool, Run
from benchmarks.models.campaigns import ACTIVE_STATES
from benchmarks.services.common import RunnerConflict, RunnerError
from benchmarks.services.uploads import attempts_uploads_remove_on_commit

TOKEN_PREFIX: Final = "rgh_"  # noqa: S105 - a prefix, not a secret
_LAST_USED_RESOLUTION: Final = timedelta(minutes=5)
_NAME_MAX: Final = 100


@dataclass(frozen=True)
class IssuedHostToken:
    token: HostToken
    raw: str  # shown once, never stored


class HostTokenRefused(Exception):
    """The presented token is unknown or revoked: ``message`` says which."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@transaction.atomic
def host_token_issue(*, pool: LabPool, name: str, actor: Actor) -> IssuedHostToken:
    """A new token for the host ``name`` joining ``pool``."""
    name = name.strip()
    if not name or len(name) > _NAME_MAX:
        raise RunnerError(
            f"Name the host (1 to {_NAME_MAX} characters), e.g. lab-07.",
            code="host_name_invalid",
        )
    if HostToken.objects.filter(pool=pool, name=name, revoked_at=None).exists():
        raise RunnerConflict(
            f"A host named {name!r} holds a token on {pool.name} already: revoke "
            "it first, or choose another name.",
            code="host_token_exists",
        )
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = HostToken.objects.create(
        pool=pool,
        name=name,
        prefix=raw[:12],
        digest=token_digest(raw),
        created_by=person(actor),
    )
    audit_record(
        actor=actor,
        action="host_token.issued",
        target=token,
        organisation=pool.lab_organisation,
        data={"pool": pool.name, "host": name, "prefix": token.prefix},
    )
    return IssuedHostToken(token=token, raw=raw)


@transaction.atomic
def host_token_revoke(*, token: HostToken, actor: Actor) -> HostToken:
    """End ``token``: its agent is refused at its next call, the hosts it
    registered are shown offline, and the outputs they uploaded for the runs they
    hold are removed after commit (nobody can finish those attempts; the reaper
    re-queues the runs)."""
    token = (
        HostToken.objects.select_for_update().select_related("pool").get(pk=token.pk)
    )
    if token.revoked_at is not None:
        raise RunnerConflict(
            f"The token of {token.name} was revoked already.",
            code="host_token_revoked",
        )
    now = clock.now()
    token.revoked_at = now
    token.revoked_by = person(actor)
    token.save(update_fields=["revoked_at", "revoked_by", "updated_at"])
    LabHost.objects.filter(token=token, stopped_at=None).update(stopped_at=now)
    held = Run.objects.filter(host__token=token, state__in=ACTIVE_STATES)
    attempts_uploads_remove_on_commit(held.values_list("pk", "attempt"))
    audit_record(
        actor=actor,
        action="host_token.revoked",
        target=token,
        organisation=token.pool.lab_organisation,
        data={"pool": token.pool.name, "host": token.name, "prefix": token.prefix},
    )
    return token


def host_token_authenticate(raw: str) -> HostToken:
    """The active token ``raw`` is, with its pool; raises ``HostTokenRefused``."""
    if not raw.startswith(TOKEN_PREFIX):
        raise HostTokenRefused("Not a host token (they start with rgh_).")
    token = (
        HostToken.objects.select_related("pool__lab_organisation")
        .filter(digest=token_digest(raw))
        .first()
    )
    if token is None:
        raise HostTokenRefused("Unknown host token.")
    if token.revoked_at is not None:
        raise HostTokenRefused(
            f"This host token ({token.name} on {token.pool.name}) was revoked at "
            f"{token.revoked_at:%Y-%m-%d %H:%M} UTC: ask the lab operator to "
            "join the host again."
        )
    now = clock.now()
    if token.last_used_at is None or now - token.last_used_at > _LAST_USED_RESOLUTION:
        HostToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token
