"""Reads of evaluations: one gate of one vendor (its latest evaluation with the
criteria and stop-loss outcomes, its history, its decisions and obligations),
one criterion over re-tests, one evaluation's documents, and the lab
deviations a lab operator answers for.

Every selector takes the user and returns nothing the user may not see (a
vendor: its own rows only). The gate page's queries do not grow with the number
of vendors on the RFP nor with the length of the history (it is paginated)."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import F, QuerySet

from accounts.lib.paging import PAGE_SIZE
from accounts.models import Organisation
from gates.lib.engine.validate import checks_named
from gates.models import (
    CriterionResult,
    Decision,
    Evaluation,
    GatePlan,
    RetestObligation,
)
from gates.permissions import (
    AnyUser,
    GateScope,
    gate_rows_visible_q,
    gate_scope,
    lab_buyer_ids,
)
from gates.selectors.board import (
    DEVIATION_VERDICTS,
    DOCUMENTS,
    is_lab_deviation,
    newest_of,
)
from procurement.models import Rfp

HISTORY_PAGE_SIZE = PAGE_SIZE  # every page lists as many rows


def evaluation_list_visible_to(user: AnyUser) -> QuerySet[Evaluation]:
    return Evaluation.objects.filter(gate_rows_visible_q(user))


def evaluation_get_visible(user: AnyUser, public_id: uuid.UUID) -> Evaluation | None:
    """One evaluation with its documents, if the user may see it."""
    return (
        evaluation_list_visible_to(user)
        .filter(public_id=public_id)
        .select_related("plan", "rfp", "vendor_organisation", "campaign", "deposit")
        .first()
    )


def vendor_get_visible(
    user: AnyUser, rfp: Rfp, slug: str
) -> tuple[Organisation | None, GateScope]:
    """The vendor organisation named ``slug`` if the user may see its gates on
    ``rfp``, and the user's scope there."""
    scope = gate_scope(user, rfp)
    vendor = Organisation.objects.filter(
        slug=slug, kind=Organisation.Kind.VENDOR
    ).first()
    if vendor is None or not scope.sees_vendor(vendor.id):
        return None, scope
    return vendor, scope


@dataclass(frozen=True)
class StopLossOutcome:
    id: str
    triggered: bool
    runs: list[str]
    reason: str
    condition: dict[str, Any]

    @property
    def checks(self) -> str:
        """A ``check_flagged`` condition's check ids, as people read them."""
        return ", ".join(checks_named(self.condition))


@dataclass(frozen=True)
class CriterionView:
    row: CriterionResult
    unit: str


@dataclass
class GatePage:
    rfp: Rfp
    vendor: Organisation
    gate: str
    plan: GatePlan | None  # the current frozen plan
    spec: dict[str, Any] | None  # the gate in the current plan
    latest: Evaluation | None
    criteria: list[CriterionView] = field(default_factory=list)
    stop_loss: list[StopLossOutcome] = field(default_factory=list)
    history: Page | None = None
    decisions: list[Decision] = field(default_factory=list)
    obligations: list[RetestObligation] = field(default_factory=list)
    lab_deviation: bool = False

    @property
    def failing(self) -> list[CriterionView]:
        """The criteria that did not pass (fail, warn, inconclusive): the page
        leads with them."""
        return [c for c in self.criteria if c.row.verdict != "PASS"]

    @property
    def passing(self) -> list[CriterionView]:
        return [c for c in self.criteria if c.row.verdict == "PASS"]

    @property
    def stop_loss_triggered(self) -> list[StopLossOutcome]:
        return [s for s in self.stop_loss if s.triggered]

    @property
    def promotion(self) -> Decision | None:
        """The recorded promotion of this gate, whose acceptance certificate the
        page links to (newest first, as ``decisions``)."""
        return next(
            (
                d
                for d in self.decisions
                if d.kind == Decision.Kind.PROMOTE
                and d.status == Decision.Status.RECORDED
            ),
            None,
        )

    @property
    def pending(self) -> Decision | None:
        return next(
            (d for d in self.decisions if d.status == Decision.Status.PENDING), None
        )

    @property
    def decision(self) -> Decision | None:
        return next(
            (d for d in self.decisions if d.status == Decision.Status.RECORDED), None
        )


def _units(results: dict[str, Any]) -> dict[tuple[str, str], str]:
    """The unit of each metric and stat in a results document."""
    units: dict[tuple[str, str], str] = {}
    for run in results.get("runs", []):
        for m in run.get("metrics", []):
            units.setdefault((m["name"], m["stat"]), m.get("unit") or "")
    return units


