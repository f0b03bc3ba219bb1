"""The one way an entity's status moves: ``transition``.

Every entity with a status keeps its allowed moves as data, a
``*_TRANSITIONS`` table (``{status: frozenset(statuses it may move to)}``) in
its models module. ``transition`` locks the row, reads the status it has now,
refuses a move the table does not allow (``InvalidTransition``, or the
entity's own refusal), sets the status and the move's other fields, saves
just those, and writes the move's one audit row, all in one transaction. The
entities' ``*_transition`` services are thin wrappers that say what their
rows name; verb services check their own preconditions and call them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, TypeAlias, TypeVar

from django.db import models, transaction

from accounts.exceptions import InvalidTransition, full_clean_or_problems
from accounts.models import Organisation
from accounts.services.actor import Actor
from accounts.services.audit import audit_record

Transitions: TypeAlias = Mapping[str, frozenset[str]]
M = TypeVar("M", bound=models.Model)

STAMP: Final = "updated_at"


def transition_check(
    obj: models.Model,
    to: str,
    *,
    table: Transitions,
    entity: str,
    field: str = "status",
    refused: Callable[[], Exception] | None = None,
) -> None:
    """Refuse a move ``table`` does not allow from ``obj``'s status as it is in
    memory: ``refused()`` if given, else ``InvalidTransition`` naming ``entity``
    (a verb checks early, before its own work; ``transition`` checks again)."""
    current = getattr(obj, field)
    if to not in table[current]:
        if refused is not None:
            raise refused()
        raise InvalidTransition(entity=entity, current=current, requested=to)


@transaction.atomic
def transition(
    obj: M,
    to: str,
    *,
    actor: Actor,
    table: Transitions,
    entity: str,
    action: str | None,
    field: str = "status",
    fields: Mapping[str, Any] | None = None,
    data: Mapping[str, Any] | None = None,
    target: models.Model | None = None,
    organisation: Organisation | None = None,
    refused: Callable[[], Exception] | None = None,
    validate: bool = False,
) -> M:
    """Move ``obj`` to ``to`` and return it.

    Locks the row and reads its ``field`` (``status``; a run's ``state``) as
    stored, so a caller's stale copy cannot move from a status it no longer
    has; refuses what ``table`` does not allow (``transition_check``); sets
    ``field`` and ``fields``, runs ``full_clean`` if ``validate``, and saves
    them (with ``updated_at`` where the model has it). The audit row is
    ``action`` on ``target`` (``obj``) in ``organisation``'s trail, its data
    ``{"from": …, "to": …, **data}``; ``action=None`` when the move is part of
    a verb whose one row the caller writes right after it (an escrow release
    step with its log entry, a report's deposit, the award that confirms its
    request)."""
    model = type(obj)
    stored = model._default_manager.select_for_update().filter(pk=obj.pk)
    current = stored.values_list(field, flat=True).get()
    setattr(obj, field, current)
    transition_check(obj, to, table=table, entity=entity, field=field, refused=refused)
    setattr(obj, field, to)
    for name, value in (fields or {}).items():
        setattr(obj, name, value)
    if validate:
        full_clean_or_problems(obj)
    changed = {field, *(fields or {})}
    if any(f.name == STAMP for f in model._meta.concrete_fields):
        changed.add(STAMP)
    obj.save(update_fields=sorted(changed))
    if action is not None:
        audit_record(
            actor=actor,
            action=action,
            target=obj if target is None else target,
            organisation=organisation,
            data={"from": current, "to": to, **(data or {})},
        )
    return obj
