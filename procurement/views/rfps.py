"""RFP pages: the list, the overview and the buyer's actions (the guided editor
is ``procurement.views.rfp_editor``)."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path
from django.views.decorators.http import require_POST

from accounts.exceptions import ApplicationError
from accounts.lib.paging import PAGE_SIZE
from accounts.models import Organisation
from accounts.selectors import clock
from accounts.views.requests import SignedInRequest
from procurement.forms.rfps import (
    CancelForm,
    InviteForm,
    RfpFilterForm,
    TemplateSaveForm,
)
from procurement.models import Rfp
from procurement.permissions import can_manage_rfp
from procurement.selectors.requirements import requirements_document
from procurement.selectors.rfps import (
    invited_vendor_scope_for,
    managed_buyer_organisations,
    rfp_cancellation_reason,
    rfp_get_visible_or_404,
    rfp_list_for_page,
    rfp_list_visible_to,
    rfp_template_get_for,
    rfp_template_list_for,
    rfp_with_configuration,
    vendor_organisation_list,
)
from procurement.services.cancellation import rfp_cancel
from procurement.services.rfp_lifecycle import rfp_publish, rfp_publish_problems
from procurement.services.rfps import rfp_invite_vendor, rfp_uninvite_vendor
from procurement.services.templates import (
    rfp_template_delete,
    rfp_template_save,
)
from procurement.views.common import (
    rfp_page_context,
    rfp_to_manage,
    show_refusal,
)
from procurement.views.markdown import render_markdown
from procurement.views.rfp_editor import step_url


def _overview(rfp: Rfp) -> HttpResponse:
    return redirect("procurement:rfp_detail", rfp.public_id)


# --- list and overview --------------------------------------------------------------


@login_required
def rfp_list(request: HttpRequest) -> HttpResponse:
    form = RfpFilterForm(request.GET)
    status = form.cleaned_data["status"] if form.is_valid() else ""
    visible = rfp_list_visible_to(request.user)
    rfps = rfp_list_for_page(visible, status=status)
    page = Paginator(rfps, PAGE_SIZE).get_page(request.GET.get("page"))
    context = {
        "page": page,
        "form": form,
        "query": f"status={status}" if status else "",
        "can_author": managed_buyer_organisations(request.user).exists(),
    }
    return render(request, "procurement/rfp_list.html", context)


def _buyer_actions(rfp: Rfp) -> dict[str, Any]:
    vendors = vendor_organisation_list(exclude_invited_to=rfp)
    can_invite = rfp.takes_submissions(clock.now()) and vendors.exists()
    return {
        "cancel_form": CancelForm(),
        "template_form": TemplateSaveForm(initial={"name": rfp.title[:120]}),
        "invite_form": InviteForm(vendors=vendors) if can_invite else None,
        "publish_problems": (
            rfp_publish_problems(rfp) if rfp.status == Rfp.Status.DRAFT else []
        ),
    }


@login_required
def rfp_detail(request: HttpRequest, rfp_id: uuid.UUID) -> HttpResponse:
    rfp = rfp_with_configuration(rfp_get_visible_or_404(request.user, public_id=rfp_id))
    extra: dict[str, Any] = {
        "invited_vendors": invited_vendor_scope_for(request.user).visible(rfp),
        "description_html": render_markdown(rfp.description),
        "workloads_html": render_markdown(rfp.workload_requirements),
        "requirements": requirements_document(rfp),
        "weight_total": sum(c.weight for c in rfp.criteria.all()),
        "now": clock.now(),
        "cancel_reason": rfp_cancellation_reason(rfp),
    }
    if can_manage_rfp(request.user, rfp):
        extra.update(_buyer_actions(rfp))
    context = rfp_page_context(request, rfp, "overview", **extra)
    return render(request, "procurement/rfp_detail.html", context)


# --- lifecycle and invitations ------------------------------------------------------


@login_required
@require_POST
def rfp_publish_view(request: SignedInRequest, rfp_id: uuid.UUID) -> HttpResponse:
    rfp = rfp_to_manage(request, rfp_id)
    try:
        rfp = rfp_publish(rfp=rfp, actor=request.user)
    except ApplicationError as exc:
        show_refusal(request, exc)
        return redirect(step_url(rfp, "review"))
    count = rfp.invited_vendors.count()
    messages.success(request, f"{rfp.reference} published; {count} vendor(s) notified.")
    return _overview(rfp)


@login_required
@require_POST
def rfp_cancel_view(request: SignedInRequest, rfp_id: uuid.UUID) -> HttpResponse:
    rfp = rfp_to_manage(request, rfp_id)
    form = CancelForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Give a reason for cancelling.")
        return _overview(rfp)
    try:
        rfp_cancel(rfp=rfp, reason=form.cleaned_data["reason"], actor=request.user)
    except ApplicationError as exc:
        show_refusal(request, exc)
    else:
        messages.success(request, f"{rfp.reference} cancelled.")
    return _overview(rfp)


@login_required
@require_POST
def rfp_invite_view(request: SignedInRequest, rfp_id: uuid.UUID) -> HttpResponse:
    rfp = rfp_to_manage(request, rfp_id)
    form = InviteForm(request.POST, vendors=vendor_organisation_list())
    if not form.is_valid():
        messages.error(request, "Choose a vendor organisation to invite.")
        return _overview(rfp)
    vendor = form.cleaned_data["vendor"]
    try:
        rfp_invite_vendor(rfp=rfp, vendor=vendor, actor=request.user)
    except ApplicationError as exc:
        show_refusal(request, exc)
    else:
        messages.success(request, f"{vendor.name} invited.")
    return _overview(rfp)


@login_required
@require_POST
def rfp_uninvite_view(
    request: SignedInRequest, rfp_id: uuid.UUID, vendor_slug: str
) -> HttpResponse:
    rfp = rfp_to_manage(request, rfp_id)
    vendor = get_object_or_404(
        Organisation, slug=vendor_slug, kind=Organisation.Kind.VENDOR
    )
    try:
        rfp_uninvite_vendor(rfp=rfp, vendor=vendor, actor=request.user)
    except ApplicationError as exc:
        show_refusal(request, exc)
    else:
        messages.success(request, f"{vendor.name} is no longer invited.")
    return redirect(step_url(rfp, "invitations"))


# --- templates ----------------------------------------------------------------------


@login_required
@require_POST
def rfp_template_save_view(request: SignedInRequest, rfp_id: uuid.UUID) -> HttpResponse:
    rfp = rfp_with_configuration(rfp_to_manage(request, rfp_id))
    form = TemplateSaveForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Give the template a name (up to 120 characters).")
        return _overview(rfp)
    try:
        template = rfp_template_save(
            rfp=rfp, name=form.cleaned_data["name"], actor=request.user
        )
    except ApplicationError as exc:
        show_refusal(request, exc)
    else:
        messages.success(request, f"Saved as template “{template.name}”.")
    return _overview(rfp)


@login_required
def rfp_template_list(request: HttpRequest) -> HttpResponse:
    if not managed_buyer_organisations(request.user).exists():
        raise PermissionDenied
    templates = rfp_template_list_for(request.user)
    page = Paginator(templates, PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "procurement/rfp_template_list.html", {"page": page})


@login_required
@require_POST
def rfp_template_delete_view(
    request: SignedInRequest, template_id: uuid.UUID
) -> HttpResponse:
    template = rfp_template_get_for(request.user, public_id=template_id)
    if template is None:
        raise Http404("No such template.")
    rfp_template_delete(template=template, actor=request.user)
    messages.success(request, f"Template “{template.name}” deleted.")
    return redirect("procurement:rfp_template_list")


urlpatterns = [
    path("", rfp_list, name="rfp_list"),
    path("templates/", rfp_template_list, name="rfp_template_list"),
    path(
        "templates/<uuid:template_id>/delete/",
        rfp_template_delete_view,
        name="rfp_template_delete",
    ),
    path("<uuid:rfp_id>/", rfp_detail, name="rfp_detail"),
    path("<uuid:rfp_id>/publish/", rfp_publish_view, name="rfp_publish"),
    path("<uuid:rfp_id>/cancel/", rfp_cancel_view, name="rfp_cancel"),
    path("<uuid:rfp_id>/invitations/", rfp_invite_view, name="rfp_invite"),
    path(
        "<uuid:rfp_id>/invitations/<slug:vendor_slug>/remove/",
        rfp_uninvite_view,
        name="rfp_uninvite",
    ),
    path(
        "<uuid:rfp_id>/save-as-template/",
        rfp_template_save_view,
        name="rfp_template_save",
    ),
]
