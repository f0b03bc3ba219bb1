"""What the lab reproduced of each vendor's claims, read without importing gates.

The dependency runs gates → procurement, so the comparison, the TCO page and the
award cannot ask gates for evaluations themselves. Instead gates registers a
*lab-validation provider* in ``lab_validation`` when Django starts
(``GatesConfig.ready()`` → ``gates.selectors.reproduced``): one callable that
gives, per vendor
organisation id of the bids passed, the ``LabValidation`` of its vendor (the
latest evaluation of the first gate of its frozen plan, every vendor present,
nothing read while the bids are sealed), and one that says whether the RFP
uses lab validation at all (a gate plan frozen for any vendor).

The protocols below are what procurement and its templates read of those
objects. With no provider registered (procurement on its own) every vendor is
"not yet reproduced" (``Unreproduced``) and no RFP uses lab validation, so an
award rests on the claims alone, as before gates existed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

from accounts.lib.registry import Registry

if TYPE_CHECKING:
    from uuid import UUID

    from procurement.models import Bid, Rfp

NOT_REPRODUCED: Final = "Not yet reproduced"
UNJUDGED_CHIP: Final = "badge-inconclusive"  # the chip of a claim nobody judged


class CriterionFigure(Protocol):
    """One criterion's outcome: the lab's estimate of a claimed figure."""

    @property
    def criterion(self) -> str: ...
    @property
    def metric(self) -> str: ...
    @property
    def stat(self) -> str: ...
    @property
    def scenario(self) -> str: ...
    @property
    def verdict(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def estimate(self) -> float | None: ...
    @property
    def ci_low(self) -> float | None: ...
    @property
    def ci_high(self) -> float | None: ...
    @property
    def runs(self) -> int: ...


class GateEvaluation(Protocol):
    @property
    def public_id(self) -> UUID: ...
    @property
    def verdict(self) -> str: ...
    @property
    def score_pct(self) -> Decimal | None: ...
    @property
    def evaluated_at(self) -> datetime: ...


class GatePlanVersion(Protocol):
    @property
    def version(self) -> int: ...


@runtime_checkable
class ReproducedClaim(Protocol):
    """One claim beside the lab's figure for it (``result`` None: not judged)."""

    @property
    def claim(self) -> dict[str, Any]: ...
    @property
    def result(self) -> CriterionFigure | None: ...
    @property
    def url(self) -> str: ...  # the criterion's page, "" when none
    @property
    def unit(self) -> str: ...
    @property
    def verdict(self) -> str: ...
    @property
    def chip(self) -> str: ...
    @property
    def reproduced(self) -> bool: ...


@runtime_checkable
class LabValidation(Protocol):
    """The lab-validation gate of one vendor (``evaluation`` None: not yet run)."""

    @property
    def vendor_slug(self) -> str: ...
    @property
    def gate(self) -> str: ...
    @property
    def plan(self) -> GatePlanVersion | None: ...
    @property
    def evaluation(self) -> GateEvaluation | None: ...
    @property
    def verdict(self) -> str: ...
    @property
    def passed(self) -> bool: ...
    @property
    def chip(self) -> str: ...
    @property
    def label(self) -> str: ...
    @property
    def url(self) -> str: ...  # the gate's page, "" before it is evaluated

    def claims(self, claims: Iterable[dict[str, Any]]) -> Sequence[ReproducedClaim]:
        """Each claim beside the criterion judging it, in order."""
        ...

    def throughput(self) -> CriterionFigure | None:
        """The lab's estimate of the throughput the TCO formula uses."""
        ...

    def throughput_decimal(self) -> Decimal | None:
        """That estimate in tok/s (2 places), None when none is positive."""
        ...


class LabValidationSource(Protocol):
    def __call__(self, rfp: Rfp, bids: Iterable[Bid]) -> Mapping[int, LabValidation]:
        """Vendor organisation id -> its lab validation, for every bid's vendor
        (empty ones while the bids are sealed). Needs the bids with
        ``vendor_organisation``; a query count independent of their number."""
        ...


