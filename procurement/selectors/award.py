"""Reads of the two-person award: the pending request, the score sheets'
completeness, and what a confirmer is about to sign (ranks, totals and evidence
completeness of every evaluated bid, from the consensus and the comparison)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet

from procurement.models import Award, AwardRequest, Rfp
from procurement.selectors.comparison import Comparison, comparison_for
from procurement.selectors.evaluation import AnyUser, evaluation_progress


@dataclass(frozen=True)
class SheetCompleteness:
    """Who of the buyer's evaluators (and anyone else holding a sheet) submitted."""

    submitted: int
    expected: int
    missing: list[str]  # usernames of those who have not submitted

    @property
    def complete(self) -> bool:
        return self.submitted >= self.expected


def score_sheet_completeness(rfp: Rfp) -> SheetCompleteness:
    progress = evaluation_progress(rfp, required=0)
    missing = [p.username for p in progress if p.submitted_at is None]
    return SheetCompleteness(len(progress) - len(missing), len(progress), missing)


def award_request_list(rfp: Rfp) -> QuerySet[AwardRequest]:
    return rfp.award_requests.select_related(
        "bid__vendor_organisation", "requested_by", "confirmed_by", "cancelled_by"
    )


def award_request_pending(rfp: Rfp) -> AwardRequest | None:
    return award_request_list(rfp).filter(status=AwardRequest.Status.PENDING).first()


def award_get(rfp: Rfp) -> Award | None:
    return (
        Award.objects.filter(rfp=rfp)
        .select_related(
            "bid__vendor_organisation",
            "decided_by",
            "request__requested_by",
        )
        .first()
    )


@dataclass(frozen=True)
class AwardSummary:
    """What the award would record: the comparison as ``user`` may see it (ranks
    and totals only once the consensus is visible to them) and the sheets."""

    comparison: Comparison
    sheets: SheetCompleteness

    @property
    def ranked(self) -> bool:
        return self.comparison.visibility.visible

    @property
    def labs_not_passed(self) -> list[str]:
        """The vendors whose lab validation has not passed (an award to one of
        them needs a written reason)."""
        if not self.comparison.lab_in_use:
            return []
        rows = self.comparison.rows
        return [r.bid.vendor_organisation.name for r in rows if not r.lab.passed]

    @property
    def fidelity_contradicted(self) -> list[str]:
        """The vendors whose fidelity matrix shows a contradicted mandatory
        requirement (an award to one of them needs a written reason)."""
        return [
            r.bid.vendor_organisation.name
            for r in self.comparison.rows
            if r.fidelity and r.fidelity.matrix.contradicted_mandatory
        ]


def award_summary(user: AnyUser, rfp: Rfp) -> AwardSummary:
    return AwardSummary(comparison_for(user, rfp), score_sheet_completeness(rfp))
