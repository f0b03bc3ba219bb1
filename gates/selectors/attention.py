"""What needs a user now on the gates, in the dashboard's ``Attention`` shape
(``procurement.selectors.attention``): one query per kind of item.

- buyer side: decisions due (a gate's latest evaluation with no decision resting
  on it, except INCONCLUSIVE ones waiting for more runs), promotions waiting
  for a second sign-off by someone other than the one who asked, and the open
  disputes of a verdict to uphold or reject;
- vendor: the re-tests its organisation owes, with their deadlines;
- lab operator: the re-tests waiting for the lab (a vendor asked for one and no
  campaign runs it yet), the gates of frozen plans ready to run (never judged
  under the plan version, no campaign running for them), and the lab deviations
  of the buyers whose lab they operate."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db.models import Exists, OuterRef
from django.urls import reverse

from accounts.models import Role
from accounts.selectors import clock
from accounts.selectors.users import organisation_ids_for
from benchmarks.selectors.access import lab_organisation_list_for
from gates.models import Decision, Dispute, Evaluation, RetestObligation
from gates.permissions import AnyUser
from gates.selectors.board import newest_of
from gates.selectors.evaluations import (
    evaluation_list_visible_to,
    lab_deviation_list_for,
)
from gates.selectors.obligations import (
    obligation_list_due_for,
    obligation_list_visible_to,
)
from gates.selectors.runs import gates_ready_to_run
from procurement.selectors.attention import LIMIT, Attention

BUYER_SIDE = (Role.BUYER, Role.EVALUATOR, Role.ADMIN)
DOCUMENTS = ("plan_document", "results_document", "evaluation_document")


def gate_url(evaluation: Evaluation) -> str:
    return reverse(
        "gates:gate",
        args=[
            evaluation.rfp.public_id,
            evaluation.vendor_organisation.slug,
            evaluation.gate,
        ],
    )


def _decisions_due(user: AnyUser) -> list[Attention]:
    own = organisation_ids_for(user, *BUYER_SIDE)
    if not own:
        return []
    decided = Decision.objects.filter(evaluation=OuterRef("pk")).exclude(
        status=Decision.Status.WITHDRAWN
    )
    candidates = evaluation_list_visible_to(user).filter(
        rfp__buyer_organisation_id__in=own
    )
    due = (
        newest_of(candidates)
        .exclude(verdict="INCONCLUSIVE")
        .filter(~Exists(decided))
        .select_related("rfp", "vendor_organisation")
        .order_by("-evaluated_at")[:LIMIT]
    )
    return [
        Attention(
            "gate_decision",
            e.rfp,
            f"Decide on {e.vendor_organisation.name}'s {e.gate} gate "
            f"({e.get_verdict_display().lower()})",
            gate_url(e),
            due=None,
        )
        for e in due
    ]


def _seconds_due(user: User) -> list[Attention]:
    own = organisation_ids_for(user, *BUYER_SIDE)
    if not own:
        return []
    pending = (
        Decision.objects.filter(
            status=Decision.Status.PENDING,
            plan__rfp__buyer_organisation_id__in=own,
        )
        .exclude(decided_by=user)
        .select_related("decided_by", "evaluation__rfp")
        .select_related("evaluation__vendor_organisation")
        .defer("evaluation__plan_document", "evaluation__results_document")
        .defer("evaluation__evaluation_document")
        .order_by("-decided_at")[:LIMIT]
    )
    return [
        Attention(
            "gate_second",
            d.evaluation.rfp,
            f"{d.decided_by.get_username()} asks you to second the promotion of "
            f"{d.evaluation.vendor_organisation.name}'s {d.gate} gate",
            gate_url(d.evaluation),
            due=None,
        )
        for d in pending
    ]


def _disputes_due(user: AnyUser) -> list[Attention]:
    own = organisation_ids_for(user, *BUYER_SIDE)
    if not own:
        return []
    found = (
        Dispute.objects.filter(
            status=Dispute.Status.OPEN, rfp__buyer_organisation_id__in=own
        )
        .select_related("rfp", "vendor_organisation", "evaluation")
        .defer(*(f"evaluation__{name}" for name in DOCUMENTS))
        .order_by("opened_at", "id")[:LIMIT]
    )
    return [
        Attention(
            "gate_dispute",
            d.rfp,
            f"{d.vendor_organisation.name} contests the "
            f"{d.evaluation.verdict} of its {d.gate} gate: uphold or reject",
            reverse("gates:dispute", args=[d.public_id]),
            due=None,
        )
        for d in found
    ]


def _retests_due(user: AnyUser) -> list[Attention]:
    return [
        Attention(
            "retest",
            o.rfp,
            f"Re-validation of the {o.gate} gate due after your update"
            + (
                f" (canary hosts {', '.join(o.canary_hosts)} first)"
                if o.canary_hosts
                else ""
            )
            if o.is_revalidation
            else f"Re-test of the {o.gate} gate owed "
            f"({o.attempts_left} attempt{'s' if o.attempts_left != 1 else ''} left)",
            reverse("gates:retest", args=[o.public_id]),
            due=o.deadline,
        )
        for o in obligation_list_due_for(user)[:LIMIT]
    ]


def _lab_deviations(user: AnyUser) -> list[Attention]:
    return [
        Attention(
            "lab_deviation",
            e.rfp,
            f"Lab deviation: {e.vendor_organisation.name}'s {e.gate} gate "
            f"{e.get_verdict_display().lower()} on a host that drifts from the "
            "vendor's manifest",
            gate_url(e),
            due=None,
        )
        for e in lab_deviation_list_for(user)[:LIMIT]
    ]


def _retests_for_the_lab(user: AnyUser) -> list[Attention]:
    labs = lab_organisation_list_for(user).values("pk")
    now = clock.now()
    waiting = (
        obligation_list_visible_to(user)
        .filter(
            status=RetestObligation.Status.SCHEDULED,
            campaign__isnull=True,
            deadline__gt=now,
            rfp__buyer_organisation__engages__in=labs,
        )
        .select_related("rfp", "vendor_organisation")
        .distinct()
        .order_by("deadline", "id")[:LIMIT]
    )
    return [
        Attention(
            "retest_lab",
            o.rfp,
            f"Start the re-validation of {o.vendor_organisation.name}'s {o.gate} "
            "gate: an update changed its environment"
            + (
                f" (canary hosts {', '.join(o.canary_hosts)} first)"
                if o.canary_hosts
                else ""
            )
            if o.is_revalidation
            else f"Start the re-test of {o.vendor_organisation.name}'s {o.gate} gate: "
            "the vendor asked for it with a revised bundle",
            reverse("gates:retest", args=[o.public_id]),
            due=o.deadline,
        )
        for o in waiting
    ]


def _gates_to_run(user: AnyUser) -> list[Attention]:
    return [
        Attention(
            "gate_run",
            plan.rfp,
            f"Run {plan.vendor_organisation.name}'s {gate} gate: plan "
            f"v{plan.version} is frozen and not evaluated yet",
            reverse(
                "gates:gate",
                args=[plan.rfp.public_id, plan.vendor_organisation.slug, gate],
            ),
            due=None,
        )
        for plan, gate in gates_ready_to_run(user)[:LIMIT]
    ]


def gate_attention_for(user: AnyUser) -> list[Attention]:
    """Every gate item that waits for this user."""
    if not user.is_authenticated:
        return []
    return (
        _decisions_due(user)
        + _seconds_due(user)
        + _disputes_due(user)
        + _retests_due(user)
        + _retests_for_the_lab(user)
        + _gates_to_run(user)
        + _lab_deviations(user)
    )
