"""Reads of the evaluation: score sheets, progress, consensus and TCO (the
comparison matrix is ``procurement.selectors.comparison``, its exports
``procurement.selectors.comparison_exports``). Every query count here is
independent of the number of bids and scores.

Who sees scores (``consensus_visibility``):

- nobody, while the bids are sealed;
- an evaluator sees the other evaluators' scores and the consensus only after
  submitting their own sheet (also when they are a buyer as well);
- buyers and admins see the consensus of the submitted sheets as soon as one is
  submitted, marked provisional until every evaluator of the organisation submitted;
- once the RFP is awarded, the whole buyer side sees the final consensus;
- draft scores are never shown to anyone but their author;
- vendors never see scores (the views answer 404); after the award each vendor is
  told its own rank and total in the award notice, and nothing about the others.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Count, Q, QuerySet

from accounts.models import Role
from accounts.selectors.users import user_list_in
from procurement.lib import scoring
from procurement.lib.tco import CostInputs, FormulaParams, TcoResult, tco_compute
from procurement.models import (
    Bid,
    Criterion,
    Rfp,
    Score,
    ScoreSheet,
    TcoFormula,
)
from procurement.permissions import can_evaluate, can_manage_rfp
from procurement.selectors.reproduced import (
    CriterionFigure,
    LabValidation,
    lab_validations_for,
)

AnyUser = User | AnonymousUser


def evaluation_bids(rfp: Rfp) -> QuerySet[Bid]:
    """The bids that are evaluated: submitted ones (withdrawn bids and bids never
    re-confirmed after an addendum are not valid offers)."""
    return (
        rfp.bids.filter(status=Bid.Status.SUBMITTED)
        .select_related("vendor_organisation")
        .order_by("vendor_organisation__name", "id")
    )


def evaluation_criteria(rfp: Rfp) -> list[Criterion]:
    return list(rfp.criteria.all())


def score_sheet_get(rfp: Rfp, user: AnyUser) -> ScoreSheet | None:
    if not user.is_authenticated:
        return None
    return ScoreSheet.objects.filter(rfp=rfp, evaluator=user).first()


def score_sheet_scores(sheet: ScoreSheet | None) -> dict[tuple[int, int], Score]:
    """The sheet's scores by (bid pk, criterion pk)."""
    if sheet is None:
        return {}
    return {(s.bid_id, s.criterion_id): s for s in sheet.scores.all()}


def score_sheet_missing(
    bids: list[Bid], criteria: list[Criterion], scores: dict[tuple[int, int], Any]
) -> list[tuple[Bid, Criterion]]:
    """Every (bid, criterion) the sheet has not scored yet."""
    return [(b, c) for b in bids for c in criteria if (b.pk, c.pk) not in scores]


@dataclass(frozen=True)
class Visibility:
    visible: bool
    reason: str = ""


def consensus_visibility(user: AnyUser, rfp: Rfp) -> Visibility:
    """May the user see submitted scores and the consensus? (rules: module doc)"""
    if rfp.is_sealed:
        return Visibility(False, "Bids are sealed; evaluation starts when opened.")
    if rfp.status == Rfp.Status.AWARDED:
        return Visibility(True)
    if can_evaluate(user, rfp):
        sheet = score_sheet_get(rfp, user)
        if sheet is not None and sheet.submitted_at is not None:
            return Visibility(True)
        return Visibility(
            False,
            "Other evaluators' scores and the consensus appear once you have "
            "submitted your own score sheet.",
        )
    if can_manage_rfp(user, rfp):
        return Visibility(True)
    return Visibility(False, "Only the buyer side of this RFP sees scores.")


@dataclass(frozen=True)
class EvaluatorProgress:
    username: str
    scored: int
    required: int
    submitted_at: Any = None
    started: bool = False

    @property
    def status(self) -> str:
        if self.submitted_at is not None:
            return "submitted"
        return "draft" if self.started else "not started"


