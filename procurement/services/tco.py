"""The buyer's TCO formula: versioned, never edited. Version 1 holds the defaults
and is recorded when a decision first depends on it (a new version, the award);
until then the pages show the defaults as version 1."""

from __future__ import annotations

from decimal import Decimal

from django.contrib.auth.models import User
from django.db import transaction

from accounts.selectors import clock
from accounts.services.audit import audit_record
from procurement.exceptions import ProcurementError
from procurement.models import Rfp, TcoFormula
from procurement.services.evaluation import (
    EvaluationStateError,
    full_clean_or_problems,
)

HOURS_PER_YEAR_MAX = 8784  # a leap year
FORMULA_FROZEN = {Rfp.Status.AWARDED, Rfp.Status.CANCELLED, Rfp.Status.UNSUCCESSFUL}


def _record(formula: TcoFormula, actor: User, note: str) -> TcoFormula:
    full_clean_or_problems(formula)
    formula.save()
    audit_record(
        actor=actor,
        action="tco_formula.created",
        target=formula,
        organisation=formula.rfp.buyer_organisation,
        data={
            "rfp": formula.rfp.reference,
            "version": formula.version,
            "pue": formula.pue,
            "utilisation": formula.utilisation,
            "hours_per_year": formula.hours_per_year,
            "note": note,
        },
    )
    return formula


@transaction.atomic
def tco_formula_ensure(*, rfp: Rfp, actor: User) -> TcoFormula:
    """The latest version, recording version 1 with the defaults if none exists."""
    latest = rfp.tco_formulas.select_for_update().order_by("-version").first()
    if latest is not None:
        return latest
    initial = TcoFormula(rfp=rfp, version=1, created_at=clock.now(), created_by=actor)
    return _record(initial, actor, "defaults, recorded when first needed")


@transaction.atomic
def tco_formula_create(
    *,
    rfp: Rfp,
    pue: Decimal,
    utilisation: Decimal,
    hours_per_year: int,
    actor: User,
) -> TcoFormula:
    """A new version of the RFP's formula; the comparison uses the latest."""
    rfp = Rfp.objects.select_for_update().get(pk=rfp.pk)
    if rfp.status in FORMULA_FROZEN:
        raise EvaluationStateError(
            f"{rfp.reference} is {rfp.get_status_display().lower()}; "
            "its TCO formula is frozen.",
            code="formula_frozen",
        )
    if not 1 <= hours_per_year <= HOURS_PER_YEAR_MAX:
        raise ProcurementError(f"Hours per year: 1 to {HOURS_PER_YEAR_MAX}.")
    latest = tco_formula_ensure(rfp=rfp, actor=actor)
    values = (pue, utilisation, hours_per_year)
    if values == (latest.pue, latest.utilisation, latest.hours_per_year):
        raise ProcurementError(
            f"These are the values of version {latest.version}; nothing to change.",
            code="unchanged",
        )
    formula = TcoFormula(
        rfp=rfp,
        version=latest.version + 1,
        pue=pue,
        utilisation=utilisation,
        hours_per_year=hours_per_year,
        created_at=clock.now(),
        created_by=actor,
    )
    return _record(formula, actor, "")
