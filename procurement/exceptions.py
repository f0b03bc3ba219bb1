from __future__ import annotations

from typing import Any

from accounts.exceptions import ApplicationError, StateConflict
from accounts.exceptions import full_clean_or_problems as _full_clean_or_problems


class ProcurementError(ApplicationError):
    """A procurement rule refused the request (HTTP 400)."""


class ProcurementConflict(StateConflict):
    """The tender's current state refuses the action (HTTP 409)."""


class RfpNotEditable(ProcurementConflict):
    """Editing an RFP that is no longer a draft."""

    def __init__(self, *, current: str) -> None:
        super().__init__(
            message=(
                f"This RFP is {current}: only a draft can be edited. After "
                "publication, change its conditions with an addendum."
            ),
            code="not_draft",
        )
        self.current = current


class EvaluationStateError(ProcurementConflict):
    """The RFP's (or the score sheet's) state refuses the evaluation action."""

    def __init__(self, message: str, *, code: str = "evaluation_closed") -> None:
        super().__init__(message=message, code=code)


def full_clean_or_problems(instance: Any, **kwargs: Any) -> None:
    """``full_clean`` raising ``ProcurementError`` (400) with one problem per field."""
    _full_clean_or_problems(instance, error_class=ProcurementError, **kwargs)
