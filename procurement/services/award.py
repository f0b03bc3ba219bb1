"""The award takes two people of the buyer's team, as opening the bids does.

One buyer or admin *requests* it: the winning bid and a written rationale. While
not every evaluator has submitted their score sheet the request is refused,
unless the requester overrides with a written reason, which stays on the award
(page, API, notices). Likewise a bid whose vendor has not passed lab
validation (the first gate of its plan: the lab did not reproduce its claims,
or has not judged them yet) wins only with a written reason, kept and shown the
same way. Another buyer-side member, evaluators included, *confirms*
it: the RFP moves to awarded, its contract terms freeze, and the standstill period
starts. Until then any buyer-side member may cancel the pending request (the
requester withdraws it, the others decline it); a new one may follow.

Who may do what is checked at the interface; these services enforce what holds
whoever calls them: the RFP is opened, the confirmer is not the requester (also
a database constraint on ``AwardRequest``), an evaluator confirms only after
submitting their own sheet (blind scoring), and the request moves only as
``AWARD_REQUEST_TRANSITIONS`` allows.

Every bidding vendor is told at the confirmation: the winner that it won, the
others that the RFP was awarded, when the standstill ends and their own rank and
total (never another vendor's scores, nor the winner's name)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.urls import reverse

from accounts.exceptions import InvalidTransition, Problem
from accounts.models import Role
from accounts.selectors import clock
from accounts.selectors.users import user_list_in
from accounts.services.audit import audit_record
from accounts.services.notifications import notify_users
from accounts.services.transitions import transition, transition_check
from procurement.exceptions import ProcurementError
from procurement.lib.scoring import BidConsensus
from procurement.models import AWARD_REQUEST_TRANSITIONS, Award, AwardRequest, Bid, Rfp
from procurement.permissions import can_evaluate
from procurement.selectors.award import SheetCompleteness, score_sheet_completeness
from procurement.selectors.evaluation import (
    consensus_rows,
    evaluation_bids,
    evaluation_criteria,
    score_sheet_get,
    submitted_scores,
)
from procurement.selectors.fidelity import fidelity_by_vendor
from procurement.selectors.reproduced import (
    LabValidation,
    lab_validations_for,
    rfp_uses_lab_validation,
)
from procurement.services.evaluation import (
    EvaluationStateError,
    full_clean_or_problems,
    rfp_require_evaluation_open,
)
from procurement.services.rfp_lifecycle import rfp_transition
from procurement.services.tco import tco_formula_ensure

AWARD_RATIONALE_MIN = 30
OVERRIDE_REASON_MIN = 20
R = AwardRequest.Status


class AwardRequestRefused(InvalidTransition):
    """The award request is not in a state that allows the move: HTTP 409."""

    def __init__(self, rfp: Rfp, current: AwardRequest | None, requested: str) -> None:
        state = current.status if current is not None else "none"
        super().__init__(entity="award request", current=state, requested=requested)
        self.message = (
            f"No award of {rfp.reference} is waiting for confirmation."
            if current is None or current.status != R.PENDING
            else f"A pending award request cannot become {requested}."
        )
        self.code = "no_pending_award"


def _locked(rfp: Rfp) -> tuple[Rfp, AwardRequest | None]:
    rfp = Rfp.objects.select_for_update().get(pk=rfp.pk)
    latest = (
        AwardRequest.objects.select_for_update()
        .filter(rfp=rfp)
        .order_by("-requested_at", "-id")
        .first()
    )
    return rfp, latest


def _movable(rfp: Rfp, request: AwardRequest | None, to: str) -> AwardRequest:
    """The latest request, if ``AWARD_REQUEST_TRANSITIONS`` lets it move to ``to``
    (checked before the verb's own checks; ``award_request_transition`` moves it)."""
    if request is None:
        raise AwardRequestRefused(rfp, request, to)
    transition_check(
        request,
        to,
        table=AWARD_REQUEST_TRANSITIONS,
        entity="award request",
        refused=lambda: AwardRequestRefused(rfp, request, to),
    )
    return request


def award_request_transition(
    *,
    award_request: AwardRequest,
    to: str,
    actor: User,
    action: str | None,
    data: Mapping[str, Any] | None = None,
    fields: Mapping[str, Any] | None = None,
) -> AwardRequest:
    """The one place an award request's status changes (through
    ``transition``): sets ``fields`` with it, validates, saves, and writes the
    action's audit row in the buyer's trail. Every move is a verb's (no bare
    move): ``action=None`` when the verb's one row is the RFP's transition (a
    confirmation's ``award.created``)."""
    rfp = award_request.rfp
    return transition(
        award_request,
        to,
        actor=actor,
        table=AWARD_REQUEST_TRANSITIONS,
        entity="award request",
        action=action,
        fields=fields,
        validate=True,
        target=rfp,
        organisation=rfp.buyer_organisation,
        data={"rfp": rfp.reference, **(data or {})},
        refused=lambda: AwardRequestRefused(rfp, award_request, to),
    )


def _check_bid(rfp: Rfp, bid: Bid) -> None:
    if bid.rfp_id != rfp.pk:
        raise ProcurementError(f"That bid is not a bid on {rfp.reference}.")
    if bid.status != Bid.Status.SUBMITTED:
        raise ProcurementError(
            f"The bid of {bid.vendor_organisation.name} is {bid.get_status_display()}"
            "; only a valid submitted bid can win."
        )


def _check_sheets(sheets: SheetCompleteness, override_reason: str) -> None:
    if sheets.submitted == 0:
        raise EvaluationStateError(
            "No evaluator has submitted scores yet; award after the evaluation.",
            code="not_evaluated",
        )
    if sheets.complete or len(override_reason.strip()) >= OVERRIDE_REASON_MIN:
        return
    raise EvaluationStateError(
        f"{sheets.expected - sheets.submitted} of {sheets.expected} evaluators have "
        f"not submitted their score sheets ({', '.join(sheets.missing)}). Wait for "
        "them, or give a written reason of at least "
        f"{OVERRIDE_REASON_MIN} characters to award without them.",
        code="sheets_incomplete",
    )


def lab_validation_of(rfp: Rfp, bid: Bid) -> LabValidation | None:
    """The bid's lab validation; None when the RFP uses none (no gate plan)."""
    if not rfp_uses_lab_validation(rfp):
        return None
    return lab_validations_for(rfp, [bid])[bid.vendor_organisation_id]


def _lab_passed(lab: LabValidation | None) -> bool:
    return lab is None or lab.passed


def _check_gates(
    bid: Bid,
    lab: LabValidation | None,
    gates_override_reason: str,
    *,
    confirming: bool = False,
) -> None:
    if lab is None or lab.passed:
        return
    if len(gates_override_reason.strip()) >= OVERRIDE_REASON_MIN:
        return
    name = bid.vendor_organisation.name
    state = (
        f"its latest {lab.gate} verdict is {lab.verdict}"
        if lab.verdict
        else "the lab has not evaluated it yet"
    )
    then = (
        "Decline this request; a new one may give a written reason of at least "
        f"{OVERRIDE_REASON_MIN} characters to award without it."
        if confirming
        else "Award to a vendor whose claims the lab reproduced, or give a written "
        f"reason of at least {OVERRIDE_REASON_MIN} characters to award without it."
    )
    message = f"{name} has not passed lab validation ({state}). {then}"
    raise ProcurementError(
        message,
        code="lab_validation_not_passed",
        problems=[Problem("required", message, path="gates_override_reason")],
    )


def fidelity_contradicted(rfp: Rfp, bid: Bid) -> list[str]:
    """The ids of the mandatory requirements the bid's fidelity matrix shows
    contradicted (its bundle's declaration or the lab's capture)."""
    own = fidelity_by_vendor(rfp, [bid]).get(bid.vendor_organisation_id)
    return [row.id for row in own.matrix.contradicted_mandatory] if own else []


def _check_fidelity(
    bid: Bid, contradicted: list[str], reason: str, *, confirming: bool = False
) -> None:
    if not contradicted or len(reason.strip()) >= OVERRIDE_REASON_MIN:
        return
    then = (
        "Decline this request; a new one may give a written reason of at least "
        f"{OVERRIDE_REASON_MIN} characters."
        if confirming
        else f"Give a written reason of at least {OVERRIDE_REASON_MIN} characters "
        "to award it anyway."
    )
    message = (
        f"The fidelity matrix of {bid.vendor_organisation.name} shows mandatory "
        f"requirements contradicted ({', '.join(contradicted)}). {then}"
    )
    raise ProcurementError(
        message,
        code="fidelity_contradicted",
        problems=[Problem("required", message, path="fidelity_override_reason")],
    )


def _lab_verdict(lab: LabValidation | None) -> str | None:
    """For the audit row: the verdict, "not evaluated", or None (no gates)."""
    if lab is None:
        return None
    return lab.verdict or "not evaluated"


def _check_request(
    rfp: Rfp, bid: Bid, rationale: str, override_reason: str
) -> SheetCompleteness:
    rfp_require_evaluation_open(rfp)
    _check_bid(rfp, bid)
    if len(rationale.strip()) < AWARD_RATIONALE_MIN:
        raise ProcurementError(
            f"Explain the decision in at least {AWARD_RATIONALE_MIN} characters.",
            code="rationale_too_short",
        )
    sheets = score_sheet_completeness(rfp)
    _check_sheets(sheets, override_reason)
    return sheets


def _ranking(rfp: Rfp) -> dict[int, BidConsensus]:
    bids = list(evaluation_bids(rfp))
    rows = consensus_rows(bids, evaluation_criteria(rfp), submitted_scores(rfp))
    return {row.bid.pk: row.result for row in rows}


def _award_url(rfp: Rfp) -> str:
    return reverse("procurement:rfp_award", args=[rfp.public_id])


def _notify_team(rfp: Rfp, template: str, exclude: object, **context: object) -> None:
    """The buyer's whole team but ``exclude`` (bids are opened: names may show)."""
    notify_users(
        users=user_list_in([rfp.buyer_organisation_id]).exclude(pk=exclude),
        template=template,
        context={"rfp": rfp, **context},
        url=_award_url(rfp),
    )


@transaction.atomic
def award_request(
    *,
    rfp: Rfp,
    bid: Bid,
    rationale: str,
    override_reason: str = "",
    gates_override_reason: str = "",
    fidelity_override_reason: str = "",
    actor: User,
) -> AwardRequest:
    rfp, latest = _locked(rfp)
    if latest is not None and latest.status == R.PENDING:
        raise ProcurementError(
            f"{latest.requested_by} already requested the award; another member "
            "confirms it, or cancels it before a new request.",
            code="award_already_requested",
        )
    sheets = _check_request(rfp, bid, rationale, override_reason)
    lab = lab_validation_of(rfp, bid)
    _check_gates(bid, lab, gates_override_reason)
    contradicted = fidelity_contradicted(rfp, bid)
    _check_fidelity(bid, contradicted, fidelity_override_reason)
    request = AwardRequest(
        rfp=rfp,
        bid=bid,
        rationale=rationale.strip(),
        override_reason="" if sheets.complete else override_reason.strip(),
        gates_override_reason="" if _lab_passed(lab) else gates_override_reason.strip(),
        fidelity_override_reason=fidelity_override_reason.strip()
        if contradicted
        else "",
        sheets_submitted=sheets.submitted,
        sheets_expected=sheets.expected,
        requested_by=actor,
        requested_at=clock.now(),
    )
    full_clean_or_problems(request)
    request.save()
    rank = _ranking(rfp).get(bid.pk)
    audit_record(
        actor=actor,
        action="award.requested",
        target=rfp,
        organisation=rfp.buyer_organisation,
        data={
            "rfp": rfp.reference,
            "vendor": bid.vendor_organisation.slug,
            "rank": rank.rank if rank else None,
            "weighted_total": rank.weighted_total if rank else None,
            "sheets_submitted": sheets.submitted,
            "sheets_expected": sheets.expected,
            "override_reason": request.override_reason,
            "lab_validation": _lab_verdict(lab),
            "gates_override_reason": request.gates_override_reason,
            "fidelity_contradicted": contradicted,
            "fidelity_override_reason": request.fidelity_override_reason,
        },
    )
    _notify_team(rfp, "award_requested", actor.pk, request=request)
    return request


def _check_confirmer(rfp: Rfp, request: AwardRequest, actor: User) -> None:
    if request.requested_by_id == actor.pk:
        raise ProcurementError(
            "You requested this award: another member of the buyer's team must "
            "confirm it.",
            code="award_same_person",
        )
    sheet = score_sheet_get(rfp, actor)
    if can_evaluate(actor, rfp) and (sheet is None or sheet.submitted_at is None):
        raise EvaluationStateError(  # blind scoring: they cannot see the ranking yet
            "Submit your own score sheet before you confirm the award.",
            code="confirmer_sheet_open",
        )
    _check_bid(rfp, request.bid)
    _check_sheets(score_sheet_completeness(rfp), request.override_reason)
    lab = lab_validation_of(rfp, request.bid)
    _check_gates(request.bid, lab, request.gates_override_reason, confirming=True)
    _check_fidelity(
        request.bid,
        fidelity_contradicted(rfp, request.bid),
        request.fidelity_override_reason,
        confirming=True,
    )


@transaction.atomic
def award_confirm(*, rfp: Rfp, actor: User) -> Award:
    """The second person: record the award and move the RFP to awarded, together."""
    rfp, latest = _locked(rfp)
    request = _movable(rfp, latest, R.CONFIRMED)
    rfp_require_evaluation_open(rfp)
    _check_confirmer(rfp, request, actor)
    now = clock.now()
    request = award_request_transition(
        award_request=request,
        to=R.CONFIRMED,
        actor=actor,
        action=None,
        fields={"confirmed_by": actor, "confirmed_at": now},
    )
    award = _award_record(rfp, request, actor, now)
    _notify_team(rfp, "award_confirmed", actor.pk, award=award, request=request)
    return award


def _award_record(rfp: Rfp, request: AwardRequest, actor: User, now: datetime) -> Award:
    """The award of the request confirmed at ``now``."""
    formula = tco_formula_ensure(rfp=rfp, actor=actor)
    award = Award(
        rfp=rfp,
        bid=request.bid,
        request=request,
        rationale=request.rationale,
        decided_by=actor,
        decided_at=now,
        standstill_ends_at=now + timedelta(days=rfp.standstill_days),
    )
    full_clean_or_problems(award)
    award.save()
    ranking = _ranking(rfp)
    rfp = rfp_transition(
        rfp=rfp,
        to=Rfp.Status.AWARDED,
        actor=actor,
        action="award.created",
        note="award",
        fields={"terms_frozen_at": now},
        data={
            "award": str(award.public_id),
            "vendor": request.bid.vendor_organisation.slug,
            "rank": ranking[request.bid_id].rank,
            "weighted_total": ranking[request.bid_id].weighted_total,
            "tco_formula_version": formula.version,
            "standstill_ends_at": award.standstill_ends_at,
            "requested_by": request.requested_by.get_username(),
            "confirmed_by": actor.get_username(),
            "sheets_submitted": request.sheets_submitted,
            "sheets_expected": request.sheets_expected,
            "override_reason": request.override_reason,
            "lab_validation": _lab_verdict(lab_validation_of(rfp, request.bid)),
            "gates_override_reason": request.gates_override_reason,
            "fidelity_override_reason": request.fidelity_override_reason,
        },
    )
    _notify_vendors(award, request, ranking)
    return award


@transaction.atomic
def award_cancel(*, rfp: Rfp, actor: User, reason: str = "") -> AwardRequest:
    """The requester withdraws a pending request, or another member declines it."""
    rfp, latest = _locked(rfp)
    request = award_request_transition(
        award_request=_movable(rfp, latest, R.CANCELLED),
        to=R.CANCELLED,
        actor=actor,
        action="award.request_cancelled",
        fields={
            "cancelled_by": actor,
            "cancelled_at": clock.now(),
            "cancel_reason": reason.strip(),
        },
        data={
            "requested_by": latest.requested_by.get_username() if latest else "",
            "reason": reason.strip(),
        },
    )
    _notify_team(rfp, "award_cancelled", actor.pk, request=request)
    return request


def _notify_vendors(
    award: Award, request: AwardRequest, ranking: dict[int, BidConsensus]
) -> None:
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
                "override_reason": request.override_reason,
                "gates_override_reason": request.gates_override_reason,
            },
            url=url,
        )
