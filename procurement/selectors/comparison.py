"""The comparison matrix: vendors x criteria with consensus scores (when the user
may see them), completeness from the bundle each bid names (else the vendor's
newest accepted one), claimed key metrics (flagged where they differ from the
bundle) beside what the lab reproduced of them, the lab-validation verdict,
and TCO on the reproduced throughput. Its query count does not depend on the
number of bids, scores, bundles and evaluations (tested with 2 and 20 vendors)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from accounts.models import Role
from accounts.selectors.users import user_list_in
from procurement.lib import scoring
from procurement.lib.tco import TcoResult
from procurement.models import Award, Bid, Criterion, RequiredArtifact, Rfp, TcoFormula
from procurement.selectors.evaluation import (
    AnyUser,
    BidTco,
    Visibility,
    bid_tco_reproduced,
    consensus_rows,
    consensus_visibility,
    evaluation_bids,
    evaluation_criteria,
    formula_params,
    submitted_scores,
    tco_formula_current,
)
from procurement.selectors.evidence import bid_evidence_for
from procurement.selectors.evidence_sources import BidEvidence, checklist_of
from procurement.selectors.fidelity import VendorFidelity, fidelity_by_vendor
from procurement.selectors.reproduced import (
    BaselineFigures,
    LabValidation,
    ReproducedClaim,
    baseline_figures_for,
    current_of,
    lab_validations_for,
    rfp_uses_lab_validation,
)

# Criteria whose consensus the comparison shows beside the fidelity matrix.
FIDELITY_CRITERIA = ("fidelity", "transparency")
NO_APPROACH = "Approach not declared"

COMPLETENESS_BASIS = (
    "The signed bundle each bid names (for a bid naming none: the vendor's newest "
    "accepted bundle), checked against the RFP's "
    "required artifacts (an artifact is present when the bundle lists a file of its "
    "kind), with the environment fields its manifests name, its claims whose "
    "scenario the harness defines and the required metrics it claims. A vendor "
    "without an accepted bundle has every mandatory artifact missing."
)


# --- Comparison matrix ----------------------------------------------------------


@dataclass(frozen=True)
class ComparisonRow:
    bid: Bid
    consensus: scoring.BidConsensus | None  # None while scores are hidden
    cells: list[tuple[Criterion, scoring.CellConsensus | None]]
    evidence: BidEvidence
    # per required metric, in order; each claim with "flag" (differs from the bundle)
    claims: list[tuple[str, list[dict[str, Any]]]]
    tco: TcoResult | None  # on the reproduced throughput, else on the claim
    # the lab-validation gate of the vendor, and each claim beside the lab's
    # figure for it (same order as ``claims``)
    lab: LabValidation
    reproduced: list[tuple[str, Sequence[ReproducedClaim]]]
    tco_detail: BidTco
    # the buyer's baseline medians (its current infrastructure), "vs current"
    baseline: BaselineFigures = field(default_factory=dict)
    # the fidelity matrix of the vendor (None while sealed)
    fidelity: VendorFidelity | None = None

    @property
    def approach(self) -> str:
        return self.fidelity.approach if self.fidelity else ""

    @property
    def fidelity_scores(self) -> list[tuple[Criterion, scoring.CellConsensus | None]]:
        """The evaluators' scores of the criteria about fidelity and
        transparency ("Workload fidelity", "Transparency"), when visible."""
        return [
            (c, cell)
            for c, cell in self.cells
            if any(word in c.name.lower() for word in FIDELITY_CRITERIA)
        ]

    @property
    def judged(self) -> list[ReproducedClaim]:
        """The claims a criterion of the lab-validation gate judged, in order."""
        return [rc for _, claims in self.reproduced for rc in claims if rc.result]

    @property
    def headline(self) -> ReproducedClaim | None:
        """The claim the summary shows: the first the lab judged (the RFP's
        metrics in order), else the first claim at all."""
        every = [rc for _, claims in self.reproduced for rc in claims]
        return next(iter(self.judged), every[0] if every else None)

    @property
    def headline_current(self) -> float | None:
        """The baseline's median for the headline claim's metric (None: none)."""
        headline = self.headline
        return None if headline is None else current_of(self.baseline, headline.claim)

    @property
    def judged_failing(self) -> int:
        """How many judged claims the lab did not reproduce (verdict not PASS)."""
        return sum(rc.verdict != "PASS" for rc in self.judged)


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
    # the buyer validates claims in the lab here (a gate plan exists)
    lab_in_use: bool = False
    completeness_basis: str = COMPLETENESS_BASIS

    @property
    def approach_groups(self) -> list[tuple[str, list[ComparisonRow]]]:
        """The rows grouped by the approach their bundles declare, in the
        RFP's order of first appearance (undeclared last)."""
        groups: dict[str, list[ComparisonRow]] = {}
        for row in self.rows:
            groups.setdefault(row.approach or NO_APPROACH, []).append(row)
        undeclared = groups.pop(NO_APPROACH, None)
        ordered = list(groups.items())
        return ordered + ([(NO_APPROACH, undeclared)] if undeclared else [])

    @property
    def provisional(self) -> bool:
        """Scores shown before every evaluator submitted (and before the award)."""
        awarded = self.rfp.status == Rfp.Status.AWARDED
        return not awarded and self.submitted_sheets < self.evaluators


