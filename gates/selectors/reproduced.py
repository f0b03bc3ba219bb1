"""What the lab reproduced of each vendor's claims, for the pages where the
buyer decides (comparison, scoring, award, TCO).

Per vendor: the latest evaluation of the first gate (lab validation) of the
vendor's current (frozen) plan on the RFP, with its verdict, and per claim the
criterion that judges it (same metric, stat and scenario): the lab's estimate,
its interval and the criterion's verdict. Evaluations of a superseded plan are
not shown: they judged terms the buyer has since replaced.

The caller passes the bids it may see; nothing is read while the RFP's bids
are sealed (the comparison's second guard). Three queries whatever the number
of vendors: the plans, the evaluations, their criterion rows."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Final

from django.db.models import Q
from django.urls import reverse

from benchmarks.selectors.results import baseline_campaign_for
from gates.lib.engine.statistics import dec, median
from gates.models import CriterionResult, Evaluation, GatePlan
from gates.selectors.results import results_document
from procurement.models import Bid, Rfp
from procurement.selectors.reproduced import (
    NOT_REPRODUCED,  # the label without gates too
)

# The chip class of each verdict (the colour language of static/css/app.css).
CHIP: Final[Mapping[str, str]] = {
    "PASS": "badge-pass",
    "WARN": "badge-warn",
    "FAIL": "badge-fail",
    "HALTED": "badge-fail",
    "INCONCLUSIVE": "badge-inconclusive",
}
# The metrics that measure what the TCO formula's ``delivered_tokens_per_s``
# states, in order of preference (output tokens first: the formula counts them).
TCO_THROUGHPUT_METRICS: Final = (
    "output_token_throughput_tps",
    "token_throughput_tps",
)
_HEAVY: Final = ("plan_document", "results_document", "evaluation_document")


@dataclass(frozen=True)
class ReproducedClaim:
    """One claim beside the lab's figure for it (``result`` None: not judged)."""

    claim: dict[str, Any]
    result: CriterionResult | None
    url: str = ""  # the criterion's page (its runs and values), else the gate's

    @property
    def unit(self) -> str:
        return str(self.claim.get("unit") or "")

    @property
    def verdict(self) -> str:
        return self.result.verdict if self.result is not None else ""

    @property
    def chip(self) -> str:
        return CHIP.get(self.verdict, "badge-inconclusive")

    @property
    def reproduced(self) -> bool:
        return self.result is not None and self.result.estimate is not None


@dataclass(frozen=True)
class LabValidation:
    """The lab-validation gate of one vendor (``evaluation`` None: not yet run)."""

    rfp: Rfp
    vendor_slug: str
    gate: str = ""
    plan: GatePlan | None = None
    evaluation: Evaluation | None = None
    results: list[CriterionResult] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        return self.evaluation.verdict if self.evaluation is not None else ""

    @property
    def passed(self) -> bool:
        return self.verdict == "PASS"

    @property
    def chip(self) -> str:
        return CHIP.get(self.verdict, "badge-inconclusive")

    @property
    def label(self) -> str:
        return self.verdict or NOT_REPRODUCED

    @property
    def url(self) -> str:
        """The gate's page ("" before it is evaluated)."""
        if self.evaluation is None:
            return ""
        return reverse(
            "gates:gate", args=[self.rfp.public_id, self.vendor_slug, self.gate]
        )

    def result_for(self, claim: Mapping[str, Any]) -> CriterionResult | None:
        """The criterion judging this claim: same metric, stat and scenario (a
        criterion over every scenario, ``*``, when none names the claim's)."""
        metric, stat = str(claim.get("metric") or ""), str(claim.get("stat") or "")
        scenario = str(claim.get("scenario") or "")
        same = [r for r in self.results if (r.metric, r.stat) == (metric, stat)]
        exact = [r for r in same if r.scenario == scenario]
        return next(iter(exact or [r for r in same if r.scenario == "*"]), None)

    def claims(self, claims: Iterable[dict[str, Any]]) -> list[ReproducedClaim]:
        found = [(c, self.result_for(c)) for c in claims]
        return [ReproducedClaim(c, r, self.criterion_url(r)) for c, r in found]

    def criterion_url(self, result: CriterionResult | None) -> str:
        """The criterion's page ("" when no criterion judges the claim)."""
        if result is None or self.evaluation is None:
            return ""
        args = [self.rfp.public_id, self.vendor_slug, self.gate, result.criterion]
        return reverse("gates:criterion", args=args)

    def throughput(self) -> CriterionResult | None:
        """The lab's estimate of the throughput the TCO formula uses: the first
        metric of ``TCO_THROUGHPUT_METRICS`` judged, its lowest estimate over the
        scenarios (the throughput the system sustains everywhere tested)."""
        for metric in TCO_THROUGHPUT_METRICS:
            found = [
                r for r in self.results if r.metric == metric and r.estimate is not None
            ]
            if found:
                return min(found, key=lambda r: (r.estimate, r.position))
        return None

    def throughput_decimal(self) -> Decimal | None:
        result = self.throughput()
        if result is None or result.estimate is None:
            return None
        try:
            value = Decimal(str(result.estimate)).quantize(Decimal("0.01"))
        except InvalidOperation:
            return None
        return value if value > 0 else None


