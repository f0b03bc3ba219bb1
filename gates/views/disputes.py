"""Verdict disputes: the list of the ones the user may see (``gates:disputes``:
a vendor its own, the buyer side and its engaged lab and auditors their RFPs'),
one dispute (``gates:dispute``) with the buyer side's uphold and reject forms
and the vendor's withdraw button, and the vendor's "Contest this verdict" form
posted from the evaluation page. Other organisations get 404."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_GET, require_POST

from accounts.exceptions import ApplicationError
from accounts.views.requests import SignedInRequest
from gates.forms.disputes import DisputeAnswerForm, DisputeOpenForm
from gates.models import Dispute
from gates.permissions import gate_scope
from gates.selectors.disputes import dispute_list_visible_to
from gates.selectors.evaluations import evaluation_list_visible_to
from gates.services.disputes import (
    dispute_open,
    dispute_reject,
    dispute_uphold,
    dispute_withdraw,
)
from procurement.views.common import show_refusal


def _visible(request: HttpRequest, dispute_id: uuid.UUID) -> Dispute:
    found = dispute_list_visible_to(request.user).filter(public_id=dispute_id).first()
    if found is None:
        raise Http404("No such dispute.")
    return found


@login_required
@require_GET
def dispute_list(request: HttpRequest) -> HttpResponse:
    found = dispute_list_visible_to(request.user).order_by("-opened_at", "-id")
    return render(request, "gates/dispute_list.html", {"disputes": found[:200]})


@login_required
@require_GET
def dispute_detail(request: HttpRequest, dispute_id: uuid.UUID) -> HttpResponse:
    dispute = _visible(request, dispute_id)
    scope = gate_scope(request.user, dispute.rfp)
    context: dict[str, Any] = {
        "dispute": dispute,
        "answer_form": DisputeAnswerForm() if scope.buyer_side else None,
        "is_vendor": dispute.vendor_organisation_id in scope.vendor_ids,
    }
    return render(request, "gates/dispute_detail.html", context)


@login_required
@require_POST
def dispute_contest(request: SignedInRequest, evaluation_id: uuid.UUID) -> HttpResponse:
    evaluation = evaluation_list_visible_to(request.user).filter(
        public_id=evaluation_id
    )
    found = evaluation.select_related("rfp").first()
    if found is None:
        raise Http404("No such evaluation.")
    form = DisputeOpenForm(request.POST, evaluation=found)
    if not form.is_valid():
        messages.error(request, "Write why the verdict is wrong.")
        return redirect("gates:evaluation", found.public_id)
    try:
        dispute = dispute_open(
            evaluation=found, actor=request.user, **form.cleaned_data
        )
    except ApplicationError as error:
        show_refusal(request, error)
        return redirect("gates:evaluation", found.public_id)
    messages.success(request, "Dispute opened: the buyer is told.")
    return redirect("gates:dispute", dispute.public_id)


def _answer(verb: Callable[..., Dispute], done: str) -> Callable[..., HttpResponse]:
    @login_required
    @require_POST
    def view(request: SignedInRequest, dispute_id: uuid.UUID) -> HttpResponse:
        dispute = _visible(request, dispute_id)
        if not gate_scope(request.user, dispute.rfp).buyer_side:
            raise PermissionDenied
        form = DisputeAnswerForm(request.POST)
        reason = form.cleaned_data["reason"] if form.is_valid() else ""
        try:
            verb(dispute=dispute, actor=request.user, reason=reason)
        except ApplicationError as error:
            show_refusal(request, error)
        else:
            messages.success(request, done)
        return redirect("gates:dispute", dispute.public_id)

    return view


@login_required
@require_POST
def dispute_withdraw_view(
    request: SignedInRequest, dispute_id: uuid.UUID
) -> HttpResponse:
    dispute = _visible(request, dispute_id)
    try:
        dispute_withdraw(dispute=dispute, actor=request.user)
    except ApplicationError as error:
        show_refusal(request, error)
    else:
        messages.success(request, "Dispute withdrawn.")
    return redirect("gates:dispute", dispute.public_id)


urlpatterns = [
    path("disputes/", dispute_list, name="disputes"),
    path("disputes/<uuid:dispute_id>/", dispute_detail, name="dispute"),
    path(
        "evaluations/<uuid:evaluation_id>/contest/",
        dispute_contest,
        name="dispute_contest",
    ),
    path(
        "disputes/<uuid:dispute_id>/uphold/",
        _answer(dispute_uphold, "Dispute upheld: a re-test at your cost is scheduled."),
        name="dispute_uphold",
    ),
    path(
        "disputes/<uuid:dispute_id>/reject/",
        _answer(dispute_reject, "Dispute rejected: the vendor is told."),
        name="dispute_reject",
    ),
    path(
        "disputes/<uuid:dispute_id>/withdraw/",
        dispute_withdraw_view,
        name="dispute_withdraw",
    ),
]
