"""The guided RFP editor: creating a draft, then one step per page (basics →
artifacts → workloads and metrics → criteria → terms → invitations → review)."""

from __future__ import annotations

import copy
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.views.decorators.http import require_http_methods

from accounts.exceptions import ApplicationError
from procurement.exceptions import ProcurementError
from procurement.forms.rfps import (
    AcceleratorForm,
    AcceleratorFormSetFactory,
    ArtifactFormSetFactory,
    CriterionFormSetFactory,
    InviteForm,
    MetricFormSetFactory,
    RfpBasicsForm,
    RfpCreateForm,
    RfpRequirementsForm,
    RfpTermsForm,
    RfpWorkloadsForm,
    WorkloadForm,
    WorkloadFormSetFactory,
)
from procurement.lib.requirements import SCHEMA
from procurement.models import Rfp
from procurement.selectors.requirements import requirements_document
from procurement.selectors.rfps import (
    managed_buyer_organisations,
    rfp_template_list_for,
    rfp_with_configuration,
    vendor_organisation_list,
)
from procurement.services.rfp_lifecycle import rfp_publish_problems
from procurement.services.rfps import (
    ROWS,
    rfp_configure,
    rfp_create,
    rfp_invite_vendor,
    rfp_set_artifacts,
    rfp_set_criteria,
    rfp_update,
)
from procurement.services.templates import rfp_create_from_template
from procurement.views.common import rfp_page_context, rfp_to_manage, show_refusal
from procurement.views.markdown import render_markdown

Forms = dict[str, Any]


# --- creating a draft ---------------------------------------------------------------


def _create_from_form(form: RfpCreateForm, actor: Any) -> Rfp:
    data = dict(form.cleaned_data)
    template = data.pop("template")
    if template is None:
        return rfp_create(actor=actor, **data)
    data.pop("buyer_organisation")
    return rfp_create_from_template(template=template, actor=actor, **data)


@login_required
@require_http_methods(["GET", "POST"])
def rfp_new(request: HttpRequest) -> HttpResponse:
    organisations = managed_buyer_organisations(request.user)
    if not organisations.exists():
        raise PermissionDenied
    form = RfpCreateForm(
        request.POST or None,
        organisations=organisations,
        templates=rfp_template_list_for(request.user),
        initial={"template": request.GET.get("template")},
    )
    if request.method == "POST" and form.is_valid():
        try:
            rfp = _create_from_form(form, request.user)
        except ApplicationError as exc:
            show_refusal(request, exc)
        else:
            messages.success(
                request, f"Draft {rfp.reference} created; go on step by step."
            )
            return redirect(step_url(rfp, "basics"))
    return render(request, "procurement/rfp_edit_new.html", {"form": form})


# --- the guided editor --------------------------------------------------------------


def _initial_rows(rfp: Rfp, key: str) -> list[dict[str, Any]]:
    fields = ROWS[key][1]
    return [{f: getattr(row, f) for f in fields} for row in getattr(rfp, key).all()]


def _basics_forms(data: Any, rfp: Rfp) -> Forms:
    return {"form": RfpBasicsForm(data, instance=copy.copy(rfp))}


def _rows_formset(factory: Any, data: Any, rfp: Rfp, key: str) -> Any:
    """The rows as a formset. A bound one gets no ``initial``: each posted row
    then counts as entered (only blank extra rows are skipped), whatever the
    rows were before."""
    if data is not None:
        return factory(data, prefix=key)
    return factory(prefix=key, initial=_initial_rows(rfp, key))


def _artifacts_forms(data: Any, rfp: Rfp) -> Forms:
    return {"formset": _rows_formset(ArtifactFormSetFactory, data, rfp, "artifacts")}


def _workloads_forms(data: Any, rfp: Rfp) -> Forms:
    """The workloads text, the requirements document's sections as fields and
    rows (workloads, accelerators) and the metric rows."""
    doc = requirements_document(rfp)
    initial = {
        "approaches": doc["approaches"],
        "transports": doc["fabric"]["transports"],
        "qos": doc["fabric"]["qos"],
        "pinned": doc["environment"]["pinned"],
        "bid_requires_bundle": doc["artifacts"]["bid_requires_bundle"],
    }
    workloads = [WorkloadForm.initial_for(w) for w in doc["workloads"]]
    accelerators = [AcceleratorForm.initial_for(a) for a in doc["accelerators"]]
    bound = data is not None  # bound: every posted row counts (see _rows_formset)
    return {
        "form": RfpWorkloadsForm(data, instance=copy.copy(rfp)),
        "requirements_form": RfpRequirementsForm(data, initial=initial),
        "workloads_formset": WorkloadFormSetFactory(
            data, prefix="workloads", initial=None if bound else workloads
        ),
        "accelerators_formset": AcceleratorFormSetFactory(
            data, prefix="accelerators", initial=None if bound else accelerators
        ),
        "formset": _rows_formset(MetricFormSetFactory, data, rfp, "metrics"),
    }


