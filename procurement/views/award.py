"""The award page: a buyer or admin requests the award (winning bid, rationale,
and a written override while score sheets are missing); another buyer-side member
reads what they are about to sign (ranks, totals, completeness) and confirms it,
or any buyer-side member cancels the pending request. Vendors get 404, other
roles 403."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_http_methods, require_POST

from accounts.exceptions import ApplicationError
from accounts.views.requests import SignedInRequest
from procurement.forms.evaluation import AwardCancelForm, AwardForm
from procurement.models import AwardRequest, Rfp
from procurement.permissions import can_manage_rfp
from procurement.selectors.award import (
    award_get,
    award_request_list,
    award_request_pending,
    award_summary,
)
from procurement.selectors.comparison import Comparison
from procurement.services.award import award_cancel, award_confirm, award_request
from procurement.views.common import rfp_page_context
from procurement.views.evaluation import buyer_side_rfp, error_text


def award_choices(comparison: Comparison) -> list[tuple[str, str]]:
    choices = []
    for row in comparison.rows:
        name = row.bid.vendor_organisation.name
        r = row.consensus
        label = f"#{r.rank} {name} · {r.weighted_total}/100" if r else name
        choices.append((str(row.bid.public_id), label))
    return choices


def _award_context(request: HttpRequest, rfp: Rfp, form: Any) -> dict[str, Any]:
    user, opened = request.user, rfp.status == Rfp.Status.OPENED
    pending = award_request_pending(rfp) if opened else None
    summary = None if rfp.is_sealed else award_summary(user, rfp)
    can_request = opened and pending is None and can_manage_rfp(user, rfp)
    if can_request and form is None and summary is not None:
        form = AwardForm(choices=award_choices(summary.comparison))
    return rfp_page_context(
        request,
        rfp,
        "award",
        award=award_get(rfp),
        summary=summary,
        pending=pending,
        mine=pending is not None and pending.requested_by_id == user.pk,
        cancel_form=AwardCancelForm(),
        history=[
            r
            for r in award_request_list(rfp)
            if r.status == AwardRequest.Status.CANCELLED
        ],
        form=form if can_request else None,
    )


def _award_post(request: SignedInRequest, rfp: Rfp) -> HttpResponse:
    if not can_manage_rfp(request.user, rfp):
        raise PermissionDenied
    summary = award_summary(request.user, rfp)
    form = AwardForm(request.POST, choices=award_choices(summary.comparison))
    if form.is_valid():
        bids = {str(row.bid.public_id): row.bid for row in summary.comparison.rows}
        try:
            award_request(
                rfp=rfp,
                bid=bids[form.cleaned_data.pop("bid")],
                actor=request.user,
                **form.cleaned_data,
            )
            messages.success(
                request, "Award requested. Another member of your team confirms it."
            )
            return redirect("procurement:rfp_award", rfp.public_id)
        except ApplicationError as error:
            messages.error(request, error_text(error))
    context = _award_context(request, rfp, form)
    return render(request, "procurement/award.html", context, status=400)


@login_required
@require_http_methods(["GET", "POST"])
def rfp_award(request: SignedInRequest, rfp_id: uuid.UUID) -> HttpResponse:
    rfp = buyer_side_rfp(request, rfp_id)
    if request.method == "POST":
        return _award_post(request, rfp)
    context = _award_context(request, rfp, None)
    return render(request, "procurement/award.html", context)


@login_required
@require_POST
def award_confirm_view(request: SignedInRequest, rfp_id: uuid.UUID) -> HttpResponse:
    rfp = buyer_side_rfp(request, rfp_id)  # any buyer-side member confirms
    try:
        award_confirm(rfp=rfp, actor=request.user)
    except ApplicationError as error:
        messages.error(request, error_text(error))
    else:
        messages.success(request, "Awarded. Every bidder has been notified.")
    return redirect("procurement:rfp_award", rfp.public_id)


@login_required
@require_POST
def award_cancel_view(request: SignedInRequest, rfp_id: uuid.UUID) -> HttpResponse:
    rfp = buyer_side_rfp(request, rfp_id)  # any buyer-side member cancels
    form = AwardCancelForm(request.POST)
    reason = form.cleaned_data["reason"] if form.is_valid() else ""
    try:
        award_cancel(rfp=rfp, actor=request.user, reason=reason)
    except ApplicationError as error:
        messages.error(request, error_text(error))
    else:
        messages.success(request, "Award request cancelled.")
    return redirect("procurement:rfp_award", rfp.public_id)


urlpatterns = [
    path("<uuid:rfp_id>/award/", rfp_award, name="rfp_award"),
    path("<uuid:rfp_id>/award/confirm/", award_confirm_view, name="award_confirm"),
    path("<uuid:rfp_id>/award/cancel/", award_cancel_view, name="award_cancel"),
]
