"""The breach source gates gives the escrow release workflow
(``artifacts.selectors.breaches``): a vendor's failed or expired re-test
obligations on an RFP, read by the clock (an obligation past its deadline is
a breach before the beat task persists it), and its undeposited updates
(``gates.selectors.undeposited``), newest first (``gate_breaches``). An open
dispute of a verdict of the obligation's gate suspends its breach until it is
decided."""

from __future__ import annotations

from django.urls import reverse

from accounts.selectors import clock
from artifacts.lib.evidence.layout import format_time
from artifacts.selectors.breaches import CitedBreach
from gates.models import Dispute, RetestObligation
from gates.selectors.undeposited import undeposited_update_breaches
from procurement.models import Rfp

OB = RetestObligation.Status
HOW: dict[str, str] = {OB.FAILED: "failed its last attempt", OB.EXPIRED: "expired"}


def obligation_breach(obligation: RetestObligation, status: str) -> CitedBreach:
    breached_at = obligation.breached_at or obligation.deadline
    evaluation = obligation.evaluation
    raised_by = (
        f"the evaluation {evaluation.public_id} of "
        f"{format_time(evaluation.evaluated_at)} (verdict {evaluation.verdict}, "
        f"evaluation SHA-256 {evaluation.evaluation_sha256})"
        if evaluation is not None
        else "an update bundle (re-validation)"
    )
    statement = (
        f"Re-test obligation {obligation.public_id} on the gate {obligation.gate} "
        f"of {obligation.rfp.reference}, raised by {raised_by}:\n{obligation.reason}\n"
        f"Deadline {format_time(obligation.deadline)}; attempts used "
        f"{obligation.attempts_used} of {obligation.max_attempts}. Breached "
        f"{format_time(breached_at)}: {HOW[status]}."
    )
    return CitedBreach(
        id=str(obligation.public_id),
        kind="retest_obligation",
        label=(
            f"Re-test of {obligation.gate} {HOW[status]} "
            f"({breached_at:%Y-%m-%d} UTC; {', '.join(obligation.criteria)})"
        ),
        statement=statement,
        url=reverse("gates:retest", args=[obligation.public_id]),
        breached_at=breached_at,
    )


def obligation_breaches(rfp: Rfp, organisation_id: int) -> list[CitedBreach]:
    """The vendor's breached re-test obligations on ``rfp``, newest first."""
    now = clock.now()
    disputed = Dispute.objects.filter(
        rfp=rfp, vendor_organisation_id=organisation_id, status=Dispute.Status.OPEN
    ).values_list("gate", flat=True)
    found = (
        RetestObligation.objects.filter(rfp=rfp, vendor_organisation_id=organisation_id)
        .exclude(gate__in=list(disputed))
        .select_related("rfp", "evaluation")
    )
    breaches = [
        obligation_breach(o, o.status_at(now)) for o in found if o.status_at(now) in HOW
    ]
    return sorted(breaches, key=lambda b: b.breached_at, reverse=True)


def gate_breaches(rfp: Rfp, organisation_id: int) -> list[CitedBreach]:
    """Every breach of the vendor's on ``rfp`` an escrow release may cite:
    breached re-test obligations and undeposited updates, newest first."""
    found = obligation_breaches(rfp, organisation_id)
    found += undeposited_update_breaches(rfp, organisation_id)
    return sorted(found, key=lambda b: b.breached_at, reverse=True)
