from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


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


class InvalidTransition(ApplicationError):
    """A status move that the entity's transition table does not allow (HTTP 409)."""

    def __init__(self, *, entity: str, current: str, requested: str) -> None:
        super().__init__(
            message=f"A {entity} cannot move from {current!r} to {requested!r}.",
            code="invalid_transition",
        )
        self.current = current
        self.requested = requested
