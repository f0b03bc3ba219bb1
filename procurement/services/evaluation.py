"""Scoring by the evaluators: one sheet per evaluator and RFP, saved as a draft as
often as needed, then submitted once. A submitted sheet is locked for good (no
reopening: the others may already have read the consensus it fed)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import transaction
from django.urls import reverse

from accounts.exceptions import Problem
from accounts.models import Role
from accounts.selectors import clock
from accounts.selectors.users import user_list_in
from accounts.services.audit import audit_record
from accounts.services.notifications import notify_users
from procurement.exceptions import (
    EvaluationStateError,
    ProcurementError,
    full_clean_or_problems,
)
from procurement.lib.scoring import SCORE_MAX, SCORE_MIN
from procurement.models import Bid, Rfp, Score, ScoreSheet
from procurement.selectors.evaluation import (
    evaluation_bids,
    evaluation_criteria,
    score_sheet_missing,
    score_sheet_scores,
)


def rfp_require_evaluation_open(rfp: Rfp) -> None:
    """Scores, TCO versions and the award change only while the RFP is opened."""
    if rfp.status == Rfp.Status.OPENED:
        return
    if rfp.status == Rfp.Status.AWARDED:
        raise EvaluationStateError(
            f"{rfp.reference} has been awarded; its evaluation is read-only."
        )
    before_opening = {Rfp.Status.DRAFT, Rfp.Status.PUBLISHED, Rfp.Status.CLOSED}
    if rfp.status in before_opening:
        raise EvaluationStateError(
            f"The bids of {rfp.reference} are still sealed; "
            "evaluation starts once they are opened.",
            code="rfp_sealed",
        )
    raise EvaluationStateError(
        f"{rfp.reference} is {rfp.get_status_display().lower()}; "
        "there is nothing to evaluate."
    )


@dataclass(frozen=True)
class ScoreEntry:
    bid: uuid.UUID  # Bid.public_id
    criterion: int  # Criterion.pk
    value: int
    justification: str


def _entry_problem(
    entry: ScoreEntry, bids: dict[uuid.UUID, Bid], criteria: set[int]
) -> str:
    bid = bids.get(entry.bid)
    if bid is None:
        return "No such bid on this RFP."
    if bid.status != Bid.Status.SUBMITTED:
        return f"The bid of {bid.vendor_organisation} is {bid.status}; not evaluated."
    if entry.criterion not in criteria:
        return "No such criterion on this RFP."
    if not SCORE_MIN <= entry.value <= SCORE_MAX:
        return f"A score is a whole number from {SCORE_MIN} to {SCORE_MAX}."
    if not entry.justification.strip():
        return "Every score needs a written justification."
    return ""


def _scores_from(
    rfp: Rfp, sheet: ScoreSheet, entries: Sequence[ScoreEntry]
) -> list[Score]:
    bids = {b.public_id: b for b in rfp.bids.select_related("vendor_organisation")}
    criteria = {c.pk for c in evaluation_criteria(rfp)}
    problems, seen = [], set()
    for index, entry in enumerate(entries):
        message = _entry_problem(entry, bids, criteria)
        if not message and (entry.bid, entry.criterion) in seen:
            message = "This bid and criterion are scored twice."
        seen.add((entry.bid, entry.criterion))
        if message:
            problems.append(Problem("invalid_score", message, path=f"scores[{index}]"))
    if problems:
        raise ProcurementError(
            f"{len(problems)} score(s) have problems; nothing was saved.",
            code="invalid_scores",
            problems=problems,
        )
    return [
        Score(
            sheet=sheet,
            bid=bids[e.bid],
            criterion_id=e.criterion,
            value=e.value,
            justification=e.justification.strip(),
        )
        for e in entries
    ]


def _locked_sheet(rfp: Rfp, actor: User) -> ScoreSheet | None:
    sheet = ScoreSheet.objects.select_for_update().filter(rfp=rfp, evaluator=actor)
    found = sheet.first()
    if found is not None and found.submitted_at is not None:
        raise EvaluationStateError(
            f"You submitted your scores on {found.submitted_at:%Y-%m-%d %H:%M} UTC; "
            "a submitted sheet cannot be changed.",
            code="sheet_submitted",
        )
    return found


@transaction.atomic
def score_sheet_save(
    *, rfp: Rfp, entries: Sequence[ScoreEntry], actor: User
) -> ScoreSheet:
    """Replace the actor's draft scores with ``entries`` (a partial set is fine)."""
    rfp = Rfp.objects.select_for_update().get(pk=rfp.pk)
    rfp_require_evaluation_open(rfp)
    sheet = _locked_sheet(rfp, actor) or ScoreSheet(rfp=rfp, evaluator=actor)
    scores = _scores_from(rfp, sheet, entries)
    for score in scores:  # FKs and constraints are checked above, without queries
        full_clean_or_problems(
            score, exclude=["sheet", "bid", "criterion"], validate_constraints=False
        )
    sheet.save()
    sheet.scores.all().delete()
    Score.objects.bulk_create(scores)
    audit_record(
        actor=actor,
        action="score_sheet.saved",
        target=sheet,
        organisation=rfp.buyer_organisation,
        data={"rfp": rfp.reference, "scored": len(scores)},
    )
    return sheet


def _missing_problems(rfp: Rfp, sheet: ScoreSheet | None) -> list[Problem]:
    bids, criteria = list(evaluation_bids(rfp)), evaluation_criteria(rfp)
    if not bids or not criteria:
        raise ProcurementError("There is nothing to score on this RFP.", code="empty")
    missing = score_sheet_missing(bids, criteria, score_sheet_scores(sheet))
    return [
        Problem(
            "missing_score",
            f"{bid.vendor_organisation.name} / {criterion.name}: not scored yet.",
            path=f"{bid.public_id}/{criterion.pk}",
        )
        for bid, criterion in missing
    ]


@transaction.atomic
def score_sheet_submit(*, rfp: Rfp, actor: User) -> ScoreSheet:
    """Lock the actor's sheet once every bid is scored on every criterion."""
    rfp = Rfp.objects.select_for_update().get(pk=rfp.pk)
    rfp_require_evaluation_open(rfp)
    sheet = _locked_sheet(rfp, actor)
    problems = _missing_problems(rfp, sheet)
    if problems or sheet is None:
        raise ProcurementError(
            f"{len(problems)} score(s) missing; score every bid on every criterion "
            "before submitting.",
            code="sheet_incomplete",
            problems=problems,
        )
    sheet.submitted_at = clock.now()
    sheet.save(update_fields=["submitted_at", "updated_at"])
    audit_record(
        actor=actor,
        action="score_sheet.submitted",
        target=sheet,
        organisation=rfp.buyer_organisation,
        data={"rfp": rfp.reference, "scored": sheet.scores.count()},
    )
    _notify_buyers(rfp, actor)
    return sheet


def _notify_buyers(rfp: Rfp, evaluator: User) -> None:
    org = [rfp.buyer_organisation_id]
    notify_users(
        users=user_list_in(org, Role.BUYER, Role.ADMIN),
        template="evaluation_submitted",
        context={
            "rfp": rfp,
            "evaluator": evaluator.get_username(),
            "submitted": rfp.score_sheets.filter(submitted_at__isnull=False).count(),
            "evaluators": user_list_in(org, Role.EVALUATOR).count(),
        },
        url=reverse("procurement:rfp_evaluation", args=[rfp.public_id]),
    )
