"""The one writer of the audit trail."""

from __future__ import annotations

from typing import Any

from django.contrib.contenttypes.models import ContentType
from django.db import models, transaction

from accounts.lib.context import request_id_var
from accounts.models import AuditEvent, Organisation
from accounts.services.actor import Actor, person

RFP_MODEL = "procurement.rfp"


class AuditOutsideTransaction(RuntimeError):
    pass


def audit_record(
    *,
    actor: Actor,
    action: str,
    target: models.Model | None = None,
    organisation: Organisation | None = None,
    data: dict[str, Any] | None = None,
    rfp_reference: str = "",
) -> AuditEvent:
    """Append one event. Must run inside the caller's transaction, so that the
    change and its audit row commit or roll back together.

    The event's RFP (``rfp_reference``) is taken, when not given, from
    ``data["rfp"]`` (every RFP-related caller names it there), else from the
    target: an RFP itself, or an object with an ``rfp``."""
    if not transaction.get_connection().in_atomic_block:
        raise AuditOutsideTransaction(
            f"audit_record({action!r}) must be called inside transaction.atomic()."
        )
    user = person(actor)
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
        rfp_reference=(rfp_reference or _rfp_reference_of(target, data or {}))[:40],
    )


def _rfp_reference_of(target: models.Model | None, data: dict[str, Any]) -> str:
    """The RFP an event is about, read by convention (accounts knows no RFP
    model): ``data["rfp"]``, an RFP target's ``reference``, a target's ``rfp``."""
    named = data.get("rfp")
    if isinstance(named, str):
        return named
    if target is None:
        return ""
    if target._meta.label_lower == RFP_MODEL:
        return str(getattr(target, "reference", ""))
    if any(f.name == "rfp" and f.is_relation for f in target._meta.get_fields()):
        rfp = getattr(target, "rfp", None)
        return str(getattr(rfp, "reference", "")) if rfp is not None else ""
    return ""
