"""The one writer of the audit trail."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.contrib.contenttypes.models import ContentType
from django.db import models, transaction

from accounts.context import request_id_var
from accounts.models import AuditEvent, Organisation


class AuditOutsideTransaction(RuntimeError):
    pass


def audit_record(
    *,
    actor: AbstractBaseUser | AnonymousUser | None,
    action: str,
    target: models.Model | None = None,
    organisation: Organisation | None = None,
    data: dict[str, Any] | None = None,
) -> AuditEvent:
    """Append one event. Must run inside the caller's transaction, so that the
    change and its audit row commit or roll back together."""
    if not transaction.get_connection().in_atomic_block:
        raise AuditOutsideTransaction(
            f"audit_record({action!r}) must be called inside transaction.atomic()."
        )
    user = actor if actor is not None and actor.is_authenticated else None
    return AuditEvent.objects.create(
        actor=user,
        actor_repr=user.get_username() if user is not None else "system",
        organisation=organisation,
        action=action,
        target_type=ContentType.objects.get_for_model(target) if target else None,
        target_id=str(target.pk) if target is not None else "",
        target_repr=str(target)[:300] if target is not None else "",
        data=data or {},
        request_id=request_id_var.get(),
    )
