"""Escrow release pages: the list (with what the buyer may ask to release), the
request form, a release with its steps and the forms of the steps the user may
take, the certificate (page and JSON) and the released deposits (zip).

404 for a release the user may not see (``release_list_visible_to``), 403 for
a step they see but may not take (``artifacts.selectors.release``)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_POST

from accounts.exceptions import ApplicationError
from accounts.selectors import clock
from accounts.views.requests import SignedInRequest
from artifacts.forms.release import (
    ApprovalForm,
    ObjectionForm,
    ReasonForm,
    ReleaseRequestForm,
)
from artifacts.models import Release
from artifacts.models.release import RELEASE_TRANSITIONS
from artifacts.permissions import (
    RELEASE_STEP_ALLOWED,
    can_request_release,
    release_steps_for,
)
from artifacts.selectors.breaches import CitedBreach, breaches_citable
from artifacts.selectors.proofs import leaf_inclusion
from artifacts.selectors.release import (
    releasable_for,
    release_deposits,
    release_get_visible,
    release_list_visible_to,
    release_notice_days,
    release_package_get,
    release_steps,
)
from artifacts.selectors.release_package import release_filename, release_package_stream
from artifacts.services.release import (
    release_object,
    release_reject,
    release_request,
    release_withdraw,
)
from artifacts.services.release_execution import (
    release_approve,
    release_download_record,
    release_execute,
)
from procurement.models import Award, Rfp
from procurement.selectors.rfps import rfp_get_visible_or_404


@login_required
def release_list(request: HttpRequest) -> HttpResponse:
    context = {
        "releases": release_list_visible_to(request.user)[:100],
        "releasable": releasable_for(request.user),
    }
    return render(request, "artifacts/release_list.html", context)


def _requestable_rfp(request: HttpRequest, rfp_id: uuid.UUID) -> Rfp:
    rfp = rfp_get_visible_or_404(request.user, public_id=rfp_id)
    if not can_request_release(request.user, rfp):
        raise Http404("No such RFP.")
    return rfp


def _breaches(rfp: Rfp) -> list[CitedBreach]:
    """The awarded vendor's breaches on ``rfp`` a request may cite."""
    award = Award.objects.filter(rfp=rfp).select_related("bid").first()
    if award is None:
        return []
    return breaches_citable(rfp, award.bid.vendor_organisation_id)


@login_required
def release_request_view(request: SignedInRequest, rfp_id: uuid.UUID) -> HttpResponse:
    rfp = _requestable_rfp(request, rfp_id)
    form = ReleaseRequestForm(request.POST or None, breaches=_breaches(rfp))
    if request.method == "POST" and form.is_valid():
        try:
            release = release_request(rfp=rfp, actor=request.user, **form.cleaned_data)
        except ApplicationError as error:
            form.add_error(None, error.message)
        else:
            messages.success(request, "Release requested; the vendor was notified.")
            return redirect("artifacts:release_detail", release_id=release.public_id)
    context = {"rfp": rfp, "form": form, "notice_days": release_notice_days()}
    return render(request, "artifacts/release_request.html", context)


def _visible(request: HttpRequest, release_id: uuid.UUID) -> Release:
    release = release_get_visible(request.user, release_id)
    if release is None:
        raise Http404("No such release.")
    return release


@login_required
def release_detail(request: HttpRequest, release_id: uuid.UUID) -> HttpResponse:
    release = _visible(request, release_id)
    context = {
        "release": release,
        "steps": release_steps(release),
        "deposits": release_deposits(release),
        "actions": release_steps_for(request.user, release, clock.now()),
        "awaiting_approval": (
            Release.Status.APPROVED in RELEASE_TRANSITIONS[release.status]
        ),
        "objection_form": ObjectionForm(),
        "approval_form": ApprovalForm(),
        "reason_form": ReasonForm(),
        "now": clock.now(),
    }
    return render(request, "artifacts/release_detail.html", context)


@dataclass(frozen=True)
class Step:
    form: type[forms.Form] | None
    service: Callable[..., Release]
    done: str


# Who may post each step: ``RELEASE_STEP_ALLOWED``; the service refuses a step
# the release's status or the notice does not allow.
STEPS: dict[str, Step] = {
    "object": Step(ObjectionForm, release_object,
                   "Objection recorded; the release is disputed."),
    "approve": Step(ApprovalForm, release_approve, "Approval recorded."),
    "reject": Step(ReasonForm, release_reject, "Release rejected."),
    "withdraw": Step(ReasonForm, release_withdraw, "Release withdrawn."),
    "execute": Step(None, release_execute, "Released: the certificate is issued."),
}  # fmt: skip


@login_required
@require_POST
def release_step(
    request: HttpRequest, release_id: uuid.UUID, step: str
) -> HttpResponse:
    release, action = _visible(request, release_id), STEPS[step]
    if not RELEASE_STEP_ALLOWED[step](request.user, release):
        raise PermissionDenied("You may not take this step of the release.")
    form = action.form(request.POST) if action.form else None
    if form is not None and not form.is_valid():
        messages.error(request, "Fill in the form: " + form.errors.as_text())
        return redirect("artifacts:release_detail", release_id=release.public_id)
    fields = form.cleaned_data if form is not None else {}
    try:
        action.service(release=release, actor=request.user, **fields)
    except ApplicationError as error:
        messages.error(request, error.message)
    else:
        messages.success(request, action.done)
    return redirect("artifacts:release_detail", release_id=release.public_id)


def _released(request: HttpRequest, release_id: uuid.UUID) -> Release:
    release = _visible(request, release_id)
    if release.status != Release.Status.RELEASED:
        raise Http404("This release has no certificate: it was not executed.")
    return release


@login_required
def release_certificate(request: HttpRequest, release_id: uuid.UUID) -> HttpResponse:
    release = _released(request, release_id)
    executed = release.steps.select_related("event").get(action="executed").event
    context = {
        "release": release,
        "certificate": json.loads(bytes(release.certificate)),
        "executed": executed,
        "inclusion": leaf_inclusion(executed.log_index, bytes(executed.leaf)),
    }
    return render(request, "artifacts/release_certificate.html", context)


@login_required
def release_certificate_json(
    request: HttpRequest, release_id: uuid.UUID
) -> HttpResponse:
    release = _released(request, release_id)
    name = f"release-certificate-{release.public_id}.json"
    return HttpResponse(
        bytes(release.certificate),
        content_type="application/json",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


@login_required
def release_package(
    request: SignedInRequest, release_id: uuid.UUID
) -> StreamingHttpResponse:
    release = release_package_get(request.user, release_id)
    if release is None:
        raise Http404("No released deposits to download.")
    release_download_record(release=release, actor=request.user)
    name = release_filename(release)
    return StreamingHttpResponse(
        release_package_stream(release),
        content_type="application/zip",
        headers={
            "Content-Disposition": f'attachment; filename="{name}"',
            "Cache-Control": "no-store",
        },
    )


P = "escrow/releases/<uuid:release_id>"
urlpatterns = [
    path("escrow/releases/", release_list, name="release_list"),
    path(
        "escrow/releases/new/<uuid:rfp_id>/",
        release_request_view,
        name="release_request",
    ),
    path(f"{P}/", release_detail, name="release_detail"),
    *[
        path(f"{P}/{step}/", release_step, {"step": step}, name=f"release_{step}")
        for step in STEPS
    ],
    path(f"{P}/certificate/", release_certificate, name="release_certificate"),
    path(
        f"{P}/certificate.json",
        release_certificate_json,
        name="release_certificate_json",
    ),
    path(f"{P}/package/", release_package, name="release_package"),
]
