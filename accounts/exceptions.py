from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a request, as the API error format lists it."""

    code: str
    message: str
    path: str | None = None

    def as_dict(self) -> dict[str, str]:
        data = {"code": self.code, "message": self.message}
        if self.path is not None:
            data["path"] = self.path
        return data


@dataclass
class ApplicationError(Exception):
    """A domain rule said no. The API answers 400 with ``code`` and ``message``."""

    message: str
    code: str = "invalid"
    problems: Sequence[Problem] = field(default_factory=tuple)

    def __str__(self) -> str:
        return self.message


class StateConflict(ApplicationError):
    """The object's current state refuses the action (HTTP 409)."""


class InvalidTransition(StateConflict):
    """A status move that the entity's transition table does not allow (HTTP 409)."""

    def __init__(self, *, entity: str, current: str, requested: str) -> None:
        super().__init__(
            message=f"A {entity} cannot move from {current!r} to {requested!r}.",
            code="invalid_transition",
        )
        self.current = current
        self.requested = requested


def full_clean_or_problems(
    instance: Any, *, error_class: type[ApplicationError] | None = None, **kwargs: Any
) -> None:
    """``full_clean`` raising ``ApplicationError`` (400) with one problem per
    message instead of Django's ``ValidationError``."""
    from django.core.exceptions import ValidationError

    try:
        instance.full_clean(**kwargs)
    except ValidationError as error:
        problems = [
            Problem("invalid", message, path=None if name == "__all__" else name)
            for name, messages in error.message_dict.items()
            for message in messages
        ]
        raise (error_class or ApplicationError)(
            "; ".join(p.message for p in problems), problems=problems
        ) from None
