"""The read pages of the gates: an RFP's gate board, one vendor's gate, one
criterion over re-tests (with its chart), one evaluation's three documents, and
the lab operators' list of lab deviations. GET only; 404 for an RFP, vendor or
evaluation the user may not see (a vendor sees only its own)."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import URLPattern, path, reverse
from django.views.decorators.http import require_safe

from accounts.models import Organisation
from benchmarks.selectors.access import can_add_runs
from gates.forms.disputes import DisputeAnswerForm, DisputeOpenForm
from gates.lib.charts import criterion_chart
from gates.models import Dispute
from gates.permissions import (
    GateScope,
    can_download_evaluation_evidence,
    gate_scope,
)
from gates.selectors.board import board_gate_names, gate_board
from gates.selectors.decisions import gate_state
from gates.selectors.disputes import (
    dispute_contestable,
    dispute_list_for_evaluation,
    dispute_list_visible_to,
    dispute_window_ends,
)
from gates.selectors.evaluations import (
    criterion_page,
    evaluation_get_visible,
    gate_page,
    lab_deviation_list_for,
    vendor_get_visible,
)
from gates.selectors.runs import (
    evaluation_more_runs,
    gate_choice_list_for,
    gate_choice_value,
)
from gates.selectors.undeposited import undeposited_visible
from procurement.models import Rfp
from procurement.selectors.rfps import rfp_get_visible_or_404
from procurement.views.common import rfp_page_context

DOCUMENTS = {"plan": "plan_document", "results": "results_document"}
DOCUMENTS["evaluation"] = "evaluation_document"


def _rfp_and_vendor(
    request: HttpRequest, rfp_id: uuid.UUID, vendor: str
) -> tuple[Rfp, Organisation, GateScope]:
    rfp = rfp_get_visible_or_404(request.user, public_id=rfp_id)
    org, scope = vendor_get_visible(request.user, rfp, vendor)
    if org is None:
        raise Http404("No such vendor on this RFP.")
    return rfp, org, scope


@login_required
@require_safe
def board(request: HttpRequest, rfp_id: uuid.UUID) -> HttpResponse:
    rfp = rfp_get_visible_or_404(request.user, public_id=rfp_id)
    scope = gate_scope(request.user, rfp)
    if not scope.visible:
        raise Http404("No such RFP.")
    rows = gate_board(rfp=rfp, user=request.user)
    context = rfp_page_context(
        request,
        rfp,
        "gates",
        rows=rows,
        gates=board_gate_names(rows),
        scope=scope,
        undeposited=undeposited_visible(rfp, scope),
        disputes=dispute_list_visible_to(request.user).filter(
            rfp=rfp, status=Dispute.Status.OPEN
        ),
    )
    return render(request, "gates/board.html", context)


def _more_runs(page: Any) -> dict[str, int] | None:
    """What an INCONCLUSIVE latest evaluation needs."""
    latest = page.latest
    if latest is None or latest.verdict != "INCONCLUSIVE":
        return None
    return evaluation_more_runs(latest) or None


@login_required
@require_safe
def gate(
    request: HttpRequest, rfp_id: uuid.UUID, vendor: str, gate: str
) -> HttpResponse:
    rfp, org, scope = _rfp_and_vendor(request, rfp_id, vendor)
    page = gate_page(
        rfp=rfp, vendor=org, gate=gate, user=request.user, page=request.GET.get("page")
    )
    if page is None or (page.spec is None and page.latest is None):
        raise Http404("No such gate.")
    latest = page.latest
    context = rfp_page_context(
        request,
        rfp,
        "gates",
        page=page,
        buyer_side=scope.buyer_side,
        sees_escrow=scope.full,  # the evaluation's deposit is the buyer's
        more_runs=_more_runs(page),
        can_schedule=latest is not None and can_add_runs(request.user, latest.campaign),
        more_runs_template="gates/_more_runs.html",
        plan_url=reverse("gates:plan", args=[rfp.public_id, org.slug]),
        gate_path=request.get_full_path(),
        run_gate_url=_run_gate_url(request, page) if scope.lab else "",
        **_decision_panel(page),
    )
    return render(request, "gates/gate.html", context)


def _run_gate_url(request: HttpRequest, page: Any) -> str:
    """The lab's campaign form with this gate chosen, when the user may run it
    (a lab operator of an engaged lab, the plan current, its bundle startable)."""
    if page.plan is None or page.spec is None:
        return ""
    value = gate_choice_value(page.plan, page.gate)
    if value not in {c.value for c in gate_choice_list_for(request.user)}:
        return ""
    return f"{reverse('benchmarks:campaign_start')}?{urlencode({'gate': value})}"


def _decision_panel(page: Any) -> dict[str, Any]:
    """The decision panel (its state on the current plan and its forms) when the
    vendor has a current plan with this gate."""
    if page.plan is None or page.spec is None:
        return {}
    return {
        "decision_template": "gates/decision_panel.html",
        "state": gate_state(page.plan, page.gate),
    }


@login_required
@require_safe
def criterion(
    request: HttpRequest, rfp_id: uuid.UUID, vendor: str, gate: str, criterion: str
) -> HttpResponse:
    rfp, org, scope = _rfp_and_vendor(request, rfp_id, vendor)
    page = criterion_page(
        rfp=rfp, vendor=org, gate=gate, criterion=criterion, user=request.user
    )
    if page is None or page.latest is None:
        raise Http404("No such criterion.")
    context = rfp_page_context(
        request,
        rfp,
        "gates",
        page=page,
        charts=[criterion_chart(page)],
        # bundle pages: the buyer side and the vendor itself (not labs, auditors)
        sees_bundle=scope.buyer_side or org.id in scope.vendor_ids,
    )
    return render(request, "gates/criterion.html", context)


def _evaluation(request: HttpRequest, evaluation_id: uuid.UUID) -> Any:
    evaluation = evaluation_get_visible(request.user, evaluation_id)
    if evaluation is None:
        raise Http404("No such evaluation.")
    return evaluation


@login_required
@require_safe
def evaluation(request: HttpRequest, evaluation_id: uuid.UUID) -> HttpResponse:
    found = _evaluation(request, evaluation_id)
    # its status by the clock
    rfp = rfp_get_visible_or_404(request.user, public_id=found.rfp.public_id)
    documents = [
        (name, f"{name}.json", getattr(found, f"{name}_sha256")) for name in DOCUMENTS
    ]
    context = rfp_page_context(
        request,
        rfp,
        "gates",
        evaluation=found,
        documents=documents,
        sees_escrow=gate_scope(request.user, rfp).full,
        evidence_url=reverse("gate-evaluation-evidence", args=[found.public_id])
        if can_download_evaluation_evidence(request.user, found)
        else "",
        api_url=f"/api/v1/evaluations/{found.public_id}/",
        **_disputes(request, found),
    )
    return render(request, "gates/evaluation.html", context)


def _disputes(request: HttpRequest, evaluation: Any) -> dict[str, Any]:
    """The evaluation's disputes, the buyer side's answer form and the judged
    vendor's "Contest this verdict" form (within the window)."""
    buyer_side = gate_scope(request.user, evaluation.rfp).buyer_side
    contestable = dispute_contestable(request.user, evaluation)
    return {
        "disputes": dispute_list_for_evaluation(evaluation),
        "answer_form": DisputeAnswerForm() if buyer_side else None,
        "contest_form": DisputeOpenForm(evaluation=evaluation) if contestable else None,
        "window_ends": dispute_window_ends(evaluation),
    }


