"""What the runner services share: their errors."""

from __future__ import annotations

from accounts.exceptions import ApplicationError, StateConflict


class RunnerError(ApplicationError):
    """A runner rule said no (HTTP 400)."""


class RunnerConflict(StateConflict):
    """The campaign's or run's state refuses the action (HTTP 409)."""


class StaleAttempt(Exception):
    """The run moved on (re-queued by the reaper, cancelled, finished): the
    worker holding this attempt must stop and change nothing."""

    def __init__(self, run_id: int, attempt: int, current: int | None = None) -> None:
        super().__init__(
            f"run {run_id}: attempt {attempt} is stale (current: {current})"
        )
        self.run_id, self.attempt, self.current = run_id, attempt, current
