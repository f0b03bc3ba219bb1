"""The clarifications tab: vendors' questions, the buyer's public answers, addenda."""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_POST

from accounts.lib.paging import PAGE_SIZE
from accounts.selectors import clock
from accounts.views.requests import SignedInRequest
from procurement.exceptions import ProcurementError
from procurement.forms.clarifications import (
    AddendumForm,
    ClarificationAnswerForm,
    ClarificationAskForm,
)
from procurement.models import Rfp
from procurement.permissions import can_manage_rfp
from procurement.selectors.clarifications import (
    ClarificationScope,
    addendum_views_for,
    clarification_get_visible,
    clarification_list_visible_to,
    clarification_rows,
    clarification_scope_for,
)
from procurement.selectors.rfps import rfp_get_visible_or_404
from procurement.services.addenda import rfp_amend
from procurement.services.clarifications import (
    ANSWER_MAX_LENGTH,
    QUESTION_MAX_LENGTH,
    clarification_answer,
    clarification_ask,
    questions_closed_reason,
)
from procurement.views.common import rfp_page_context


def _rfp_and_scope(
    request: HttpRequest, rfp_id: uuid.UUID
) -> tuple[Rfp, ClarificationScope]:
    """404 for an RFP the user may not know; 403 for one whose Q&A is not theirs."""
    rfp = rfp_get_visible_or_404(request.user, public_id=rfp_id)
    scope = clarification_scope_for(request.user, rfp)
    if not scope.can_read:
        raise PermissionDenied("Only the buyer side and invited vendors read these.")
    return rfp, scope


def _deadline_passed(rfp: Rfp) -> bool:
    return rfp.status_now == Rfp.Status.PUBLISHED and (
        rfp.submission_deadline <= clock.now()
    )


def _questions(
    request: HttpRequest, rfp: Rfp, scope: ClarificationScope
) -> dict[str, object]:
    """The buyer side's questions (unanswered first), or a vendor's public Q&A
    (paginated) and own pending questions."""
    listed = clarification_list_visible_to(scope, rfp=rfp)
    pending = listed.filter(answered_at__isnull=True)
    if not scope.buyer_side:
        listed = listed.filter(answered_at__isnull=False)
    page = Paginator(listed, PAGE_SIZE).get_page(request.GET.get("page"))
    unanswered = pending.count() if scope.buyer_side else 0
    return {
        "page": page,
        "rows": clarification_rows(scope, rfp=rfp, clarifications=page.object_list),
        "pending_rows": []
        if scope.buyer_side
        else clarification_rows(scope, rfp=rfp, clarifications=pending),
        "unanswered_count": unanswered,
        "closing_waits": bool(unanswered) and _deadline_passed(rfp),
    }


def _page(
    request: HttpRequest,
    rfp: Rfp,
    scope: ClarificationScope,
    addendum_form: AddendumForm | None = None,
) -> HttpResponse:
    """The tab; 400 when it shows a refused addendum form again."""
    manage = can_manage_rfp(request.user, rfp)
    published = rfp.status_now == Rfp.Status.PUBLISHED
    context = rfp_page_context(
        request,
        rfp,
        "clarifications",
        scope=scope,
        **_questions(request, rfp, scope),
        questions_closed=questions_closed_reason(rfp),
        question_max_length=QUESTION_MAX_LENGTH,
        can_answer=manage and published,
        answer_max_length=ANSWER_MAX_LENGTH,
        published=published,
        addenda=addendum_views_for(rfp=rfp),
        addendum_form=addendum_form or (AddendumForm(rfp=rfp) if manage else None),
    )
    status = 400 if addendum_form is not None else 200
    return render(request, "procurement/clarifications.html", context, status=status)


@login_required
def rfp_clarifications(request: HttpRequest, rfp_id: uuid.UUID) -> HttpResponse:
    rfp, scope = _rfp_and_scope(request, rfp_id)
    return _page(request, rfp, scope)


