"""The gate plan pages of one vendor on one RFP: the versions and the current
plan as people read it, the buyer's draft editor, and the plan's JSON file in
and out.

Who: the RFP's buyer side and the lab and audit organisations it engages see
every vendor's plans, a vendor its own (frozen versions only); anyone else gets
404. Only the RFP's buyers (and admins) write: 403 for the others."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import URLPattern, path, reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.exceptions import ApplicationError
from accounts.models import Organisation
from accounts.views.requests import SignedInRequest
from gates.exceptions import GatesConflict, GatesError
from gates.forms.plans import LIMIT_KINDS, STOP_KINDS, PlanEditor, attach_problems
from gates.lib.engine.validate import (
    DIRECTIONS,
    DRIFT_LEVELS,
    ON_HIGH_CV,
    STAGES,
    STATS,
)
from gates.models import GatePlan
from gates.permissions import (
    can_edit_gate_plan,
    can_see_gate_plan_drafts,
    can_view_gate_plan,
)
from gates.selectors.plans import (
    plan_current,
    plan_draft,
    plan_export,
    plan_get_visible,
    plan_readable,
    plan_versions,
)
from gates.services.plans import (
    MAX_IMPORT_BYTES,
    plan_create_default,
    plan_freeze,
    plan_import,
    plan_new_version,
    plan_update,
)
from procurement.models import Rfp
from procurement.selectors.rfps import rfp_get_visible_or_404
from procurement.views.common import rfp_page_context


def _rfp_vendor(
    request: HttpRequest, rfp_id: uuid.UUID, vendor: str
) -> tuple[Rfp, Organisation]:
    """404 unless the user may see this vendor's plans on this RFP."""
    rfp = rfp_get_visible_or_404(request.user, public_id=rfp_id)
    org = rfp.invited_vendors.filter(slug=vendor, kind=Organisation.Kind.VENDOR)
    found = org.first()
    if found is None or not can_view_gate_plan(request.user, rfp, found):
        raise Http404("No such vendor on this RFP.")
    return rfp, found


def _to_edit(request: HttpRequest, rfp: Rfp) -> None:
    if not can_edit_gate_plan(request.user, rfp):
        raise PermissionDenied("Only the RFP's buyers edit its gate plans.")


def _plan(request: HttpRequest, plan_id: uuid.UUID) -> GatePlan:
    plan = plan_get_visible(request.user, plan_id)
    if plan is None:
        raise Http404("No such gate plan.")
    return plan


def plan_url(plan_or_rfp: Any, vendor: Organisation | None = None) -> str:
    rfp = plan_or_rfp.rfp if vendor is None else plan_or_rfp
    org = plan_or_rfp.vendor_organisation if vendor is None else vendor
    return reverse("gates:plan", args=[rfp.public_id, org.slug])


def _refused(request: HttpRequest, error: ApplicationError) -> None:
    """A refusal as messages: each problem with its path."""
    for p in error.problems or ():
        messages.error(request, f"{p.path}: {p.message}" if p.path else p.message)
    if not error.problems:
        messages.error(request, error.message)


def _page(
    request: HttpRequest,
    rfp: Rfp,
    vendor: Organisation,
    shown: GatePlan | None = None,
    **extra: Any,
) -> HttpResponse:
    drafts = can_see_gate_plan_drafts(request.user, rfp)
    current = plan_current(rfp, vendor)
    draft = plan_draft(rfp, vendor) if drafts else None
    shown = shown or current
    context = rfp_page_context(
        request, rfp, "gates", vendor=vendor, current=current, draft=draft,
        shown=shown, gates=plan_readable(shown) if shown else [],
        draft_gates=plan_readable(draft) if draft else [],
        versions=plan_versions(rfp, vendor, drafts=drafts),
        can_edit=can_edit_gate_plan(request.user, rfp),
        max_import_kb=MAX_IMPORT_BYTES // 1024, **extra,
    )  # fmt: skip
    status = 400 if extra.get("import_problems") else 200
    return render(request, "gates/plan_detail.html", context, status=status)


@login_required
@require_GET
def plan_page(request: HttpRequest, rfp_id: uuid.UUID, vendor: str) -> HttpResponse:
    rfp, org = _rfp_vendor(request, rfp_id, vendor)
    return _page(request, rfp, org)


@login_required
@require_GET
def plan_version(request: HttpRequest, plan_id: uuid.UUID) -> HttpResponse:
    plan = _plan(request, plan_id)
    rfp, org = _rfp_vendor(request, plan.rfp.public_id, plan.vendor_organisation.slug)
    return _page(request, rfp, org, shown=plan)


@login_required
@require_POST
def plan_create(
    request: SignedInRequest, rfp_id: uuid.UUID, vendor: str
) -> HttpResponse:
    rfp, org = _rfp_vendor(request, rfp_id, vendor)
    _to_edit(request, rfp)
    try:
        plan = plan_create_default(rfp=rfp, vendor=org, actor=request.user)
    except ApplicationError as refused:
        _refused(request, refused)
        return redirect(plan_url(rfp, org))
    messages.success(request, f"Draft v{plan.version} made from the bundle's claims.")
    return redirect("gates:plan_edit", rfp.public_id, org.slug)