@login_required
@require_safe
def evaluation_document(
    request: HttpRequest, evaluation_id: uuid.UUID, name: str
) -> HttpResponse:
    """One of the three documents exactly as evaluated (its sha256 is the one
    stored and deposited)."""
    if name not in DOCUMENTS:
        raise Http404("No such document.")
    data = getattr(_evaluation(request, evaluation_id), DOCUMENTS[name]).encode()
    response = HttpResponse(data, content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{name}.json"'
    response["X-Content-SHA256"] = hashlib.sha256(data).hexdigest()
    return response


@login_required
@require_safe
def lab_deviations(request: HttpRequest) -> HttpResponse:
    found = lab_deviation_list_for(request.user)
    return render(request, "gates/lab_deviations.html", {"deviations": found})


GATE = "rfps/<uuid:rfp_id>/vendors/<slug:vendor>/gates/<str:gate>/"
urlpatterns: list[URLPattern] = [
    path("rfps/<uuid:rfp_id>/board/", board, name="board"),
    path(GATE, gate, name="gate"),
    path(f"{GATE}criteria/<str:criterion>/", criterion, name="criterion"),
    path("evaluations/<uuid:evaluation_id>/", evaluation, name="evaluation"),
    path(
        "evaluations/<uuid:evaluation_id>/<str:name>.json",
        evaluation_document,
        name="evaluation_document",
    ),
    path("lab-deviations/", lab_deviations, name="lab_deviations"),
]