def _gate_spec(plan_doc: dict[str, Any], gate: str) -> dict[str, Any] | None:
    return next((g for g in plan_doc.get("gates", []) if g.get("name") == gate), None)


def _stop_loss(latest: Evaluation) -> list[StopLossOutcome]:
    doc = json.loads(latest.evaluation_document)
    spec = _gate_spec(json.loads(latest.plan_document), latest.gate) or {}
    conditions = {s["id"]: s for s in spec.get("stop_loss", [])}
    return [
        StopLossOutcome(
            s["id"],
            bool(s["triggered"]),
            list(s.get("runs", [])),
            s.get("reason", ""),
            conditions.get(s["id"], {}),
        )
        for s in doc.get("stop_loss", [])
    ]


def _current_plan(rfp: Rfp, vendor: Organisation) -> GatePlan | None:
    return GatePlan.objects.filter(
        rfp=rfp, vendor_organisation=vendor, status=GatePlan.Status.FROZEN
    ).first()


def gate_page(
    *, rfp: Rfp, vendor: Organisation, gate: str, user: AnyUser, page: Any = 1
) -> GatePage | None:
    """The gate page of one vendor (None when the user may not see it)."""
    if not gate_scope(user, rfp).sees_vendor(vendor.id):
        return None
    plan = _current_plan(rfp, vendor)
    own = Evaluation.objects.filter(rfp=rfp, vendor_organisation=vendor, gate=gate)
    latest = (
        own.select_related("plan", "campaign", "deposit", "evaluated_by")
        .annotate(plan_version=F("plan__version"))
        .order_by("-evaluated_at", "-id")
        .first()
    )
    result = GatePage(
        rfp=rfp,
        vendor=vendor,
        gate=gate,
        plan=plan,
        spec=_gate_spec(plan.plan, gate) if plan else None,
        latest=latest,
    )
    if latest is not None:
        units = _units(json.loads(latest.results_document))
        result.criteria = [
            CriterionView(row, units.get((row.metric, row.stat), ""))
            for row in latest.criterion_results.all()
        ]
        result.stop_loss = _stop_loss(latest)
        result.lab_deviation = is_lab_deviation(
            latest, latest.plan.lab_environment_accepted
        )
    history = (
        own.defer(*DOCUMENTS)
        .annotate(plan_version=F("plan__version"))
        .select_related("campaign")
        .order_by("-evaluated_at", "-id")
    )
    result.history = Paginator(history, HISTORY_PAGE_SIZE).get_page(page)
    result.decisions = list(
        Decision.objects.filter(plan__rfp=rfp, plan__vendor_organisation=vendor)
        .filter(gate=gate)
        .select_related("decided_by", "second_by", "withdrawn_by", "evaluation")
        .defer(*(f"evaluation__{d}" for d in DOCUMENTS))
    )
    result.obligations = list(
        RetestObligation.objects.filter(rfp=rfp, vendor_organisation=vendor, gate=gate)
    )
    return result


@dataclass(frozen=True)
class CriterionPoint:
    """One evaluation of a criterion in its history, with the change from the
    evaluation before it (``trend``: better, worse, same or empty)."""

    row: CriterionResult
    trend: str
    regressed: bool  # the verdict got worse than the one before


VERDICT_RANK = {"PASS": 3, "WARN": 2, "INCONCLUSIVE": 1, "FAIL": 0}


def _trend(row: CriterionResult, before: CriterionResult | None) -> str:
    if before is None or row.estimate is None or before.estimate is None:
        return ""
    if row.estimate == before.estimate:
        return "same"
    lower_better = row.direction == "lower"
    return "better" if (row.estimate < before.estimate) == lower_better else "worse"


@dataclass(frozen=True)
class Repetition:
    run_id: str
    scenario: str
    repetition: int
    value: float | None
    unit: str
    source: dict[str, str]
    counted: bool  # among the values the criterion judged


@dataclass
class CriterionPage:
    rfp: Rfp
    vendor: Organisation
    gate: str
    criterion: str
    history: list[CriterionPoint]
    latest: CriterionResult | None
    repetitions: list[Repetition]
    unit: str
    spec: dict[str, Any]


