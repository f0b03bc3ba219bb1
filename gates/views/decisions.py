"""Decisions on a gate: the gate's decision panel (``gates:decisions``, by plan
and gate: the state, why a promotion is refused, the history) and its
POST-only actions: ``gates:decide`` (plan + gate: promote, hold or roll back,
with a rationale), ``gates:decision_second`` and ``gates:decision_withdraw`` (a
pending promotion, by its id). Each action redirects to ``next`` (the gate page
that embeds ``gates/decision_panel.html``) or to the panel page.

404 for a plan the user may not see; 403 for an action by anyone but the
buyer side (the services check the rules again)."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from accounts.exceptions import ApplicationError
from accounts.views.requests import SignedInRequest
from gates.forms.decisions import DecisionForm, SecondForm
from gates.models import Decision, GatePlan
from gates.permissions import can_decide_gates
from gates.selectors.decisions import gate_decisions, gate_state
from gates.selectors.plans import plan_get_visible
from gates.services.decisions import (
    decision_record,
    decision_second,
    decision_withdraw,
)
from procurement.views.common import show_refusal


def _plan(request: HttpRequest, plan_id: uuid.UUID, gate: str) -> GatePlan:
    plan = plan_get_visible(request.user, plan_id)
    if plan is None or gate not in plan.gate_names:
        raise Http404("No such gate.")
    return plan


def _decision(request: HttpRequest, decision_id: uuid.UUID) -> Decision:
    decision = Decision.objects.select_related("plan__rfp").filter(
        public_id=decision_id
    )
    found = decision.first()
    if found is None or plan_get_visible(request.user, found.plan.public_id) is None:
        raise Http404("No such decision.")
    if not can_decide_gates(request.user, found.plan.rfp):
        raise PermissionDenied
    return found


def _back(request: HttpRequest, plan: GatePlan, gate: str) -> HttpResponse:
    target = request.POST.get("next", "")
    if url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        return redirect(target)
    return redirect(reverse("gates:decisions", args=[plan.public_id, gate]))


def _done(request: HttpRequest, call: Any, success: str) -> None:
    try:
        call()
    except ApplicationError as error:
        show_refusal(request, error)
    else:
        messages.success(request, success)


@login_required
@require_GET
def decision_panel(request: HttpRequest, plan_id: uuid.UUID, gate: str) -> HttpResponse:
    plan = _plan(request, plan_id, gate)
    context = {
        "plan": plan,
        "rfp": plan.rfp,
        "gate": gate,
        "state": gate_state(plan, gate),
        "decisions": gate_decisions(plan, gate),
        "can_decide": can_decide_gates(request.user, plan.rfp),
        "form": DecisionForm(),
    }
    return render(request, "gates/decision_page.html", context)


@login_required
@require_POST
def decide(request: SignedInRequest, plan_id: uuid.UUID, gate: str) -> HttpResponse:
    plan = _plan(request, plan_id, gate)
    if not can_decide_gates(request.user, plan.rfp):
        raise PermissionDenied
    form = DecisionForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose promote, hold or roll back, and say why.")
        return _back(request, plan, gate)
    kind = form.cleaned_data["kind"]
    done = "Promotion proposed: another member of your team signs it off."
    _done(
        request,
        lambda: decision_record(
            plan=plan, gate=gate, actor=request.user, **form.cleaned_data
        ),
        done if kind == Decision.Kind.PROMOTE else "Decision recorded.",
    )
    return _back(request, plan, gate)


@login_required
@require_POST
def decision_second_view(
    request: SignedInRequest, decision_id: uuid.UUID
) -> HttpResponse:
    decision = _decision(request, decision_id)
    form = SecondForm(request.POST)
    note = form.cleaned_data["note"] if form.is_valid() else ""
    _done(
        request,
        lambda: decision_second(decision=decision, actor=request.user, note=note),
        "Promotion signed off: it is recorded.",
    )
    return _back(request, decision.plan, decision.gate)


@login_required
@require_POST
def decision_withdraw_view(
    request: SignedInRequest, decision_id: uuid.UUID
) -> HttpResponse:
    decision = _decision(request, decision_id)
    _done(
        request,
        lambda: decision_withdraw(decision=decision, actor=request.user),
        "Promotion withdrawn.",
    )
    return _back(request, decision.plan, decision.gate)


PANEL = "plans/<uuid:plan_id>/gates/<str:gate>/decisions/"
urlpatterns = [
    path(PANEL, decision_panel, name="decisions"),
    path(f"{PANEL}new/", decide, name="decide"),
    path(
        "decisions/<uuid:decision_id>/second/",
        decision_second_view,
        name="decision_second",
    ),
    path(
        "decisions/<uuid:decision_id>/withdraw/",
        decision_withdraw_view,
        name="decision_withdraw",
    ),
]
