"""The evaluator workspace, the consensus, the comparison matrix (+ CSV/JSON) and
the TCO formula (the award: ``procurement.views.award``). Buyer side only: vendors
get 404 on every one of these pages, auditors and lab operators 403; nothing but
an explanation before opening."""

from __future__ import annotations

import json
import uuid
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.serializers.json import DjangoJSONEncoder
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_GET, require_http_methods

from accounts.exceptions import ApplicationError
from accounts.views.requests import SignedInRequest
from procurement.forms.evaluation import ScoreSheetForm, TcoFormulaForm
from procurement.lib.scoring import DISAGREEMENT_SPREAD
from procurement.models import Rfp
from procurement.permissions import (
    bidding_organisation,
    can_evaluate,
    can_manage_rfp,
    is_buyer_side,
)
from procurement.selectors.comparison import comparison_bids, comparison_for
from procurement.selectors.comparison_exports import (
    comparison_csv_text,
    comparison_json,
)
from procurement.selectors.evaluation import (
    bids_tco_reproduced,
    consensus_visibility,
    evaluation_board,
    formula_params,
    score_sheet_get,
    score_sheet_missing,
    score_sheet_scores,
    tco_formula_current,
    tco_formula_list,
)
from procurement.selectors.rfps import rfp_get_visible_or_404
from procurement.services.evaluation import score_sheet_save, score_sheet_submit
from procurement.services.tco import FORMULA_FROZEN, tco_formula_create
from procurement.views.common import rfp_page_context


def buyer_side_rfp(request: HttpRequest, rfp_id: uuid.UUID) -> Rfp:
    """The RFP for a buyer-side member; 404 for vendors, 403 for other roles."""
    rfp = rfp_get_visible_or_404(request.user, public_id=rfp_id)
    if bidding_organisation(request.user, rfp) is not None:
        raise Http404("No such page.")
    if not is_buyer_side(request.user, rfp):
        raise PermissionDenied
    return rfp


def error_text(error: ApplicationError, limit: int = 6) -> str:
    lines = [p.message for p in error.problems[:limit]]
    more = len(error.problems) - limit
    tail = [f"… and {more} more."] if more > 0 else []
    return " ".join([error.message, *lines, *tail])


# --- evaluation -----------------------------------------------------------------


def _own_rows(board: Any, own: dict[tuple[int, int], Any]) -> list[tuple[Any, list]]:
    """The caller's scores per bid, in criteria order (None where unscored)."""
    return [
        (b, [(c, own.get((b.pk, c.pk))) for c in board.criteria]) for b in board.bids
    ]


def _evaluation_context(request: HttpRequest, rfp: Rfp, form: Any) -> dict[str, Any]:
    user = request.user
    if rfp.is_sealed:
        return rfp_page_context(request, rfp, "evaluation", sealed=True)
    visibility = consensus_visibility(user, rfp)
    board = evaluation_board(rfp, consensus=visibility.visible)
    evaluator = can_evaluate(user, rfp)
    sheet = score_sheet_get(rfp, user) if evaluator else None
    own = score_sheet_scores(sheet)
    open_sheet = sheet is None or sheet.submitted_at is None
    editable = evaluator and rfp.status == Rfp.Status.OPENED and open_sheet
    if editable and form is None:
        form = ScoreSheetForm(bids=board.bids, criteria=board.criteria, scores=own)
    return rfp_page_context(
        request,
        rfp,
        "evaluation",
        board=board,
        evaluator=evaluator,
        sheet=sheet,
        own_rows=_own_rows(board, own),
        missing=len(score_sheet_missing(board.bids, board.criteria, own)),
        form=form if editable else None,
        groups=form.groups() if editable else [],
        visibility=visibility,
        disagreement_spread=DISAGREEMENT_SPREAD,
    )


def _evaluation_post(request: SignedInRequest, rfp: Rfp) -> HttpResponse:
    if not can_evaluate(request.user, rfp):
        raise PermissionDenied
    if rfp.status != Rfp.Status.OPENED:
        messages.error(request, "Scores can be given only while the bids are opened.")
        return redirect("procurement:rfp_evaluation", rfp.public_id)
    board = evaluation_board(rfp)
    own = score_sheet_scores(score_sheet_get(rfp, request.user))
    form = ScoreSheetForm(
        request.POST, bids=board.bids, criteria=board.criteria, scores=own
    )
    if not form.is_valid():
        messages.error(request, "Some scores need fixing; nothing was saved.")
        context = _evaluation_context(request, rfp, form)
        return render(request, "procurement/evaluation.html", context, status=400)
    try:
        score_sheet_save(rfp=rfp, entries=form.entries(), actor=request.user)
        if request.POST.get("action") == "submit":
            score_sheet_submit(rfp=rfp, actor=request.user)
            messages.success(request, "Scores submitted and locked.")
        else:
            messages.success(request, "Draft saved. Only you can see it.")
    except ApplicationError as error:
        messages.error(request, error_text(error))
    return redirect("procurement:rfp_evaluation", rfp.public_id)


