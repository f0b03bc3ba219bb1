"""Reads of verdict disputes: the ones a user may see (the RFP's buyer side and
the lab and audit organisations it engages: every vendor's; a vendor: its own;
anyone else: none), the open dispute of a vendor's gate, and whether the judged
vendor may still contest an evaluation (the RFP's ``dispute_window_days`` from
the evaluation, by the clock)."""

from __future__ import annotations

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