def _requirements_from(rfp: Rfp, forms: Forms) -> dict[str, Any]:
    """The document the step's fields state: what the API's PUT takes. The
    mandatory artifact kinds stay as the artifacts step set them."""
    fields = forms["requirements_form"].cleaned_data
    metrics = [
        {
            "metric": row["name"],
            "stats": [s for s in row["stats"].split(",") if s],
            "series": row["series"],
        }
        for row in forms["formset"].rows()
    ]
    return {
        "schema": SCHEMA,
        "approaches": fields["approaches"],
        "workloads": forms["workloads_formset"].documents(),
        "accelerators": forms["accelerators_formset"].documents(),
        "fabric": {"transports": fields["transports"], "qos": fields["qos"]},
        "environment": {"pinned": fields["pinned"]},
        "metrics": metrics,
        "artifacts": {
            "mandatory": requirements_document(rfp)["artifacts"]["mandatory"],
            "bid_requires_bundle": fields["bid_requires_bundle"],
        },
    }


def _criteria_forms(data: Any, rfp: Rfp) -> Forms:
    return {"formset": _rows_formset(CriterionFormSetFactory, data, rfp, "criteria")}


def _terms_forms(data: Any, rfp: Rfp) -> Forms:
    return {"form": RfpTermsForm(data, instance=copy.copy(rfp))}


def _invitations_forms(data: Any, rfp: Rfp) -> Forms:
    form = InviteForm(data, vendors=vendor_organisation_list(exclude_invited_to=rfp))
    form.fields["vendor"].required = False
    return {"form": form}


def _save_invitation(rfp: Rfp, forms: Forms, actor: Any) -> None:
    vendor = forms["form"].cleaned_data["vendor"]
    if vendor is not None:
        rfp_invite_vendor(rfp=rfp, vendor=vendor, actor=actor)


def _save_basics(rfp: Rfp, forms: Forms, actor: Any) -> None:
    rfp_update(rfp=rfp, fields=forms["form"].cleaned_data, actor=actor)


def _save_artifacts(rfp: Rfp, forms: Forms, actor: Any) -> None:
    rfp_set_artifacts(rfp=rfp, artifacts=forms["formset"].rows(), actor=actor)


_ROW_PATH = re.compile(r"(workloads|accelerators|metrics)\[(\d+)\]\.([a-z_]+)")
# a document field -> the step's form field that states it
_FIELD_FOR = {
    "params_b": "params_low",
    "concurrency": "concurrency_low",
    "metric": "name",
    "fabric": "transports",
    "environment": "pinned",
}
_FORMSET_FOR = {
    "workloads": "workloads_formset",
    "accelerators": "accelerators_formset",
    "metrics": "formset",
}


def _place_problems(forms: Forms, problems: Any) -> None:
    """Show the document's problems beside the fields and rows that state them."""
    for problem in problems:
        path = problem.path or ""
        match = _ROW_PATH.match(path)
        if match is None:
            name = path.split(".")[-1].split("[")[0]
            name = name if name in forms["requirements_form"].fields else None
            forms["requirements_form"].add_error(name, problem.message)
            continue
        section, index, field = match.groups()
        formset = forms[_FORMSET_FOR[section]]
        kept = [
            f
            for f in formset.forms
            if f.cleaned_data and not f.cleaned_data.get("DELETE")
        ]
        form = kept[int(index)]
        field = _FIELD_FOR.get(field, field)
        form.add_error(field if field in form.fields else None, problem.message)


def _save_workloads(rfp: Rfp, forms: Forms, actor: Any) -> None:
    changes = {
        **forms["form"].cleaned_data,
        "metrics": forms["formset"].rows(),
        "requirements": _requirements_from(rfp, forms),
    }
    try:
        rfp_configure(rfp=rfp, changes=changes, actor=actor)
    except ProcurementError as exc:
        if exc.code == "invalid_requirements":
            _place_problems(forms, exc.problems)
        raise


