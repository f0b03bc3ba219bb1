"""Reads of the evaluation: score sheets, progress, consensus, the comparison matrix
and its exports. Every query count here is independent of the number of bids and
scores (the comparison page is tested with 2 and with 20 vendors).

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

import csv
import io
from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, Q, QuerySet

from accounts.models import Role
from accounts.selectors import user_list_in
from procurement import scoring
from procurement.models import (
    Award,
    Bid,
    Criterion,
    Rfp,
    Score,
    ScoreSheet,
    TcoFormula,
)
from procurement.permissions import can_evaluate, can_manage_rfp
from procurement.tco import CostInputs, FormulaParams, TcoResult, tco_compute

AnyUser = AbstractBaseUser | AnonymousUser

COMPLETENESS_BASIS = (
    "Documents in the bid counted against the RFP's mandatory artifacts; "
    "provisional until bundles are checked artifact by artifact."
)


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
    details: dict[tuple[int, int], list[IndividualScore]] = defaultdict(list)
    for bid, crit, value, who, why in scores:
        details[bid, crit].append(IndividualScore(who, value, why))
    by_pk = {b.pk: b for b in bids}
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


def evaluation_board(rfp: Rfp) -> EvaluationBoard:
    criteria = evaluation_criteria(rfp)
    bids = list(evaluation_bids(rfp))
    rows = consensus_rows(bids, criteria, submitted_scores(rfp))
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


# --- Comparison matrix ----------------------------------------------------------


@dataclass(frozen=True)
class ComparisonRow:
    bid: Bid
    consensus: scoring.BidConsensus | None  # None while scores are hidden
    cells: list[tuple[Criterion, scoring.CellConsensus | None]]
    documents: int
    claims: list[tuple[str, list[dict[str, Any]]]]  # per required metric, in order
    tco: TcoResult | None


@dataclass(frozen=True)
class Comparison:
    rfp: Rfp
    criteria: list[Criterion]
    metrics: list[str]
    mandatory_artifacts: int
    formula: TcoFormula
    rows: list[ComparisonRow]
    visibility: Visibility
    submitted_sheets: int
    evaluators: int
    winner_bid_id: int | None = None
    completeness_basis: str = COMPLETENESS_BASIS

    @property
    def provisional(self) -> bool:
        """Scores shown before every evaluator submitted (and before the award)."""
        awarded = self.rfp.status == Rfp.Status.AWARDED
        return not awarded and self.submitted_sheets < self.evaluators


def _claims_by_metric(
    bid: Bid, metrics: list[str]
) -> list[tuple[str, list[dict[str, Any]]]]:
    claims = [c for c in bid.claimed_metrics or [] if isinstance(c, dict)]
    return [(name, [c for c in claims if c.get("metric") == name]) for name in metrics]


def _cells(
    criteria: list[Criterion], result: scoring.BidConsensus | None
) -> list[tuple[Criterion, scoring.CellConsensus | None]]:
    if result is None:
        return [(c, None) for c in criteria]
    return list(zip(criteria, result.cells, strict=True))


def comparison_bids(rfp: Rfp) -> list[Bid]:
    current = Q(documents__superseded_at__isnull=True)
    return list(
        evaluation_bids(rfp)
        .select_related("cost_inputs")
        .annotate(document_count=Count("documents", filter=current))
    )


def comparison_for(user: AnyUser, rfp: Rfp) -> Comparison:
    """The vendors x criteria matrix as ``user`` may see it (scores only when
    ``consensus_visibility`` allows), ranked when scores are visible."""
    visibility = consensus_visibility(user, rfp)
    criteria, bids = evaluation_criteria(rfp), comparison_bids(rfp)
    metrics = list(rfp.metrics.values_list("name", flat=True))
    scores = submitted_scores(rfp) if visibility.visible else []
    ranked = {r.bid.pk: r.result for r in consensus_rows(bids, criteria, scores)}
    formula = tco_formula_current(rfp)
    params = formula_params(formula)
    shown = {pk: r for pk, r in ranked.items() if visibility.visible}
    rows = [
        ComparisonRow(
            bid=bid,
            consensus=shown.get(bid.pk),
            cells=_cells(criteria, shown.get(bid.pk)),
            documents=bid.document_count,  # type: ignore[attr-defined]
            claims=_claims_by_metric(bid, metrics),
            tco=bid_tco(bid, params),
        )
        for bid in bids
    ]
    if visibility.visible:
        rows.sort(key=lambda row: row.consensus.rank if row.consensus else 0)
    return Comparison(
        rfp=rfp,
        criteria=criteria,
        metrics=metrics,
        mandatory_artifacts=rfp.artifacts.filter(mandatory=True).count(),
        formula=formula,
        rows=rows,
        visibility=visibility,
        submitted_sheets=rfp.score_sheets.filter(submitted_at__isnull=False).count(),
        evaluators=user_list_in([rfp.buyer_organisation_id], Role.EVALUATOR).count(),
        winner_bid_id=Award.objects.filter(rfp=rfp)
        .values_list("bid_id", flat=True)
        .first(),
    )


# --- Exports (CSV and JSON carry the same data) -----------------------------------


def _text(value: Decimal | int | None) -> str:
    return "" if value is None else str(value)


def claim_text(claim: dict[str, Any]) -> str:
    """``p99 180.0 ms (cold-c32)``"""
    parts = [str(claim.get(k, "")) for k in ("stat", "value", "unit")]
    text = " ".join(p for p in parts if p)
    return f"{text} ({claim['scenario']})" if claim.get("scenario") else text


def _csv_safe(cell: str) -> str:
    """Keep spreadsheets from running text as a formula (CSV injection)."""
    if cell[:1] in {"=", "+", "-", "@", "\t", "\r"}:
        try:
            Decimal(cell)
        except ArithmeticError:
            return "'" + cell
    return cell


def comparison_csv_rows(comparison: Comparison) -> list[list[str]]:
    """A header row, then one row per vendor. Score columns only when visible."""
    c = comparison
    scores = c.visibility.visible
    header = ["vendor", "vendor_slug", "bid_commitment", "awarded"]
    if scores:
        header += ["rank", "weighted_total_of_100", "scores_complete"]
        header += [f"{cr.name} (mean of 10, weight {cr.weight})" for cr in c.criteria]
    header += ["documents", "mandatory_artifacts"]
    header += [f"claimed {m}" for m in c.metrics]
    header += ["currency", "tco_cost_per_year", "tco_cost_per_million_tokens"]
    header += ["tco_formula_version"]
    rows = [header]
    for row in c.rows:
        org = row.bid.vendor_organisation
        won = "yes" if row.bid.pk == c.winner_bid_id else "no"
        line = [org.name, org.slug, row.bid.commitment, won]
        if scores and row.consensus:
            r = row.consensus
            line += [str(r.rank), str(r.weighted_total), "yes" if r.complete else "no"]
            line += [_text(cell.mean) for cell in r.cells]
        line += [str(row.documents), str(c.mandatory_artifacts)]
        line += ["; ".join(claim_text(cl) for cl in claims) for _, claims in row.claims]
        tco = row.tco
        line += [tco.currency if tco else "", _text(tco and tco.total_per_year)]
        line += [_text(tco and tco.cost_per_million_tokens), str(c.formula.version)]
        rows.append([_csv_safe(cell) for cell in line])
    return rows


def comparison_csv_text(comparison: Comparison) -> str:
    buffer = io.StringIO()
    csv.writer(buffer).writerows(comparison_csv_rows(comparison))
    return buffer.getvalue()


def _amount(value: Decimal | int | None, unit: str) -> dict[str, Any] | None:
    return None if value is None else {"value": str(value), "unit": unit}


def _json_consensus(c: Comparison, r: scoring.BidConsensus) -> dict[str, Any]:
    return {
        "rank": r.rank,
        "weighted_total": _amount(r.weighted_total, "points of 100"),
        "complete": r.complete,
        "criteria": [
            {
                "criterion": cr.name,
                "weight": cr.weight,
                "mean": _amount(cell.mean, "points of 10"),
                "spread": _amount(cell.spread, "points"),
                "stdev": _amount(cell.stdev, "points"),
                "scores": cell.count,
                "disagreement": cell.disagreement,
            }
            for cr, cell in zip(c.criteria, r.cells, strict=True)
        ],
    }


def _json_tco(tco: TcoResult | None) -> dict[str, Any] | None:
    if tco is None:
        return None
    return {
        "currency": tco.currency,
        "cost_per_year": _amount(tco.total_per_year, f"{tco.currency}/year"),
        "tokens_per_year": _amount(tco.tokens_per_year, "tokens/year"),
        "cost_per_million_tokens": _amount(
            tco.cost_per_million_tokens, f"{tco.currency}/Mtok"
        ),
    }


def comparison_json(comparison: Comparison) -> dict[str, Any]:
    """The comparison as one JSON document; every number carries its unit."""
    c = comparison
    f = c.formula
    return {
        "rfp": {"reference": c.rfp.reference, "status": c.rfp.status},
        "scores_visible": c.visibility.visible,
        "scores_note": c.visibility.reason,
        "submitted_sheets": c.submitted_sheets,
        "evaluators": c.evaluators,
        "provisional": c.provisional,
        "disagreement_spread": scoring.DISAGREEMENT_SPREAD,
        "completeness_basis": c.completeness_basis,
        "tco_formula": {
            "version": f.version,
            "recorded": f.pk is not None,
            "pue": str(f.pue),
            "utilisation": str(f.utilisation),
            "hours_per_year": f.hours_per_year,
        },
        "vendors": [
            {
                "vendor": {
                    "slug": row.bid.vendor_organisation.slug,
                    "name": row.bid.vendor_organisation.name,
                },
                "bid": str(row.bid.public_id),
                "commitment": row.bid.commitment,
                "awarded": row.bid.pk == c.winner_bid_id,
                "scores": _json_consensus(c, row.consensus) if row.consensus else None,
                "completeness": {
                    "documents": row.documents,
                    "mandatory_artifacts": c.mandatory_artifacts,
                },
                "claimed_metrics": dict(row.claims),
                "tco": _json_tco(row.tco),
            }
            for row in c.rows
        ],
    }
