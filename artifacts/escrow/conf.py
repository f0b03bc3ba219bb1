"""Escrow settings with their defaults, read when used (tests change them):

- ``ESCROW_RETENTION_YEARS`` (10): how long deposits are kept when the RFP's
  contract terms name no retention (``Rfp.escrow_retention_years`` empty);
- ``ESCROW_OBJECT_LOCK_MODE`` (``COMPLIANCE``): the S3 Object Lock retention
  mode of deposited blobs, ``COMPLIANCE`` (nobody, root included, may delete or
  shorten it) or ``GOVERNANCE`` (users with ``s3:BypassGovernanceRetention``
  may);
- ``ESCROW_OBJECT_LOCK`` (``auto``): ``auto`` locks deposited blobs whenever the
  S3 bucket has Object Lock enabled, ``off`` never does (a bucket without Object
  Lock, local files and in-memory storage are never locked).
"""

from __future__ import annotations

import calendar
from datetime import datetime
from typing import Any, Final

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

DEFAULT_RETENTION_YEARS: Final = 10
LOCK_MODES: Final = ("COMPLIANCE", "GOVERNANCE")


def escrow_retention_years(rfp: Any) -> int:
    """Years to keep the RFP's deposits: its contract terms, else the setting."""
    years = getattr(rfp, "escrow_retention_years", None)
    if years is None:
        years = getattr(settings, "ESCROW_RETENTION_YEARS", None)
    years = DEFAULT_RETENTION_YEARS if years is None else int(years)
    if years < 1:
        raise ImproperlyConfigured("Escrow retention must be at least one year.")
    return years


def add_years(moment: datetime, years: int) -> datetime:
    """The same day and time ``years`` later (29 February becomes 28)."""
    year = moment.year + years
    day = min(moment.day, calendar.monthrange(year, moment.month)[1])
    return moment.replace(year=year, day=day)


def escrow_retain_until(rfp: Any, deposited_at: datetime) -> datetime:
    return add_years(deposited_at, escrow_retention_years(rfp))


def object_lock_mode() -> str:
    mode = str(getattr(settings, "ESCROW_OBJECT_LOCK_MODE", None) or "COMPLIANCE")
    if mode.upper() not in LOCK_MODES:
        raise ImproperlyConfigured(
            f"ESCROW_OBJECT_LOCK_MODE must be COMPLIANCE or GOVERNANCE, not {mode!r}."
        )
    return mode.upper()


def object_lock_enabled_setting() -> bool:
    value = str(getattr(settings, "ESCROW_OBJECT_LOCK", None) or "auto").lower()
    if value not in ("auto", "off"):
        raise ImproperlyConfigured(
            f"ESCROW_OBJECT_LOCK must be 'auto' or 'off', not {value!r}."
        )
    return value == "auto"
