"""Runs for a gate, POST only: "Schedule N more runs" for an INCONCLUSIVE
evaluation (``templates/gates/_more_runs.html`` renders the button), and a lab
operator's campaign started for a gate (evaluated when it finishes). Both go
back to the gate page with a message saying what happened."""

from __future__ import annotations

import uuid

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import URLPattern, path, reverse
from django.views.decorators.http import require_POST

from accounts.exceptions import ApplicationError
from benchmarks.selectors.access import (
    campaign_list_visible_to,
    can_add_runs,
    lab_organisation_list_for,
    pool_list_operated_by,
)
from gates.models import Evaluation, GatePlan
from gates.services.runs import gate_campaign_start, gate_schedule_more_runs


def gate_page_url(plan: GatePlan, gate: str) -> str:
    args = (plan.rfp.public_id, plan.vendor_organisation.slug, gate)
    return reverse("gates:gate", args=args)


@login_required
@require_POST
def schedule_runs(request: HttpRequest, evaluation_id: uuid.UUID) -> HttpResponse:
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


class GateCampaignStartForm(forms.Form):
    plan = forms.UUIDField()
    gate = forms.CharField(max_length=64)
    pool = forms.UUIDField()
    repetitions = forms.IntegerField(min_value=1, max_value=100, required=False)


@login_required
@require_POST
def gate_campaign_start_view(request: HttpRequest) -> HttpResponse:
    form = GateCampaignStartForm(request.POST)
    if not form.is_valid():
        return HttpResponse(
            form.errors.as_text(), status=400, content_type="text/plain"
        )
    labs = lab_organisation_list_for(request.user)
    if not labs.exists():
        raise PermissionDenied("Only lab operators start campaigns.")
    data = form.cleaned_data
    plan = (
        GatePlan.objects.filter(
            public_id=data["plan"], rfp__buyer_organisation__engages__in=labs
        )
        .select_related("rfp", "vendor_organisation")
        .first()
    )
    pool = pool_list_operated_by(request.user).filter(public_id=data["pool"]).first()
    if plan is None or pool is None:
        raise Http404("No such plan or pool.")
    try:
        link = gate_campaign_start(
            plan=plan,
            gate=data["gate"],
            pool=pool,
            actor=request.user,
            repetitions=data["repetitions"],
        )
    except ApplicationError as error:
        messages.error(request, error.message)
        return redirect(gate_page_url(plan, data["gate"]))
    messages.success(
        request, f"Campaign started for {link.gate}: evaluated when it ends."
    )
    return redirect("benchmarks:campaign_detail", campaign_id=link.campaign.public_id)


urlpatterns: list[URLPattern] = [
    path(
        "evaluations/<uuid:evaluation_id>/more-runs/",
        schedule_runs,
        name="schedule_runs",
    ),
    path("campaigns/new/", gate_campaign_start_view, name="gate_campaign_start"),
]
