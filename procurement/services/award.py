"""The award: the buyer picks the winning bid with a written rationale; the RFP moves
to awarded, its contract terms freeze, and the standstill period starts. Every
bidding vendor is told: the winner that it won, the others that the RFP was
awarded, when the standstill ends and their own rank and total (never another
vendor's scores, nor the winner's name)."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.urls import reverse

from accounts.audit import audit_record
from accounts.models import Role
from accounts.notifications import notify_users
from accounts.selectors import user_list_in
from procurement import clock
from procurement.exceptions import ProcurementError
from procurement.models import Award, Bid, Rfp
from procurement.scoring import BidConsensus
from procurement.selectors.evaluation import (
    consensus_rows,
    evaluation_bids,
    evaluation_criteria,
    submitted_scores,
)
from procurement.services.evaluation import (
    EvaluationStateError,
    full_clean_or_problems,
    rfp_require_evaluation_open,
)
from procurement.services.rfps import rfp_transition
from procurement.services.tco import tco_formula_ensure

AWARD_RATIONALE_MIN = 30


def _check_award(rfp: Rfp, bid: Bid, rationale: str) -> None:
    rfp_require_evaluation_open(rfp)
    if bid.rfp_id != rfp.pk:
        raise ProcurementError(f"That bid is not a bid on {rfp.reference}.")
    if bid.status != Bid.Status.SUBMITTED:
        raise ProcurementError(
            f"The bid of {bid.vendor_organisation.name} is {bid.get_status_display()}"
            "; only a valid submitted bid can win."
        )
    if len(rationale.strip()) < AWARD_RATIONALE_MIN:
        raise ProcurementError(
            f"Explain the decision in at least {AWARD_RATIONALE_MIN} characters.",
            code="rationale_too_short",
        )
    if not rfp.score_sheets.filter(submitted_at__isnull=False).exists():
        raise EvaluationStateError(
            "No evaluator has submitted scores yet; award after the evaluation.",
            code="not_evaluated",
        )


def _ranking(rfp: Rfp) -> dict[int, BidConsensus]:
    bids = list(evaluation_bids(rfp))
    rows = consensus_rows(bids, evaluation_criteria(rfp), submitted_scores(rfp))
    return {row.bid.pk: row.result for row in rows}


@transaction.atomic
def award_create(
    *, rfp: Rfp, bid: Bid, rationale: str, actor: AbstractBaseUser
) -> Award:
    rfp = Rfp.objects.select_for_update().get(pk=rfp.pk)
    _check_award(rfp, bid, rationale)
    formula = tco_formula_ensure(rfp=rfp, actor=actor)
    now = clock.now()
    award = Award(
        rfp=rfp,
        bid=bid,
        rationale=rationale.strip(),
        decided_by=actor,
        decided_at=now,
        standstill_ends_at=now + timedelta(days=rfp.standstill_days),
    )
    full_clean_or_problems(award)
    award.save()
    rfp = rfp_transition(rfp=rfp, to=Rfp.Status.AWARDED, actor=actor, note="award")
    rfp.terms_frozen_at = now
    rfp.save(update_fields=["terms_frozen_at", "updated_at"])
    ranking = _ranking(rfp)
    audit_record(
        actor=actor,
        action="award.created",
        target=award,
        organisation=rfp.buyer_organisation,
        data={
            "rfp": rfp.reference,
            "vendor": bid.vendor_organisation.slug,
            "rank": ranking[bid.pk].rank,
            "weighted_total": ranking[bid.pk].weighted_total,
            "tco_formula_version": formula.version,
            "standstill_ends_at": award.standstill_ends_at,
        },
    )
    _notify_vendors(award, ranking)
    return award


def _notify_vendors(award: Award, ranking: dict[int, BidConsensus]) -> None:
    rfp = award.rfp
    url = reverse("procurement:rfp_detail", args=[rfp.public_id])
    others = rfp.bids.exclude(pk=award.bid_id).exclude(status=Bid.Status.WITHDRAWN)
    for bid in [award.bid, *others]:
        won = bid.pk == award.bid_id
        notify_users(
            users=user_list_in([bid.vendor_organisation_id], Role.VENDOR, Role.ADMIN),
            template="award_won" if won else "award_notice",
            context={
                "rfp": rfp,
                "standstill_ends_at": award.standstill_ends_at,
                "own": ranking.get(bid.pk),  # this vendor's own rank and total only
                "ranked": len(ranking),
            },
            url=url,
        )
