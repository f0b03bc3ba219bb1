"""Signed report pages (docs/reports.md): the "Signed report" panel of an
evaluation and the "Acceptance certificate" panel of a recorded promotion
(``templates/gates/_report_panel.html``; the evaluation and decision pages load
it by htmx, and it polls itself every 2 s while the report is queued or
rendering), the request / "Try again" (POST), and the audited downloads of the
signed PDF and its in-toto statement.

GET never writes, except the audit row of a download. 404 for an evaluation or
decision the user may not see (a vendor sees only its own); 403 for a request
by anyone who may not evaluate; 409 for a download of a report not ready."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import URLPattern, path, reverse
from django.views.decorators.http import require_GET, require_POST, require_safe

from accounts.exceptions import ApplicationError
from accounts.views.requests import SignedInRequest
from gates.exceptions import GatesConflict
from gates.models import Decision, Evaluation, Report
from gates.permissions import can_download_report, can_request_report
from gates.selectors.evaluations import evaluation_get_visible
from gates.selectors.plans import plan_get_visible
from gates.selectors.reports import report_for_decision, report_for_evaluation
from gates.services.reports import report_download, report_request
from procurement.views.common import show_refusal

K = Report.Kind
LIVE = (Report.Status.QUEUED, Report.Status.RENDERING)
# per kind: the panel, request, PDF and statement URL names
NAMES = {
    K.EVALUATION: (
        "gates:evaluation_report",
        "gates:evaluation_report_request",
        "gates:evaluation_report_pdf",
        "gates:evaluation_report_statement",
    ),
    K.CERTIFICATE: (
        "gates:decision_certificate",
        "gates:decision_certificate_request",
        "gates:decision_certificate_pdf",
        "gates:decision_certificate_statement",
    ),
}


def _evaluation(request: HttpRequest, evaluation_id: uuid.UUID) -> Evaluation:
    found = evaluation_get_visible(request.user, evaluation_id)
    if found is None:
        raise Http404("No such evaluation.")
    return found


def _decision(request: HttpRequest, decision_id: uuid.UUID) -> Decision:
    found = (
        Decision.objects.select_related("plan__rfp", "evaluation")
        .filter(public_id=decision_id)
        .first()
    )
    if found is None or plan_get_visible(request.user, found.plan.public_id) is None:
        raise Http404("No such decision.")
    return found


def _panel(
    request: HttpRequest,
    *,
    kind: str,
    owner_id: uuid.UUID,
    report: Report | None,
    can_request: bool,
) -> HttpResponse:
    if report is not None and not can_download_report(request.user, report):
        raise Http404("No such report.")
    panel, request_name, pdf, statement = NAMES[K(kind)]
    context: dict[str, Any] = {
        "kind": kind,
        "title": K(kind).label,
        "report": report,
        "polling": report is not None and report.status in LIVE,
        "can_request": can_request,
        "panel_url": reverse(panel, args=[owner_id]),
        "request_url": reverse(request_name, args=[owner_id]),
        "pdf_url": reverse(pdf, args=[owner_id]),
        "statement_url": reverse(statement, args=[owner_id]),
        "key_url": reverse("report-key"),
    }
    if getattr(request, "htmx", False):
        return render(request, "gates/_report_panel.html", context)
    return render(request, "gates/report_page.html", context)


def _evaluation_panel(request: HttpRequest, evaluation: Evaluation) -> HttpResponse:
    return _panel(
        request,
        kind=K.EVALUATION,
        owner_id=evaluation.public_id,
        report=report_for_evaluation(evaluation),
        can_request=can_request_report(request.user, evaluation.rfp),
    )


@login_required
@require_safe
def evaluation_report(request: HttpRequest, evaluation_id: uuid.UUID) -> HttpResponse:
    return _evaluation_panel(request, _evaluation(request, evaluation_id))


def _certifiable(decision: Decision) -> bool:
    return (
        decision.kind == Decision.Kind.PROMOTE
        and decision.status == Decision.Status.RECORDED
    )


def _certificate_panel(request: HttpRequest, decision: Decision) -> HttpResponse:
    return _panel(
        request,
        kind=K.CERTIFICATE,
        owner_id=decision.public_id,
        report=report_for_decision(decision),
        can_request=_certifiable(decision)
        and can_request_report(request.user, decision.plan.rfp),
    )


@login_required
@require_safe
def decision_certificate(request: HttpRequest, decision_id: uuid.UUID) -> HttpResponse:
    return _certificate_panel(request, _decision(request, decision_id))


def _requested(request: SignedInRequest, call: Any) -> None:
    try:
        call()
    except ApplicationError as error:
        show_refusal(request, error)
    else:
        if not request.htmx:
            messages.success(request, "Requested: the report is rendered shortly.")


@login_required
@require_POST
def evaluation_report_request(
    request: SignedInRequest, evaluation_id: uuid.UUID
) -> HttpResponse:
    evaluation = _evaluation(request, evaluation_id)
    if not can_request_report(request.user, evaluation.rfp):
        raise PermissionDenied("Only those who may evaluate the gate request reports.")
    _requested(
        request, lambda: report_request(evaluation=evaluation, actor=request.user)
    )
    if request.htmx:
        return _evaluation_panel(request, evaluation)
    return redirect(reverse("gates:evaluation", args=[evaluation.public_id]))


@login_required
@require_POST
def decision_certificate_request(
    request: SignedInRequest, decision_id: uuid.UUID
) -> HttpResponse:
    decision = _decision(request, decision_id)
    if not can_request_report(request.user, decision.plan.rfp):
        raise PermissionDenied("Only those who may evaluate the gate request reports.")
    _requested(
        request,
        lambda: report_request(
            evaluation=decision.evaluation, actor=request.user, decision=decision
        ),
    )
    if request.htmx:
        return _certificate_panel(request, decision)
    args = [decision.plan.public_id, decision.gate]
    return redirect(reverse("gates:decisions", args=args))


def _download(request: SignedInRequest, report: Report | None, part: str) -> Any:
    if report is None or not can_download_report(request.user, report):
        raise Http404("No such report.")
    try:
        found = report_download(report=report, actor=request.user, part=part)
    except GatesConflict as refused:  # not ready yet
        return HttpResponse(refused.message, status=409, content_type="text/plain")
    response = HttpResponse(found.data, content_type=found.content_type)
    response["Content-Disposition"] = f'attachment; filename="{found.filename}"'
    response["X-Content-SHA256"] = found.sha256
    return response


@login_required
@require_GET  # not HEAD: a download is audited
def evaluation_report_pdf(
    request: SignedInRequest, evaluation_id: uuid.UUID
) -> HttpResponse:
    found = report_for_evaluation(_evaluation(request, evaluation_id))
    return _download(request, found, "pdf")


@login_required
@require_GET
def evaluation_report_statement(
    request: SignedInRequest, evaluation_id: uuid.UUID
) -> HttpResponse:
    found = report_for_evaluation(_evaluation(request, evaluation_id))
    return _download(request, found, "statement")


@login_required
@require_GET
def decision_certificate_pdf(
    request: SignedInRequest, decision_id: uuid.UUID
) -> HttpResponse:
    return _download(
        request, report_for_decision(_decision(request, decision_id)), "pdf"
    )


@login_required
@require_GET
def decision_certificate_statement(
    request: SignedInRequest, decision_id: uuid.UUID
) -> HttpResponse:
    found = report_for_decision(_decision(request, decision_id))
    return _download(request, found, "statement")


REPORT = "evaluations/<uuid:evaluation_id>/report/"
CERTIFICATE = "decisions/<uuid:decision_id>/certificate/"
urlpatterns: list[URLPattern] = [
    path(REPORT, evaluation_report, name="evaluation_report"),
    path(
        f"{REPORT}request/", evaluation_report_request, name="evaluation_report_request"
    ),
    path(f"{REPORT}report.pdf", evaluation_report_pdf, name="evaluation_report_pdf"),
    path(
        f"{REPORT}statement.json",
        evaluation_report_statement,
        name="evaluation_report_statement",
    ),
    path(CERTIFICATE, decision_certificate, name="decision_certificate"),
    path(
        f"{CERTIFICATE}request/",
        decision_certificate_request,
        name="decision_certificate_request",
    ),
    path(
        f"{CERTIFICATE}certificate.pdf",
        decision_certificate_pdf,
        name="decision_certificate_pdf",
    ),
    path(
        f"{CERTIFICATE}statement.json",
        decision_certificate_statement,
        name="decision_certificate_statement",
    ),
]
