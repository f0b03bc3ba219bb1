"""Reads of verdict disputes: the ones a user may see (the RFP's buyer side and
the lab and audit organisations it engages: every vendor's; a vendor: its own;
anyone else: none), the open dispute of a vendor's gate, and whether the judged
vendor may still contest an evaluation (the RFP's ``dispute_window_days`` from
the evaluation, by the clock)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import QuerySet

from accounts.selectors import clock
from gates.models import Dispute, Evaluation
from gates.permissions import AnyUser, gate_rows_visible_q, gate_scope

DS = Dispute.Status


def dispute_list_visible_to(user: AnyUser) -> QuerySet[Dispute]:
    return Dispute.objects.filter(gate_rows_visible_q(user)).select_related(
        "rfp",
        "vendor_organisation",
        "plan",
        "evaluation",
        "bundle",
        "opened_by",
        "decided_by",
        "retest",
    )


def dispute_open_on_gate(
    rfp_id: int, vendor_organisation_id: int, gate: str
) -> Dispute | None:
    """The open dispute of an evaluation of the vendor's gate on the RFP."""
    return (
        Dispute.objects.filter(
            rfp_id=rfp_id,
            vendor_organisation_id=vendor_organisation_id,
            gate=gate,
            status=DS.OPEN,
        )
        .select_related("evaluation")
        .first()
    )


def dispute_list_for_evaluation(evaluation: Evaluation) -> list[Dispute]:
    """Every dispute of the evaluation, oldest first (the reports list them)."""
    found = Dispute.objects.filter(evaluation=evaluation).select_related(
        "opened_by", "decided_by", "retest", "bundle"
    )
    return list(found.order_by("opened_at", "id"))


def dispute_list_for_gate(
    rfp_id: int, vendor_organisation_id: int, gate: str
) -> list[Dispute]:
    """Every dispute of the vendor's gate on the RFP, oldest first."""
    found = Dispute.objects.filter(
        rfp_id=rfp_id, vendor_organisation_id=vendor_organisation_id, gate=gate
    ).select_related("evaluation", "opened_by", "decided_by", "retest", "bundle")
    return list(found.order_by("opened_at", "id"))


def dispute_window_ends(evaluation: Evaluation) -> datetime:
    return evaluation.evaluated_at + timedelta(days=evaluation.rfp.dispute_window_days)


def dispute_contestable(user: AnyUser, evaluation: Evaluation) -> bool:
    """The page's "Contest this verdict": the judged vendor's member, within the
    window, on a verdict other than PASS, with no dispute of it open."""
    scope = gate_scope(user, evaluation.rfp)
    return (
        evaluation.vendor_organisation_id in scope.vendor_ids
        and evaluation.verdict != "PASS"
        and clock.now() <= dispute_window_ends(evaluation)
        and not Dispute.objects.filter(evaluation=evaluation, status=DS.OPEN).exists()
    )


@dataclass(frozen=True)
class DisputeLine:
    """A dispute as a signed report or certificate prints it."""

    public_id: str
    status: str
    verdict: str  # the verdict contested
    evaluated_at: datetime
    opened_by: str
    opened_at: datetime
    reason: str
    bundle_sha256: str  # the revised bundle to re-run ("" : the judged one)
    decided_by: str
    decided_at: datetime | None
    decision_reason: str
    retest: str  # the buyer-funded re-test obligation ("" : none)
    log_index: int | None
    on_this_evaluation: bool


def dispute_lines(evaluation: Evaluation) -> list[DisputeLine]:
    """Every dispute of the evaluation's gate (the vendor's, on its RFP), oldest
    first, with its outcome."""
    found = dispute_list_for_gate(
        evaluation.rfp_id, evaluation.vendor_organisation_id, evaluation.gate
    )
    return [
        DisputeLine(
            public_id=str(d.public_id),
            status=d.get_status_display(),
            verdict=d.evaluation.verdict,
            evaluated_at=d.evaluation.evaluated_at,
            opened_by=d.opened_by.get_username(),
            opened_at=d.opened_at,
            reason=d.reason,
            bundle_sha256=d.bundle.sha256 if d.bundle else "",
            decided_by=d.decided_by.get_username() if d.decided_by else "",
            decided_at=d.decided_at,
            decision_reason=d.decision_reason,
            retest=str(d.retest.public_id) if d.retest else "",
            log_index=d.log_index,
            on_this_evaluation=d.evaluation_id == evaluation.pk,
        )
        for d in found
    ]