def _claims_by_metric(
    bid: Bid, metrics: list[str]
) -> list[tuple[str, list[dict[str, Any]]]]:
    claims = bid.claims_with_flags  # each with "flag": how it differs from the bundle
    return [(name, [c for c in claims if c.get("metric") == name]) for name in metrics]


def _cells(
    criteria: list[Criterion], result: scoring.BidConsensus | None
) -> list[tuple[Criterion, scoring.CellConsensus | None]]:
    if result is None:
        return [(c, None) for c in criteria]
    return list(zip(criteria, result.cells, strict=True))


def comparison_bids(rfp: Rfp) -> list[Bid]:
    return list(evaluation_bids(rfp).select_related("cost_inputs"))


def _evidence(
    rfp: Rfp, bids: list[Bid], artifacts: list[RequiredArtifact]
) -> dict[int, BidEvidence]:
    """Bundle evidence per bid; no bundle is asked for while the bids are sealed
    (the views never show a sealed comparison: this is the second guard)."""
    vendors = [] if rfp.is_sealed else [b.vendor_organisation_id for b in bids]
    named = {
        b.vendor_organisation_id: str(b.bundle_public_id)
        for b in bids
        if b.bundle_public_id is not None and not rfp.is_sealed
    }
    found = bid_evidence_for(rfp, vendors, artifacts=artifacts, named=named)
    none = checklist_of(artifacts, None)
    return {b.pk: found.get(b.vendor_organisation_id, none) for b in bids}


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
    artifacts = list(rfp.artifacts.all())
    evidence = _evidence(rfp, bids, artifacts)
    labs = lab_validations_for(rfp, bids)
    baseline = {} if rfp.is_sealed else baseline_figures_for(rfp)
    fidelity = fidelity_by_vendor(rfp, bids)
    rows = []
    for bid in bids:
        lab, claims = labs[bid.vendor_organisation_id], _claims_by_metric(bid, metrics)
        tco = bid_tco_reproduced(bid, params, lab)
        rows.append(
            ComparisonRow(
                bid=bid,
                consensus=shown.get(bid.pk),
                cells=_cells(criteria, shown.get(bid.pk)),
                evidence=evidence[bid.pk],
                claims=claims,
                tco=tco.shown,
                lab=lab,
                reproduced=[(m, lab.claims(c)) for m, c in claims],
                tco_detail=tco,
                baseline=baseline,
                fidelity=fidelity.get(bid.vendor_organisation_id),
            )
        )
    if visibility.visible:
        rows.sort(key=lambda row: row.consensus.rank if row.consensus else 0)
    return Comparison(
        rfp=rfp,
        criteria=criteria,
        metrics=metrics,
        mandatory_artifacts=sum(a.mandatory for a in artifacts),
        formula=formula,
        rows=rows,
        visibility=visibility,
        submitted_sheets=rfp.score_sheets.filter(submitted_at__isnull=False).count(),
        evaluators=user_list_in([rfp.buyer_organisation_id], Role.EVALUATOR).count(),
        lab_in_use=not rfp.is_sealed and rfp_uses_lab_validation(rfp),
        winner_bid_id=Award.objects.filter(rfp=rfp)
        .values_list("bid_id", flat=True)
        .first(),
    )
