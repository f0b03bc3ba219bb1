"""The gate board of one RFP: each vendor the user may see by the gates of its
current plan, with the latest evaluation and the hosts that judged it (ran its
runs: a canary gate's hosts, the rest of the pool's), the decision state, the
open re-test obligations and whether the latest failure is a lab deviation.

A constant number of queries whatever the number of vendors: one per kind of
row for the whole RFP (plans, bidding vendors, latest evaluations, the hosts
that ran their runs, decisions, live obligations), grouped in Python. Reads
never write: an obligation past its deadline counts as expired
(``RetestObligation.status_at``) before the beat task records it."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeAlias, TypedDict

from django.db.models import F, OuterRef, QuerySet, Subquery

from accounts.models import Organisation
from accounts.selectors import clock
from benchmarks.models import Run
from gates.models import Decision, Dispute, Evaluation, GatePlan, RetestObligation
from gates.permissions import AnyUser, GateScope, gate_scope
from procurement.models import Rfp
from procurement.selectors.bids import bid_list_opened
from procurement.selectors.evaluation import evaluation_bids
from procurement.selectors.fidelity import VendorFidelity, fidelity_by_vendor

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations


class _Newest(TypedDict):
    newest_id: int
    plan_version: int
    lab_accepted: bool


# An evaluation read by ``newest_of``, with its plan's version and lab acceptance.
NewestEvaluation: TypeAlias = "WithAnnotations[Evaluation, _Newest]"

DOCUMENTS = ("plan_document", "results_document", "evaluation_document")
LIVE = (RetestObligation.Status.OPEN, RetestObligation.Status.SCHEDULED)
DEVIATION_VERDICTS = ("FAIL", "HALTED")


def is_lab_deviation(evaluation: Evaluation, lab_environment_accepted: bool) -> bool:
    """A failed or halted evaluation on runs that drifted majorly from the
    vendor's manifest, on a plan that does not accept the lab's environment: the
    lab's to answer, not the vendor's."""
    return (
        evaluation.verdict in DEVIATION_VERDICTS
        and evaluation.max_drift == "major"
        and not lab_environment_accepted
    )


@dataclass(frozen=True)
class GateCell:
    gate: str
    stage: str
    evaluation: Evaluation | None = None
    decision: Decision | None = None  # the latest recorded decision
    pending: Decision | None = None  # a promotion waiting for its second sign-off
    obligations: tuple[RetestObligation, ...] = ()  # open or scheduled by the clock
    lab_deviation: bool = False
    dispute: Dispute | None = None  # the vendor contests one of its verdicts
    # The hosts (worker names) that ran the runs the latest evaluation judged.
    hosts: tuple[str, ...] = ()

    @property
    def verdict(self) -> str:
        return self.evaluation.verdict if self.evaluation else ""

    @property
    def open_obligations(self) -> int:
        return len(self.obligations)

    @property
    def revalidation_due(self) -> bool:
        """An update of the accepted system re-opened the gate: a live update
        re-validation obligation is on it."""
        return any(o.is_revalidation for o in self.obligations)

    @property
    def undecided(self) -> bool:
        """The latest evaluation has no decision resting on it yet."""
        if self.evaluation is None:
            return False
        decided = [d for d in (self.decision, self.pending) if d is not None]
        return all(d.evaluation_id != self.evaluation.pk for d in decided)


@dataclass(frozen=True)
class BoardRow:
    vendor: Organisation
    plan: GatePlan | None  # the current frozen plan
    draft: GatePlan | None
    cells: tuple[GateCell, ...] = field(default=())
    # the vendor's fidelity matrix (None: no opened bid)
    fidelity: VendorFidelity | None = None


def _plans(rfp: Rfp, scope: GateScope) -> QuerySet[GatePlan]:
    plans = GatePlan.objects.filter(
        rfp=rfp, status__in=[GatePlan.Status.FROZEN, GatePlan.Status.DRAFT]
    ).select_related("vendor_organisation")
    if scope.full:
        return plans
    return plans.filter(vendor_organisation__in=scope.vendor_ids)


def _bidders(rfp: Rfp, scope: GateScope) -> QuerySet[Organisation]:
    """The vendors of the live bids once opened (none while sealed)."""
    ids = bid_list_opened(rfp=rfp).values("vendor_organisation_id")
    vendors = Organisation.objects.filter(id__in=ids)
    return vendors if scope.full else vendors.filter(id__in=scope.vendor_ids)


def newest_of(found: QuerySet[Evaluation]) -> QuerySet[NewestEvaluation]:
    """The rows of ``found`` that are the newest evaluation of their RFP, vendor
    and gate (any plan version), without their documents, with their plan's
    version and lab acceptance."""
    newest = (
        Evaluation.objects.filter(
            rfp_id=OuterRef("rfp_id"),
            vendor_organisation_id=OuterRef("vendor_organisation_id"),
            gate=OuterRef("gate"),
        )
        .order_by("-evaluated_at", "-id")
        .values("id")[:1]
    )
    return (
        found.annotate(
            newest_id=Subquery(newest),
            plan_version=F("plan__version"),
            lab_accepted=F("plan__lab_environment_accepted"),
        )
        .filter(id=F("newest_id"))
        .defer(*DOCUMENTS)
    )


def latest_evaluations(rfp: Rfp, vendor_ids: Any = None) -> QuerySet[NewestEvaluation]:
    """The newest evaluation of each vendor and gate of the RFP."""
    found = Evaluation.objects.filter(rfp=rfp)
    if vendor_ids is not None:
        found = found.filter(vendor_organisation_id__in=vendor_ids)
    return newest_of(found)


def _by_key(rows: Any, vendor: str = "vendor_organisation_id") -> dict[Any, list[Any]]:
    grouped: dict[Any, list[Any]] = defaultdict(list)
    for row in rows:
        grouped[(getattr(row, vendor), row.gate)].append(row)
    return grouped


def _decisions(rfp: Rfp, vendor_ids: Any) -> dict[Any, list[Decision]]:
    found = (
        Decision.objects.filter(plan__rfp=rfp)
        .exclude(status=Decision.Status.WITHDRAWN)
        .annotate(vendor_id=F("plan__vendor_organisation_id"))
        .select_related("decided_by", "second_by")
        .order_by("-decided_at", "-id")
    )
    if vendor_ids is not None:
        found = found.filter(plan__vendor_organisation_id__in=vendor_ids)
    return _by_key(found, vendor="vendor_id")


def _obligations(
    rfp: Rfp, vendor_ids: Any, now: datetime
) -> dict[Any, list[RetestObligation]]:
    found = RetestObligation.objects.filter(rfp=rfp, status__in=LIVE)
    if vendor_ids is not None:
        found = found.filter(vendor_organisation_id__in=vendor_ids)
    return _by_key(o for o in found if o.status_at(now) in LIVE)


def _open_disputes(rfp: Rfp, vendor_ids: Any) -> dict[Any, list[Dispute]]:
    found = Dispute.objects.filter(rfp=rfp, status=Dispute.Status.OPEN)
    if vendor_ids is not None:
        found = found.filter(vendor_organisation_id__in=vendor_ids)
    return _by_key(found.order_by("opened_at", "id"))


def evaluation_hosts(evaluations: list[Evaluation]) -> dict[int, tuple[str, ...]]:
    """Per evaluation (by id), the hosts that ran the runs it judged: its
    campaign's runs ended by the time it was made, by worker name in name
    order. One query for all of them."""
    if not evaluations:
        return {}
    rows = (
        Run.objects.filter(
            campaign_id__in={e.campaign_id for e in evaluations},
            host__isnull=False,
            finished_at__isnull=False,
        )
        .values_list("campaign_id", "host__worker_name", "finished_at")
        .order_by()
    )
    ran: dict[int, list[tuple[str, datetime]]] = defaultdict(list)
    for campaign_id, name, finished_at in rows:
        if finished_at is not None:  # the query asks for ended runs only
            ran[campaign_id].append((name, finished_at))
    return {
        e.pk: tuple(sorted({n for n, at in ran[e.campaign_id] if at <= e.evaluated_at}))
        for e in evaluations
    }


def _gates(plan: GatePlan | None) -> list[tuple[str, str]]:
    if plan is None:
        return []
    return [(g["name"], g.get("stage", "")) for g in plan.plan.get("gates", [])]


def _cell(
    gate: str,
    stage: str,
    evaluation: Evaluation | None,
    decisions: list[Decision],
    obligations: list[RetestObligation],
    hosts: tuple[str, ...] = (),
    disputes: list[Dispute] | None = None,
) -> GateCell:
    recorded = [d for d in decisions if d.status == Decision.Status.RECORDED]
    pending = [d for d in decisions if d.status == Decision.Status.PENDING]
    deviation = evaluation is not None and is_lab_deviation(
        evaluation, bool(getattr(evaluation, "lab_accepted", False))
    )
    return GateCell(
        gate=gate,
        stage=stage,
        evaluation=evaluation,
        decision=recorded[0] if recorded else None,
        pending=pending[0] if pending else None,
        obligations=tuple(obligations),
        lab_deviation=deviation,
        hosts=hosts,
        dispute=disputes[0] if disputes else None,
    )


def gate_board(*, rfp: Rfp, user: AnyUser) -> list[BoardRow]:
    """One row per vendor the user may see (vendors with a plan, then bidders
    without one yet), by vendor name; empty for a user who sees no gates."""
    scope = gate_scope(user, rfp)
    if not scope.visible:
        return []
    vendor_ids = None if scope.full else scope.vendor_ids
    current: dict[int, GatePlan] = {}
    drafts: dict[int, GatePlan] = {}
    vendors: dict[int, Organisation] = {}
    for plan in _plans(rfp, scope):
        vendors[plan.vendor_organisation_id] = plan.vendor_organisation
        kind = current if plan.status == GatePlan.Status.FROZEN else drafts
        kind[plan.vendor_organisation_id] = plan
    for org in _bidders(rfp, scope):
        vendors.setdefault(org.id, org)
    latest = {
        (e.vendor_organisation_id, e.gate): e
        for e in latest_evaluations(rfp, vendor_ids)
    }
    hosts = evaluation_hosts(list(latest.values()))
    decisions = _decisions(rfp, vendor_ids)
    obligations = _obligations(rfp, vendor_ids, clock.now())
    bids = evaluation_bids(rfp).filter(vendor_organisation_id__in=list(vendors))
    fidelity = fidelity_by_vendor(rfp, bids)  # 5 queries, none while sealed
    disputes = _open_disputes(rfp, vendor_ids)
    rows = []
    for vid, vendor in sorted(vendors.items(), key=lambda v: (v[1].name, v[0])):
        frozen = current.get(vid)
        cells = tuple(
            _cell(
                gate,
                stage,
                latest.get((vid, gate)),
                decisions.get((vid, gate), []),
                obligations.get((vid, gate), []),
                _hosts_of(latest.get((vid, gate)), hosts),
                disputes.get((vid, gate), []),
            )
            for gate, stage in _gates(frozen or drafts.get(vid))
        )
        rows.append(BoardRow(vendor, frozen, drafts.get(vid), cells, fidelity.get(vid)))
    return rows


def _hosts_of(
    evaluation: Evaluation | None, hosts: dict[int, tuple[str, ...]]
) -> tuple[str, ...]:
    return hosts.get(evaluation.pk, ()) if evaluation is not None else ()


def board_gate_names(rows: list[BoardRow]) -> list[str]:
    """The board's columns: every gate named by a row, in plan order."""
    names: list[str] = []
    for row in rows:
        for cell in row.cells:
            if cell.gate not in names:
                names.append(cell.gate)
    return names
