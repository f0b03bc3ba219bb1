"""What the gates API lets a caller see and do (``gates.permissions``): rows the
caller may not see answer 404, as if they did not exist; visible but not allowed
is 403."""

from __future__ import annotations

import uuid
from typing import TypeVar

from django.core.exceptions import PermissionDenied
from django.db.models import Model, QuerySet
from django.http import Http404

from accounts.models import Role
from accounts.selectors.users import organisation_ids_for
from gates.models import Decision, Dispute, Evaluation, GatePlan, RetestObligation
from gates.permissions import (
    AnyUser,
    can_decide_gates,
    can_edit_gate_plan,
    gate_rows_visible_q,
    gate_scope,
)
from gates.selectors.disputes import dispute_list_visible_to as disputes_visible
from gates.selectors.evaluations import (
    evaluation_list_visible_to as evaluations_visible,
)
from gates.selectors.obligations import (
    obligation_list_visible_to as obligations_visible,
)
from procurement.models import Rfp
from procurement.selectors.rfps import rfp_get_visible_or_404


def evaluation_list_visible_to(user: AnyUser) -> QuerySet[Evaluation]:
    return evaluations_visible(user).select_related(
        "rfp", "vendor_organisation", "plan", "campaign", "deposit"
    )


def obligation_list_visible_to(user: AnyUser) -> QuerySet[RetestObligation]:
    return obligations_visible(user).select_related(
        "plan", "evaluation", "bundle", "campaign"
    )


def dispute_list_visible_to(user: AnyUser) -> QuerySet[Dispute]:
    return disputes_visible(user)


def decision_list_visible_to(user: AnyUser) -> QuerySet[Decision]:
    plans = GatePlan.objects.filter(gate_rows_visible_q(user)).values("id")
    return Decision.objects.filter(plan_id__in=plans).select_related(
        "plan", "plan__rfp", "evaluation", "decided_by", "second_by", "withdrawn_by"
    )


M = TypeVar("M", bound=Model)


def one(queryset: QuerySet[M], public_id: uuid.UUID) -> M:
    """The visible row with this id, else 404."""
    found = queryset.filter(public_id=public_id).first()
    if found is None:
        raise Http404
    return found


def rfp_for(user: AnyUser, public_id: uuid.UUID) -> Rfp:
    return rfp_get_visible_or_404(user, public_id=public_id)


def require_plan_editor(user: AnyUser, rfp: Rfp) -> None:
    if not can_edit_gate_plan(user, rfp):
        raise PermissionDenied


def require_buyer_side(user: AnyUser, rfp: Rfp) -> None:
    if not can_decide_gates(user, rfp):
        raise PermissionDenied


def require_evaluator(user: AnyUser, rfp: Rfp) -> None:
    """Evaluating a gate, scheduling runs: the buyer side, or an operator of a lab
    the buyer engages."""
    scope = gate_scope(user, rfp)
    if not (scope.buyer_side or scope.lab):
        raise PermissionDenied


def require_vendor_member(user: AnyUser, vendor_id: int) -> None:
    """Acting on a re-test obligation or a dispute: a member of the vendor."""
    if vendor_id not in organisation_ids_for(user, Role.VENDOR, Role.ADMIN):
        raise PermissionDenied
