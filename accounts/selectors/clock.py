"""The installation's clock (the shared core: every app reads it). Deadlines and
expiries read ``clock.now()``; tests move it with ``clock.travel_to(...)`` (the
``clock`` fixture), the whole process at once."""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

_frozen_at: datetime | None = None


def now() -> datetime:
    return _frozen_at if _frozen_at is not None else timezone.now()


def frozen_at() -> datetime | None:
    """Where the clock is frozen, or None while it runs (to put it back)."""
    return _frozen_at


def travel_to(moment: datetime | None) -> None:
    """Freeze the clock at ``moment`` (aware), or let it run again with ``None``."""
    global _frozen_at  # one process-wide clock is the point
    if moment is not None and timezone.is_naive(moment):
        raise ValueError("The clock takes aware datetimes only.")
    _frozen_at = moment
