"""Breaches an escrow release can cite, read without importing the app that
records them.

The dependency runs gates → artifacts, so the release workflow cannot ask for
re-test obligations itself. Instead gates registers a *breach source*
(``breach_source``) when Django starts (``GatesConfig.ready()``): a callable that
takes an RFP and a vendor organisation id and returns that vendor's breaches on
the RFP (a failed or expired re-test obligation), newest first. A release request on the
``breach`` condition may cite one by its id: its statement then quotes the
breach, and the request's log entry and audit row name it.

With no source registered (artifacts on its own), nothing is citable."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from accounts.lib.registry import Registry

if TYPE_CHECKING:
    from procurement.models import Rfp


@dataclass(frozen=True)
class CitedBreach:
    id: str  # the public id of what was breached
    kind: str  # e.g. "retest_obligation"
    label: str  # one line for a choice list
    statement: str  # what a release quotes: what was owed, and how it was breached
    url: str  # the page of what was breached
    breached_at: datetime


class BreachSource(Protocol):
    def __call__(self, rfp: Rfp, organisation_id: int) -> list[CitedBreach]: ...


def _no_breaches(rfp: Rfp, organisation_id: int) -> list[CitedBreach]:
    return []


# gates' source (``gates.selectors.breaches.gate_breaches``); without it
# nothing is citable.
breach_source: Registry[BreachSource] = Registry(
    "artifacts.selectors.breaches.breach_source", default=_no_breaches
)


def breaches_citable(rfp: Rfp, organisation_id: int) -> list[CitedBreach]:
    """The vendor's breaches on ``rfp`` a release may cite ([] without a source)."""
    return list(breach_source.get()(rfp, organisation_id))


def breach_get(rfp: Rfp, organisation_id: int, breach_id: str) -> CitedBreach | None:
    return next(
        (b for b in breaches_citable(rfp, organisation_id) if b.id == breach_id), None
    )
