"""Who a service acts for: the one ``Actor`` type of every service.

``Actor`` is a signed-in ``User``, or ``None``: the system itself acting (a
beat task, a worker, the lab runner, a migration's data step), recorded as
``"system"`` in the audit trail. ``None`` never stands for an anonymous
visitor: the interfaces authenticate before they call a service, so an
``AnonymousUser`` is not an actor (``audit_record`` would record one as the
system, which is why it must not reach a service)."""

from __future__ import annotations

from typing import TypeAlias

from django.contrib.auth.models import User

Actor: TypeAlias = User | None


def person(actor: Actor) -> User | None:
    """The user behind ``actor``, for a ``*_by`` field: ``None`` for the system
    (and for an anonymous user, should a caller pass one despite the type)."""
    return actor if actor is not None and actor.is_authenticated else None