def scenario_repetitions(
    results: dict[str, Any],
    *,
    scenario: str,
    metric: str,
    stat: str,
    counted: set[str],
) -> list[Repetition]:
    """Every run of ``scenario`` in a results document with ``metric``/``stat``'s
    value, unit and source (None when the run did not report it); ``counted``:
    the runs the criterion was judged on. The criterion page and the report
    draw their chart from these."""
    reps = []
    for run in results.get("runs", []):
        if run["scenario"] != scenario or run.get("role", "vendor") != "vendor":
            continue  # the buyer's baseline runs are not the vendor's repetitions
        found = next(
            (m for m in run["metrics"] if m["name"] == metric and m["stat"] == stat),
            None,
        )
        reps.append(
            Repetition(
                run_id=run["id"],
                scenario=run["scenario"],
                repetition=run["repetition"],
                value=found["value"] if found else None,
                unit=(found or {}).get("unit", ""),
                source=(found or {}).get("source", {}),
                counted=run["id"] in counted,
            )
        )
    return reps


def _repetitions(
    latest: Evaluation, row: CriterionResult
) -> tuple[list[Repetition], str, dict[str, Any]]:
    """Every run of the criterion's scenario in the latest evaluation's results,
    with the metric's value, unit and source (file, key)."""
    results = json.loads(latest.results_document)
    doc = json.loads(latest.evaluation_document)
    judged: dict[str, Any] = next(
        (c for c in doc["criteria"] if c["id"] == row.criterion), {}
    )
    counted = set(judged.get("runs", []))
    spec = _gate_spec(json.loads(latest.plan_document), latest.gate) or {}
    crit: dict[str, Any] = next(
        (c for c in spec.get("criteria", []) if c["id"] == row.criterion), {}
    )
    reps = scenario_repetitions(
        results, scenario=row.scenario, metric=row.metric, stat=row.stat,
        counted=counted,
    )  # fmt: skip
    unit = next((r.unit for r in reps if r.unit), "")
    return reps, unit, crit


def criterion_page(
    *, rfp: Rfp, vendor: Organisation, gate: str, criterion: str, user: AnyUser
) -> CriterionPage | None:
    """Every evaluation of the criterion over re-tests, newest first, and the
    repetitions of the latest one; None when the user may not see the vendor."""
    if not gate_scope(user, rfp).sees_vendor(vendor.id):
        return None
    rows = list(
        CriterionResult.objects.filter(
            evaluation__rfp=rfp,
            evaluation__vendor_organisation=vendor,
            evaluation__gate=gate,
            criterion=criterion,
        )
        .select_related("evaluation", "evaluation__plan", "evaluation__campaign")
        .select_related("evaluation__campaign__bundle")
        .defer(
            *(f"evaluation__{d}" for d in DOCUMENTS),
            "evaluation__plan__document",
            "evaluation__campaign__bundle__manifest",
            "evaluation__campaign__bundle__problems",
            "evaluation__campaign__bundle__completeness",
        )
        .order_by("-evaluation__evaluated_at", "-evaluation__id")
    )
    history = []
    for i, row in enumerate(rows):
        before = rows[i + 1] if i + 1 < len(rows) else None
        regressed = before is not None and (
            VERDICT_RANK.get(row.verdict, 0) < VERDICT_RANK.get(before.verdict, 0)
        )
        history.append(CriterionPoint(row, _trend(row, before), regressed))
    latest = rows[0] if rows else None
    reps: list[Repetition] = []
    unit = ""
    spec: dict[str, Any] = {}
    if latest is not None:
        documents = Evaluation.objects.only(*DOCUMENTS, "gate").get(
            pk=latest.evaluation_id
        )
        reps, unit, spec = _repetitions(documents, latest)
    return CriterionPage(
        rfp, vendor, gate, criterion, history, latest, reps, unit, spec
    )


def lab_deviation_list_for(user: AnyUser) -> list[Evaluation]:
    """The latest evaluations, on the RFPs of the buyers whose lab the user
    operates, that failed or halted on runs drifting majorly from the vendor's
    manifest while the plan does not accept the lab's environment (the lab's to
    answer: fix the host, or the buyer accepts its environment), newest first.
    One query."""
    buyers = lab_buyer_ids(user)
    if not buyers:
        return []
    failing = evaluation_list_visible_to(user).filter(
        rfp__buyer_organisation_id__in=buyers,
        verdict__in=DEVIATION_VERDICTS,
        max_drift="major",
        plan__lab_environment_accepted=False,
    )
    latest = newest_of(failing).select_related("rfp", "vendor_organisation", "campaign")
    rows = latest.order_by("-evaluated_at", "-id")
    return [e for e in rows if is_lab_deviation(e, e.lab_accepted)]