def evaluation_progress(rfp: Rfp, *, required: int) -> list[EvaluatorProgress]:
    """Each evaluator of the buyer organisation (and anyone else who holds a sheet)
    with how many of the ``required`` scores they have given. Never the scores."""
    sheets = {
        s.evaluator.get_username(): s
        for s in ScoreSheet.objects.filter(rfp=rfp)
        .select_related("evaluator")
        .annotate(
            scored=Count("scores", filter=Q(scores__bid__status=Bid.Status.SUBMITTED))
        )
    }
    names = set(
        user_list_in([rfp.buyer_organisation_id], Role.EVALUATOR).values_list(
            "username", flat=True
        )
    )
    return [
        EvaluatorProgress(
            username=name,
            scored=getattr(sheets.get(name), "scored", 0),
            required=required,
            submitted_at=getattr(sheets.get(name), "submitted_at", None),
            started=name in sheets,
        )
        for name in sorted(names | set(sheets))
    ]


@dataclass(frozen=True)
class IndividualScore:
    evaluator: str
    value: int
    justification: str


@dataclass(frozen=True)
class ConsensusCell:
    criterion: Criterion
    result: scoring.CellConsensus
    scores: list[IndividualScore]  # the submitted scores behind the cell


@dataclass(frozen=True)
class ConsensusRow:
    bid: Bid
    result: scoring.BidConsensus
    cells: list[ConsensusCell]


def _weighted(criteria: list[Criterion]) -> list[scoring.WeightedCriterion]:
    return [scoring.WeightedCriterion(c.pk, c.name, c.weight) for c in criteria]


def submitted_scores(rfp: Rfp) -> list[tuple[int, int, int, str, str]]:
    """(bid pk, criterion pk, value, evaluator, justification) of submitted sheets,
    on evaluated bids."""
    return list(
        Score.objects.filter(
            sheet__rfp=rfp,
            sheet__submitted_at__isnull=False,
            bid__status=Bid.Status.SUBMITTED,
        )
        .order_by("sheet__evaluator__username", "id")
        .values_list(
            "bid_id",
            "criterion_id",
            "value",
            "sheet__evaluator__username",
            "justification",
        )
    )


def consensus_rows(
    bids: list[Bid], criteria: list[Criterion], scores: list[tuple]
) -> list[ConsensusRow]:
    """Ranked consensus rows (best first) from ``submitted_scores`` output."""
    results = scoring.consensus(
        [b.pk for b in bids],
        _weighted(criteria),
        [scoring.ScoreValue(bid, crit, value) for bid, crit, value, _, _ in scores],
    )
    details: dict[tuple[Hashable, int], list[IndividualScore]] = defaultdict(list)
    for bid, crit, value, who, why in scores:
        details[bid, crit].append(IndividualScore(who, value, why))
    by_pk: dict[Hashable, Bid] = {b.pk: b for b in bids}
    return [
        ConsensusRow(
            bid=by_pk[r.bid],
            result=r,
            cells=[
                ConsensusCell(c, cell, details.get((r.bid, c.pk), []))
                for c, cell in zip(criteria, r.cells, strict=True)
            ],
        )
        for r in results
    ]


@dataclass(frozen=True)
class EvaluationBoard:
    """Everything the evaluation page and the consensus API show."""

    criteria: list[Criterion]
    bids: list[Bid]
    rows: list[ConsensusRow]
    progress: list[EvaluatorProgress]
    awarded: bool

    @property
    def required(self) -> int:
        return len(self.bids) * len(self.criteria)

    @property
    def submitted(self) -> int:
        return sum(p.submitted_at is not None for p in self.progress)

    @property
    def provisional(self) -> bool:
        """Until every evaluator submitted (or the RFP was awarded)."""
        return not self.awarded and self.submitted < len(self.progress)