def rfp_uses_lab_validation(rfp: Rfp) -> bool:
    """Does the buyer validate claims in the lab on this RFP (a plan frozen for
    any vendor)? Then an award rests on a passed lab validation or a written
    reason; an RFP without gate plans is awarded on the claims as before."""
    frozen = [GatePlan.Status.FROZEN, GatePlan.Status.SUPERSEDED]
    return GatePlan.objects.filter(rfp=rfp, status__in=frozen).exists()


def lab_validations_for(rfp: Rfp, bids: Iterable[Bid]) -> dict[int, LabValidation]:
    """The lab validation of each bid's vendor, by vendor organisation id. Empty
    while the bids are sealed. Needs the bids with ``vendor_organisation``."""
    bids = list(bids)
    slugs = {b.vendor_organisation_id: b.vendor_organisation.slug for b in bids}
    empty = {org: LabValidation(rfp, slug) for org, slug in slugs.items()}
    if rfp.is_sealed or not slugs:
        return empty
    plans = {
        p.vendor_organisation_id: p
        for p in GatePlan.objects.filter(
            rfp=rfp, vendor_organisation_id__in=slugs, status=GatePlan.Status.FROZEN
        )
    }
    gates = {org: (p.gate_names or [""])[0] for org, p in plans.items()}
    latest = _latest_evaluations(plans, gates)
    rows: dict[int, list[CriterionResult]] = {e.pk: [] for e in latest.values()}
    for row in CriterionResult.objects.filter(evaluation_id__in=rows):
        rows[row.evaluation_id].append(row)
    found = {
        org: LabValidation(
            rfp,
            slugs[org],
            gate=gates[org],
            plan=plan,
            evaluation=latest.get(org),
            results=rows.get(latest[org].pk, []) if org in latest else [],
        )
        for org, plan in plans.items()
    }
    return empty | found


def _latest_evaluations(
    plans: Mapping[int, GatePlan], gates: Mapping[int, str]
) -> dict[int, Evaluation]:
    """The newest evaluation of each plan's first gate, by vendor organisation."""
    if not plans:
        return {}
    which = Q()
    for org, plan in plans.items():
        which |= Q(plan_id=plan.pk, gate=gates[org])
    latest: dict[int, Evaluation] = {}
    for evaluation in Evaluation.objects.filter(which).defer(*_HEAVY):
        latest.setdefault(evaluation.vendor_organisation_id, evaluation)
    return latest


def baseline_figures(rfp: Rfp) -> dict[tuple[str, str, str], float]:
    """The medians of the RFP's baseline campaign (``baseline_campaign_for``):
    per scenario, metric and stat, the median of its succeeded runs' values as
    the results document gives them, which is what a criterion held to the
    baseline takes as its reference. Empty when no baseline was measured."""
    campaign = baseline_campaign_for(rfp.pk)
    if campaign is None:
        return {}
    values: dict[tuple[str, str, str], list[Decimal]] = {}
    for run in results_document(campaign=campaign)["runs"]:
        if run["status"] != "succeeded":
            continue
        for m in run["metrics"]:
            key = (run["scenario"], m["name"], m["stat"])
            values.setdefault(key, []).append(dec(m["value"]))
    return {key: float(median(sorted(v))) for key, v in sorted(values.items())}
