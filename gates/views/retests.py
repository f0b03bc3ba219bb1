"""Re-test obligations: the list of the ones the user may see (``gates:retests``:
a vendor its own, the buyer side and its engaged lab and auditors their RFPs')
and one obligation (``gates:retest``): the reason, deadline, attempts, cost
bearer, history, the vendor's "Request re-test" form (a revised bundle) and the
lab operator's "Start re-test campaign" form (a pool). Status by the clock
(``status_now``): reads never write. Other organisations get 404."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_GET, require_POST

from accounts.exceptions import ApplicationError
from accounts.models import AuditEvent
from accounts.views.requests import SignedInRequest
from gates.forms.retests import RequestRetestForm, StartCampaignForm
from gates.models import RetestObligation
from gates.permissions import gate_scope
from gates.selectors.obligations import obligation_list_visible_to
from gates.services.obligations import (
    obligation_campaign_start,
    obligation_request_retest,
)
from procurement.views.common import show_refusal

OB = RetestObligation.Status


def _visible(request: HttpRequest, obligation_id: uuid.UUID) -> RetestObligation:
    found = (
        obligation_list_visible_to(request.user)
        .select_related("evaluation__campaign", "bundle", "campaign", "plan")
        .filter(public_id=obligation_id)
        .first()
    )
    if found is None:
        raise Http404("No such re-test obligation.")
    return found


def _history(obligation: RetestObligation) -> list[AuditEvent]:
    kind = ContentType.objects.get_for_model(RetestObligation)
    events = AuditEvent.objects.filter(target_type=kind, target_id=str(obligation.pk))
    return list(events.order_by("occurred_at", "id"))


def _forms(request: HttpRequest, obligation: RetestObligation) -> dict[str, Any]:
    scope = gate_scope(request.user, obligation.rfp)
    status = obligation.status_now
    vendor = obligation.vendor_organisation_id in scope.vendor_ids
    can_start = scope.lab and status == OB.SCHEDULED and not obligation.campaign_id
    return {
        "request_form": RequestRetestForm(obligation=obligation)
        if vendor and status == OB.OPEN
        else None,
        "start_form": StartCampaignForm(obligation=obligation, user=request.user)
        if can_start
        else None,
        "is_vendor": vendor,
    }


@login_required
@require_GET
def retest_list(request: HttpRequest) -> HttpResponse:
    found = obligation_list_visible_to(request.user).order_by("-created_at", "-id")
    rows = [(o, o.status_now) for o in found[:200]]
    return render(request, "gates/retest_list.html", {"rows": rows})


@login_required
@require_GET
def retest_detail(request: HttpRequest, obligation_id: uuid.UUID) -> HttpResponse:
    obligation = _visible(request, obligation_id)
    context = {
        "obligation": obligation,
        "status": obligation.status_now,
        "history": _history(obligation),
        "evaluations": obligation.evaluations.order_by("-evaluated_at"),
        **_forms(request, obligation),
    }
    return render(request, "gates/retest_detail.html", context)


@login_required
@require_POST
def retest_request(request: SignedInRequest, obligation_id: uuid.UUID) -> HttpResponse:
    obligation = _visible(request, obligation_id)
    if (
        obligation.vendor_organisation_id
        not in gate_scope(request.user, obligation.rfp).vendor_ids
    ):
        raise PermissionDenied
    form = RequestRetestForm(request.POST, obligation=obligation)
    if not form.is_valid():
        messages.error(request, "Choose one of your revised accepted bundles.")
        return redirect("gates:retest", obligation.public_id)
    try:
        obligation_request_retest(
            obligation=obligation,
            bundle=form.cleaned_data["bundle"],
            actor=request.user,
        )
    except ApplicationError as error:
        show_refusal(request, error)
    else:
        messages.success(request, "Re-test requested: the lab is told.")
    return redirect("gates:retest", obligation.public_id)


@login_required
@require_POST
def retest_campaign_start(
    request: SignedInRequest, obligation_id: uuid.UUID
) -> HttpResponse:
    obligation = _visible(request, obligation_id)
    if not gate_scope(request.user, obligation.rfp).lab:
        raise PermissionDenied
    form = StartCampaignForm(request.POST, obligation=obligation, user=request.user)
    if not form.is_valid():
        messages.error(request, "Choose one of your pools.")
        return redirect("gates:retest", obligation.public_id)
    try:
        campaign = obligation_campaign_start(
            obligation=obligation, pool=form.cleaned_data["pool"], actor=request.user
        )
    except ApplicationError as error:
        show_refusal(request, error)
        return redirect("gates:retest", obligation.public_id)
    messages.success(request, "Re-test campaign started.")
    return redirect("benchmarks:campaign_detail", campaign.public_id)


urlpatterns = [
    path("retests/", retest_list, name="retests"),
    path("retests/<uuid:obligation_id>/", retest_detail, name="retest"),
    path(
        "retests/<uuid:obligation_id>/request/", retest_request, name="retest_request"
    ),
    path(
        "retests/<uuid:obligation_id>/start/",
        retest_campaign_start,
        name="retest_campaign_start",
    ),
]