@login_required
@require_POST
def plan_upload(
    request: SignedInRequest, rfp_id: uuid.UUID, vendor: str
) -> HttpResponse:
    rfp, org = _rfp_vendor(request, rfp_id, vendor)
    _to_edit(request, rfp)
    upload = request.FILES.get("file")
    data = upload.read(MAX_IMPORT_BYTES + 1) if upload is not None else b""
    try:
        plan = plan_import(rfp=rfp, vendor=org, data=data, actor=request.user)
    except ApplicationError as refused:
        return _page(request, rfp, org, import_problems=refused)
    messages.success(request, f"Imported as draft v{plan.version}.")
    return redirect(plan_url(plan))


@login_required
@require_POST
def plan_freeze_view(request: SignedInRequest, plan_id: uuid.UUID) -> HttpResponse:
    plan = _plan(request, plan_id)
    _to_edit(request, plan.rfp)
    try:
        plan = plan_freeze(plan=plan, actor=request.user)
    except ApplicationError as refused:
        _refused(request, refused)
    else:
        messages.success(request, f"Plan v{plan.version} is frozen and current.")
    return redirect(plan_url(plan))


@login_required
@require_POST
def plan_new_version_view(request: SignedInRequest, plan_id: uuid.UUID) -> HttpResponse:
    plan = _plan(request, plan_id)
    _to_edit(request, plan.rfp)
    try:
        draft = plan_new_version(plan=plan, actor=request.user)
    except ApplicationError as refused:
        _refused(request, refused)
        return redirect(plan_url(plan))
    messages.success(request, f"Draft v{draft.version} copied from v{plan.version}.")
    org = plan.vendor_organisation
    return redirect("gates:plan_edit", plan.rfp.public_id, org.slug)


@login_required
@require_GET
def plan_download(request: HttpRequest, plan_id: uuid.UUID) -> HttpResponse:
    plan = _plan(request, plan_id)
    name = f"{plan.rfp.reference}-{plan.vendor_organisation.slug}-v{plan.version}"
    response = HttpResponse(plan_export(plan), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{name}.gate-plan.json"'
    return response


def _pairs(values: tuple[str, ...]) -> list[tuple[str, str]]:
    return [(v, v) for v in values]


def _editor(
    request: HttpRequest, rfp: Rfp, draft: GatePlan, editor: PlanEditor, sha: str
) -> HttpResponse:
    context = rfp_page_context(
        request, rfp, "gates", vendor=draft.vendor_organisation, draft=draft,
        editor=editor, sha256=sha, stages=_pairs(STAGES), stats=_pairs(STATS),
        directions=_pairs(DIRECTIONS), on_high_cv=_pairs(ON_HIGH_CV),
        drift_levels=_pairs(DRIFT_LEVELS[1:]), limit_kinds=LIMIT_KINDS,
        stop_kinds=STOP_KINDS,
    )  # fmt: skip
    status = 400 if editor.has_errors else 200
    return render(request, "gates/plan_edit.html", context, status=status)


def _save(
    request: SignedInRequest, rfp: Rfp, draft: GatePlan, editor: PlanEditor
) -> HttpResponse:
    if request.POST.get("sha256") != draft.sha256:
        editor.general.append(
            "Someone saved this draft after you opened it: reload it to see "
            "their changes (your input is still here)."
        )
        return _editor(request, rfp, draft, editor, request.POST.get("sha256", ""))
    org = draft.vendor_organisation
    document = editor.document(rfp=rfp.reference, vendor=org.slug)
    try:
        plan_update(plan=draft, document=document, actor=request.user,
                    **editor.settings())  # fmt: skip
    except GatesConflict as refused:
        _refused(request, refused)
        return redirect(plan_url(rfp, org))
    except GatesError as refused:
        attach_problems(editor, refused.problems)
        return _editor(request, rfp, draft, editor, draft.sha256)
    messages.success(request, f"Draft v{draft.version} saved.")
    return redirect(plan_url(rfp, org))


@login_required
@require_http_methods(["GET", "POST"])
def plan_edit(request: SignedInRequest, rfp_id: uuid.UUID, vendor: str) -> HttpResponse:
    rfp, org = _rfp_vendor(request, rfp_id, vendor)
    _to_edit(request, rfp)
    draft = plan_draft(rfp, org)
    if draft is None:
        messages.info(request, "There is no draft: create one or start a new version.")
        return redirect(plan_url(rfp, org))
    if request.method == "GET":
        editor = PlanEditor.from_plan(draft)
        return _editor(request, rfp, draft, editor, draft.sha256)
    editor, action = PlanEditor.from_post(request.POST), request.POST.get("action")
    if action and action != "save":  # a row button: shown again, nothing saved
        editor.apply(action)
        return _editor(request, rfp, draft, editor, request.POST.get("sha256", ""))
    return _save(request, rfp, draft, editor)


PLAN = "rfps/<uuid:rfp_id>/plans/<slug:vendor>/"
urlpatterns: list[URLPattern] = [
    path(PLAN, plan_page, name="plan"),
    path(f"{PLAN}edit/", plan_edit, name="plan_edit"),
    path(f"{PLAN}create-default/", plan_create, name="plan_create_default"),
    path(f"{PLAN}import/", plan_upload, name="plan_import"),
    path("plans/<uuid:plan_id>/", plan_version, name="plan_version"),
    path("plans/<uuid:plan_id>/freeze/", plan_freeze_view, name="plan_freeze"),
    path(
        "plans/<uuid:plan_id>/new-version/",
        plan_new_version_view,
        name="plan_new_version",
    ),
    path("plans/<uuid:plan_id>/export.json", plan_download, name="plan_export"),
]
