from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from accounts.exceptions import ApplicationError, Problem, StateConflict


class GatesError(ApplicationError):
    """A gates rule refused the request (HTTP 400)."""


class GatesConflict(StateConflict):
    """The plan's, decision's or obligation's current state refuses it (HTTP 409)."""


def engine_problems(found: Iterable[Any], code: str = "invalid") -> tuple[Problem, ...]:
    """The engine's path-named problems (``gates.lib.engine.validate.Problem``) in the
    API's error shape."""
    return tuple(Problem(code, p.message, p.path) for p in found)