def _save_criteria(rfp: Rfp, forms: Forms, actor: Any) -> None:
    rfp_set_criteria(rfp=rfp, criteria=forms["formset"].rows(), actor=actor)


def _review_forms(data: Any, rfp: Rfp) -> Forms:
    return {}


def _save_nothing(rfp: Rfp, forms: Forms, actor: Any) -> None:
    return None


@dataclass(frozen=True)
class Step:
    key: str
    label: str
    build: Callable[[Any, Rfp], Forms]
    save: Callable[[Rfp, Forms, Any], None]
    help: str = ""


STEPS: tuple[Step, ...] = (
    Step(
        "basics",
        "Basics",
        _basics_forms,
        _save_basics,
        "What the tender is, its deadlines and the minimum number of bids.",
    ),
    Step(
        "artifacts",
        "Required artifacts",
        _artifacts_forms,
        _save_artifacts,
        "The evidence every bid must carry, each mandatory or optional, with "
        "guidance for the vendor.",
    ),
    Step(
        "workloads",
        "Workloads and metrics",
        _workloads_forms,
        _save_workloads,
        "The workloads to benchmark and the metrics (with their unit in the name) "
        "every bid must report.",
    ),
    Step(
        "criteria",
        "Criteria and weights",
        _criteria_forms,
        _save_criteria,
        "Evaluators score each criterion from 0 to 10; the weights must add up to 100.",
    ),
    Step(
        "terms",
        "Contract terms",
        _terms_forms,
        _save_basics,
        "The clauses the award binds the winner to; they are frozen at award.",
    ),
    Step(
        "invitations",
        "Invitations",
        _invitations_forms,
        _save_invitation,
        "Vendor organisations that may read the RFP and bid. Each sees only its "
        "own invitation.",
    ),
    Step("review", "Review and publish", _review_forms, _save_nothing),
)
STEP_BY_KEY = {step.key: step for step in STEPS}


def step_url(rfp: Rfp, key: str) -> str:
    return reverse("procurement:rfp_edit", args=[rfp.public_id]) + f"?step={key}"


def _after_save(request: HttpRequest, rfp: Rfp, step: Step) -> HttpResponse:
    if step.key == "invitations":
        vendor = request.POST.get("vendor")
        if vendor:
            messages.success(request, "Vendor invited; its members are notified.")
    elif step.key != "review":
        messages.success(request, f"{step.label}: saved.")
    if "stay" in request.POST:
        return redirect(step_url(rfp, step.key))
    following = STEPS[min(STEPS.index(step) + 1, len(STEPS) - 1)]
    return redirect(step_url(rfp, following.key))


def _render_step(
    request: HttpRequest, rfp: Rfp, step: Step, forms: Forms
) -> HttpResponse:
    extra: dict[str, Any] = {"steps": STEPS, "step": step, **forms}
    if step.key in {"invitations", "review"}:
        extra["problems"] = rfp_publish_problems(rfp)
        extra["invited_vendors"] = list(rfp.invited_vendors.all())
        extra["description_html"] = render_markdown(rfp.description)
    context = rfp_page_context(request, rfp, "edit", **extra)
    return render(request, "procurement/rfp_edit.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def rfp_edit(request: HttpRequest, rfp_id: uuid.UUID) -> HttpResponse:
    """The guided editor: one step per page (``?step=``), each saving and moving on."""
    rfp = rfp_with_configuration(rfp_to_manage(request, rfp_id))
    if rfp.status != Rfp.Status.DRAFT:
        context = rfp_page_context(request, rfp, "edit")
        return render(request, "procurement/rfp_edit_locked.html", context)
    step = STEP_BY_KEY.get(request.GET.get("step", "basics"))
    if step is None:
        raise Http404("No such step.")
    forms = step.build(request.POST if request.method == "POST" else None, rfp)
    if request.method == "POST" and all(f.is_valid() for f in forms.values()):
        try:
            step.save(rfp, forms, request.user)
        except ApplicationError as exc:
            show_refusal(request, exc)
        else:
            return _after_save(request, rfp, step)
    return _render_step(request, rfp, step, forms)


urlpatterns = [
    path("new/", rfp_new, name="rfp_new"),
    path("<uuid:rfp_id>/edit/", rfp_edit, name="rfp_edit"),
]
