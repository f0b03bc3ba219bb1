"""Runs for a gate, POST only: "Schedule N more runs" for an INCONCLUSIVE
evaluation (``templates/gates/_more_runs.html`` renders the button); it goes
back to the gate page with a message saying what happened. A lab operator
starts a campaign for a gate from the lab's campaign form (the gate page's
"Run this gate" opens it with the gate chosen) or through the API."""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.urls import URLPattern, path, reverse
from django.views.decorators.http import require_POST

from accounts.exceptions import ApplicationError
from accounts.views.requests import SignedInRequest
from benchmarks.selectors.access import campaign_list_visible_to, can_add_runs
from gates.models import Evaluation, GatePlan
from gates.services.runs import gate_schedule_more_runs


def gate_page_url(plan: GatePlan, gate: str) -> str:
    args = (plan.rfp.public_id, plan.vendor_organisation.slug, gate)
    return reverse("gates:gate", args=args)


@login_required
@require_POST
def schedule_runs(request: SignedInRequest, evaluation_id: uuid.UUID) -> HttpResponse:
    evaluation = (
        Evaluation.objects.filter(
            public_id=evaluation_id,
            campaign__in=campaign_list_visible_to(request.user),
        )
        .select_related("plan__rfp", "plan__vendor_organisation", "campaign__rfp")
        .first()
    )
    if evaluation is None:
        raise Http404("No such evaluation.")
    if not can_add_runs(request.user, evaluation.campaign):
        raise PermissionDenied("Only the lab's operators or the buyers add runs.")
    try:
        link = gate_schedule_more_runs(evaluation=evaluation, actor=request.user)
    except ApplicationError as error:
        messages.error(request, error.message)
    else:
        n = link.extra_runs
        text = f"Scheduled {n} more run{'s' if n != 1 else ''}"
        messages.success(request, f"{text}: the gate is evaluated when they end.")
    return redirect(gate_page_url(evaluation.plan, evaluation.gate))


urlpatterns: list[URLPattern] = [
    path(
        "evaluations/<uuid:evaluation_id>/more-runs/",
        schedule_runs,
        name="schedule_runs",
    ),
]