class LabValidationInUse(Protocol):
    def __call__(self, rfp: Rfp) -> bool:
        """Does the buyer validate claims in the lab on this RFP?"""
        ...


# (scenario, metric, stat) -> the median the buyer's baseline campaign measured
BaselineFigures = Mapping[tuple[str, str, str], float]


class BaselineSource(Protocol):
    def __call__(self, rfp: Rfp) -> BaselineFigures:
        """The buyer's baseline medians on this RFP (its current infrastructure,
        run by its lab), empty when none was measured; a fixed query count."""
        ...


def current_of(figures: BaselineFigures, claim: Mapping[str, Any]) -> float | None:
    """The baseline's median for a claim's metric and stat: in the claim's
    scenario, else in the only scenario the baseline measured it in (None:
    the baseline did not measure it, or in several other scenarios)."""
    metric, stat = str(claim.get("metric") or ""), str(claim.get("stat") or "")
    exact = figures.get((str(claim.get("scenario") or ""), metric, stat))
    if exact is not None:
        return exact
    others = [v for (_, m, s), v in figures.items() if (m, s) == (metric, stat)]
    return others[0] if len(others) == 1 else None


# --- without gates: nothing reproduced ------------------------------------------------


@dataclass(frozen=True)
class UnjudgedClaim:
    claim: dict[str, Any]
    result: None = None
    url: str = ""
    verdict: str = ""
    chip: str = UNJUDGED_CHIP
    reproduced: bool = False

    @property
    def unit(self) -> str:
        return str(self.claim.get("unit") or "")


@dataclass(frozen=True)
class Unreproduced:
    """A vendor whose claims no lab has judged."""

    vendor_slug: str
    gate: str = ""
    plan: None = None
    evaluation: None = None
    verdict: str = ""
    passed: bool = False
    chip: str = UNJUDGED_CHIP
    label: str = NOT_REPRODUCED
    url: str = ""

    def claims(self, claims: Iterable[dict[str, Any]]) -> Sequence[ReproducedClaim]:
        return [UnjudgedClaim(c) for c in claims]

    def throughput(self) -> None:
        return None

    def throughput_decimal(self) -> None:
        return None


def _nothing_reproduced(rfp: Rfp, bids: Iterable[Bid]) -> dict[int, LabValidation]:
    return {
        b.vendor_organisation_id: Unreproduced(b.vendor_organisation.slug) for b in bids
    }


def _no_lab_validation(rfp: Rfp) -> bool:
    return False


def _no_baseline(rfp: Rfp) -> BaselineFigures:
    return {}


# --- the registry ---------------------------------------------------------------------


@dataclass(frozen=True)
class LabValidationProvider:
    """What gates registers: the lab validations of an RFP's vendors, whether
    the RFP uses lab validation at all, and the buyer's baseline figures (what
    the comparison shows as "vs current")."""

    validations_for: LabValidationSource
    in_use: LabValidationInUse
    baseline_for: BaselineSource = _no_baseline


NOTHING_REPRODUCED: Final = LabValidationProvider(
    _nothing_reproduced, _no_lab_validation
)

# gates' provider (``gates.selectors.reproduced``); without it nothing is
# reproduced and no RFP uses lab validation.
lab_validation: Registry[LabValidationProvider] = Registry(
    "procurement.selectors.reproduced.lab_validation", default=NOTHING_REPRODUCED
)


def lab_validations_for(rfp: Rfp, bids: Iterable[Bid]) -> dict[int, LabValidation]:
    """The lab validation of each bid's vendor, by vendor organisation id."""
    return dict(lab_validation.get().validations_for(rfp, list(bids)))


def rfp_uses_lab_validation(rfp: Rfp) -> bool:
    """Then an award rests on a passed lab validation or a written reason."""
    return lab_validation.get().in_use(rfp)


def baseline_figures_for(rfp: Rfp) -> dict[tuple[str, str, str], float]:
    """The buyer's baseline medians on the RFP, (scenario, metric, stat) -> median."""
    return dict(lab_validation.get().baseline_for(rfp))