def evaluation_board(rfp: Rfp, *, consensus: bool = True) -> EvaluationBoard:
    """The board; without ``consensus`` (a caller that may not show it), no
    consensus rows: the submitted scores are not read."""
    criteria = evaluation_criteria(rfp)
    bids = list(evaluation_bids(rfp))
    rows = consensus_rows(bids, criteria, submitted_scores(rfp)) if consensus else []
    progress = evaluation_progress(rfp, required=len(bids) * len(criteria))
    awarded = rfp.status == Rfp.Status.AWARDED
    return EvaluationBoard(criteria, bids, rows, progress, awarded)


# --- TCO ------------------------------------------------------------------------


def tco_formula_list(rfp: Rfp) -> QuerySet[TcoFormula]:
    return rfp.tco_formulas.select_related("created_by").order_by("-version")


def tco_formula_current(rfp: Rfp) -> TcoFormula:
    """The latest version; before any is recorded, version 1 with the defaults
    (unsaved: the TCO services record it when a decision first depends on it)."""
    latest = tco_formula_list(rfp).first()
    return latest if latest is not None else TcoFormula(rfp=rfp, version=1)


def formula_params(formula: TcoFormula) -> FormulaParams:
    return FormulaParams(
        version=formula.version,
        pue=formula.pue,
        utilisation=formula.utilisation,
        hours_per_year=formula.hours_per_year,
    )


def bid_tco(bid: Bid, params: FormulaParams) -> TcoResult | None:
    """The bid's TCO, or None when the vendor gave no cost inputs. Needs the bid
    fetched with ``select_related("cost_inputs")``."""
    inputs = getattr(bid, "cost_inputs", None)
    if inputs is None:
        return None
    return tco_compute(CostInputs.from_object(inputs), params)


@dataclass(frozen=True)
class BidTco:
    """A bid's TCO on the lab's reproduced throughput (the estimate of the
    metric the formula's ``delivered_tokens_per_s`` stands for) beside the TCO
    on the vendor's stated figure. ``shown`` is the reproduced one, else the
    claimed one (``basis`` says which)."""

    claimed: TcoResult | None  # None: no cost inputs
    reproduced: TcoResult | None  # None: no cost inputs or nothing reproduced
    claimed_throughput: Decimal | None  # tok/s, the vendor's cost input
    reproduced_throughput: Decimal | None  # tok/s, the lab's estimate
    throughput_result: CriterionFigure | None = None

    @property
    def shown(self) -> TcoResult | None:
        return self.reproduced or self.claimed

    @property
    def basis(self) -> str:
        """``reproduced``, ``claimed`` (nothing reproduced yet) or ``""``."""
        if self.reproduced is not None:
            return "reproduced"
        return "claimed" if self.claimed is not None else ""


def bid_tco_reproduced(
    bid: Bid, params: FormulaParams, lab: LabValidation | None
) -> BidTco:
    """``bid_tco`` twice: on the vendor's throughput and on the lab's estimate
    of it. Needs the bid fetched with ``select_related("cost_inputs")``."""
    inputs = getattr(bid, "cost_inputs", None)
    claimed = bid_tco(bid, params)
    result = lab.throughput() if lab is not None else None
    lab_tps = lab.throughput_decimal() if lab is not None else None
    reproduced = None
    if inputs is not None and lab_tps is not None:
        costs = replace(CostInputs.from_object(inputs), delivered_tokens_per_s=lab_tps)
        reproduced = tco_compute(costs, params)
    return BidTco(
        claimed=claimed,
        reproduced=reproduced,
        claimed_throughput=inputs.delivered_tokens_per_s if inputs else None,
        reproduced_throughput=lab_tps,
        throughput_result=result,
    )


def bids_tco_reproduced(
    rfp: Rfp, bids: list[Bid], params: FormulaParams
) -> list[tuple[Bid, BidTco, LabValidation]]:
    """Each bid's ``BidTco`` with the lab validation it rests on (the TCO page)."""
    labs = lab_validations_for(rfp, bids)
    found = []
    for bid in bids:
        lab = labs[bid.vendor_organisation_id]
        found.append((bid, bid_tco_reproduced(bid, params, lab), lab))
    return found