@login_required
@require_http_methods(["GET", "POST"])
def rfp_evaluation(request: SignedInRequest, rfp_id: uuid.UUID) -> HttpResponse:
    rfp = buyer_side_rfp(request, rfp_id)
    if request.method == "POST":
        return _evaluation_post(request, rfp)
    context = _evaluation_context(request, rfp, None)
    return render(request, "procurement/evaluation.html", context)


@login_required
@require_GET
def rfp_evaluation_evidence(request: HttpRequest, rfp_id: uuid.UUID) -> HttpResponse:
    """Each bid's evidence for the score sheet, which loads it after the sheet
    (htmx puts each panel in its bid's place): the sheet's controls do not wait
    for the comparison of every bid."""
    rfp = buyer_side_rfp(request, rfp_id)
    if rfp.is_sealed:
        raise Http404("No evidence to show before the bids are opened.")
    context = {"rfp": rfp, "comparison": comparison_for(request.user, rfp)}
    return render(request, "procurement/evaluation_evidence.html", context)


# --- comparison -----------------------------------------------------------------


@login_required
@require_GET
def rfp_comparison(request: HttpRequest, rfp_id: uuid.UUID) -> HttpResponse:
    rfp = buyer_side_rfp(request, rfp_id)
    comparison = None if rfp.is_sealed else comparison_for(request.user, rfp)
    context = rfp_page_context(
        request,
        rfp,
        "comparison",
        comparison=comparison,
        disagreement_spread=DISAGREEMENT_SPREAD,
    )
    return render(request, "procurement/comparison.html", context)


@login_required
@require_GET
def rfp_comparison_export(
    request: HttpRequest, rfp_id: uuid.UUID, fmt: str
) -> HttpResponse:
    rfp = buyer_side_rfp(request, rfp_id)
    if rfp.is_sealed:
        raise Http404("Nothing to compare before the bids are opened.")
    comparison = comparison_for(request.user, rfp)
    if fmt == "csv":
        body = comparison_csv_text(comparison)
        content_type = "text/csv; charset=utf-8"
    else:
        body = json.dumps(comparison_json(comparison), cls=DjangoJSONEncoder, indent=2)
        content_type = "application/json"
    response = HttpResponse(body, content_type=content_type)
    filename = f"{rfp.reference}-comparison.{fmt}"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


# --- TCO ------------------------------------------------------------------------


def _tco_context(request: HttpRequest, rfp: Rfp, form: Any) -> dict[str, Any]:
    current = tco_formula_current(rfp)
    editable = can_manage_rfp(request.user, rfp) and rfp.status not in FORMULA_FROZEN
    if editable and form is None:
        form = TcoFormulaForm(initial=TcoFormulaForm.initial_from(current))
    params = formula_params(current)
    bids = [] if rfp.is_sealed else comparison_bids(rfp)
    return rfp_page_context(
        request,
        rfp,
        "comparison",
        current=current,
        formulas=tco_formula_list(rfp),
        form=form if editable else None,
        results=bids_tco_reproduced(rfp, bids, params),
    )


def _tco_post(request: SignedInRequest, rfp: Rfp) -> HttpResponse:
    if not can_manage_rfp(request.user, rfp):
        raise PermissionDenied
    form = TcoFormulaForm(request.POST)
    if form.is_valid():
        try:
            tco_formula_create(rfp=rfp, actor=request.user, **form.cleaned_data)
            messages.success(request, "New TCO formula version recorded.")
            return redirect("procurement:rfp_tco", rfp.public_id)
        except ApplicationError as error:
            messages.error(request, error_text(error))
    context = _tco_context(request, rfp, form)
    return render(request, "procurement/tco.html", context, status=400)


@login_required
@require_http_methods(["GET", "POST"])
def rfp_tco(request: SignedInRequest, rfp_id: uuid.UUID) -> HttpResponse:
    rfp = buyer_side_rfp(request, rfp_id)
    if request.method == "POST":
        return _tco_post(request, rfp)
    return render(request, "procurement/tco.html", _tco_context(request, rfp, None))


urlpatterns = [
    path("<uuid:rfp_id>/evaluation/", rfp_evaluation, name="rfp_evaluation"),
    path(
        "<uuid:rfp_id>/evaluation/evidence/",
        rfp_evaluation_evidence,
        name="rfp_evaluation_evidence",
    ),
    path("<uuid:rfp_id>/comparison/", rfp_comparison, name="rfp_comparison"),
    path(
        "<uuid:rfp_id>/comparison.csv",
        rfp_comparison_export,
        {"fmt": "csv"},
        name="rfp_comparison_csv",
    ),
    path(
        "<uuid:rfp_id>/comparison.json",
        rfp_comparison_export,
        {"fmt": "json"},
        name="rfp_comparison_json",
    ),
    path("<uuid:rfp_id>/tco/", rfp_tco, name="rfp_tco"),
]