@login_required
def clarification_detail(
    request: HttpRequest, rfp_id: uuid.UUID, clarification_id: uuid.UUID
) -> HttpResponse:
    rfp, scope = _rfp_and_scope(request, rfp_id)
    clarification = clarification_get_visible(
        scope, rfp=rfp, public_id=clarification_id
    )
    if clarification is None:
        raise Http404("No such question.")
    (row,) = clarification_rows(scope, rfp=rfp, clarifications=[clarification])
    context = rfp_page_context(
        request,
        rfp,
        "clarifications",
        row=row,
        scope=scope,
        answer_max_length=ANSWER_MAX_LENGTH,
        can_answer=can_manage_rfp(request.user, rfp)
        and rfp.status_now == Rfp.Status.PUBLISHED,
    )
    return render(request, "procurement/clarifications_detail.html", context)


@login_required
@require_POST
def rfp_clarification_ask(request: SignedInRequest, rfp_id: uuid.UUID) -> HttpResponse:
    rfp, scope = _rfp_and_scope(request, rfp_id)
    if not scope.can_ask or scope.organisation is None:
        raise PermissionDenied("Only invited vendors ask questions.")
    form = ClarificationAskForm(request.POST)
    try:
        if not form.is_valid():
            raise ProcurementError(" ".join(map(str, form.errors["question"])))
        clarification_ask(
            rfp=rfp,
            organisation=scope.organisation,
            question=form.cleaned_data["question"],
            actor=request.user,
        )
    except ProcurementError as exc:
        messages.error(request, f"Your question was not sent: {exc.message}")
    else:
        messages.success(request, "Question sent. Only the buyer reads it for now.")
    return redirect("procurement:rfp_clarifications", rfp_id=rfp.public_id)


@login_required
@require_POST
def clarification_answer_view(
    request: SignedInRequest, rfp_id: uuid.UUID, clarification_id: uuid.UUID
) -> HttpResponse:
    rfp, scope = _rfp_and_scope(request, rfp_id)
    clarification = clarification_get_visible(
        scope, rfp=rfp, public_id=clarification_id
    )
    if clarification is None:
        raise Http404("No such question.")
    if not can_manage_rfp(request.user, rfp):
        raise PermissionDenied("Only buyers answer questions.")
    form = ClarificationAnswerForm(request.POST)
    try:
        if not form.is_valid():
            raise ProcurementError(" ".join(map(str, form.errors["answer"])))
        clarification_answer(
            clarification=clarification,
            answer=form.cleaned_data["answer"],
            actor=request.user,
        )
    except ProcurementError as exc:
        messages.error(request, f"The answer was not published: {exc.message}")
    else:
        messages.success(request, "Answer published to every invited vendor.")
    return redirect("procurement:rfp_clarifications", rfp_id=rfp.public_id)


@login_required
@require_POST
def rfp_addendum_issue(request: SignedInRequest, rfp_id: uuid.UUID) -> HttpResponse:
    """On a refusal the page is shown again with the buyer's edits kept (400)."""
    rfp, scope = _rfp_and_scope(request, rfp_id)
    if not can_manage_rfp(request.user, rfp):
        raise PermissionDenied("Only buyers issue addenda.")
    form = AddendumForm(request.POST, rfp=rfp)
    if form.is_valid():
        try:
            addendum = rfp_amend(
                rfp=rfp,
                changes=form.changes(),
                reason=form.cleaned_data["reason"],
                actor=request.user,
            )
        except ProcurementError as exc:
            form.add_error(None, exc.message)
        else:
            messages.success(request, f"Addendum {addendum.number} issued.")
            return redirect("procurement:rfp_clarifications", rfp_id=rfp.public_id)
    return _page(request, rfp, scope, addendum_form=form)


urlpatterns = [
    path(
        "<uuid:rfp_id>/clarifications/", rfp_clarifications, name="rfp_clarifications"
    ),
    path(
        "<uuid:rfp_id>/clarifications/ask/",
        rfp_clarification_ask,
        name="rfp_clarification_ask",
    ),
    path(
        "<uuid:rfp_id>/clarifications/<uuid:clarification_id>/",
        clarification_detail,
        name="clarification_detail",
    ),
    path(
        "<uuid:rfp_id>/clarifications/<uuid:clarification_id>/answer/",
        clarification_answer_view,
        name="clarification_answer",
    ),
    path("<uuid:rfp_id>/addenda/", rfp_addendum_issue, name="rfp_addendum_issue"),
]
