"""Signed reports over the API (docs/reports.md): an evaluation's benchmark
report and a recorded promotion's acceptance certificate — status and progress
(GET), a request or retry (POST, 202), the signed PDF and the DSSE envelope of
its in-toto statement (409 while not ready, naming the status) — and the
statement key.

Who: whoever sees the evaluation downloads its report (the buyer side, the
engaged lab and audit organisations, the vendor the report is about — never
another vendor: 404); requesting is for whoever may evaluate (403 otherwise).
Every download is audited (``report.downloaded``); HEAD is not offered, since
it would be a download too. The statement key is public, anonymous callers
included: anyone verifying a statement offline needs it, and it names nothing."""

from __future__ import annotations

import uuid
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import exceptions, serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.schema import error_response
from accounts.views.requests import SignedInApiRequest
from artifacts.lib.transparency.keyfile import LogKeyError
from gates.api.access import decision_list_visible_to, evaluation_list_visible_to, one
from gates.api.serializers import CONFLICT, NOT_FOUND, READ_ERRORS, WRITE_ERRORS
from gates.models import Decision, Evaluation, Report
from gates.permissions import can_download_report, can_request_report
from gates.selectors.reports import (
    report_for_decision,
    report_for_evaluation,
    report_statement_public_key_pem,
)
from gates.services.reports import report_download, report_request

PDF = "application/pdf"
PEM = "application/x-pem-file"
STATEMENT = "application/json"


class _Bytes(BaseRenderer):
    """Lets clients ask for the download's media type; errors still come as
    JSON (``accounts.api.errors``)."""

    def render(self, data: Any, accepted_media_type: Any = None, context: Any = None):
        return JSONRenderer().render(data) if isinstance(data, dict | list) else data


class PdfRenderer(_Bytes):
    media_type = PDF
    format = "pdf"


class PemRenderer(_Bytes):
    media_type = PEM
    format = "pem"


class ReportUrlsSerializer(serializers.Serializer):
    class Meta:
        ref_name = "GateReportUrls"

    pdf = serializers.CharField(allow_null=True, help_text="Once ready.")
    statement = serializers.CharField(allow_null=True, help_text="Once ready.")
    key = serializers.CharField(help_text="The statement key (PEM).")


class ReportSerializer(serializers.Serializer):
    class Meta:
        ref_name = "GateReport"

    id = serializers.UUIDField(source="public_id")
    kind = serializers.ChoiceField(choices=Report.Kind.choices)
    status = serializers.ChoiceField(choices=Report.Status.choices)
    progress_pct = serializers.IntegerField()
    progress_step = serializers.CharField()
    error = serializers.CharField(help_text="Why it failed (empty otherwise).")
    attempts = serializers.IntegerField()
    evaluation = serializers.UUIDField(source="evaluation.public_id")
    decision = serializers.UUIDField(
        source="decision.public_id", allow_null=True, default=None
    )
    pdf_sha256 = serializers.CharField()
    statement_sha256 = serializers.CharField()
    pages = serializers.IntegerField()
    timestamped = serializers.BooleanField(help_text="Has an RFC 3161 timestamp.")
    signer_fingerprint = serializers.CharField(
        help_text="SHA-256 of the signing certificate (DER)."
    )
    log_index = serializers.IntegerField(
        source="deposit.log_index",
        allow_null=True,
        default=None,
        help_text="The escrow deposit's transparency-log index.",
    )
    requested_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    urls = serializers.SerializerMethodField()

    @extend_schema_field(ReportUrlsSerializer)
    def get_urls(self, report: Report) -> dict[str, Any]:
        ready = report.status == Report.Status.READY
        if report.decision is not None:
            names, args = DECISION_NAMES, [report.decision.public_id]
        else:
            names, args = EVALUATION_NAMES, [report.evaluation.public_id]
        return {
            "pdf": reverse(names[0], args=args) if ready else None,
            "statement": reverse(names[1], args=args) if ready else None,
            "key": reverse("report-key"),
        }


EVALUATION_NAMES = ("gate-evaluation-report-pdf", "gate-evaluation-report-statement")
DECISION_NAMES = (
    "gate-decision-certificate-pdf",
    "gate-decision-certificate-statement",
)
NOT_READY = OpenApiResponse(
    CONFLICT.response, description="Not ready yet: the error names its status."
)


def _evaluation(request: Request, evaluation_id: uuid.UUID) -> Evaluation:
    return one(evaluation_list_visible_to(request.user), evaluation_id)


def _decision(request: Request, decision_id: uuid.UUID) -> Decision:
    return one(decision_list_visible_to(request.user), decision_id)


def _visible(request: Request, report: Report | None, what: str) -> Report:
    if report is None or not can_download_report(request.user, report):
        raise exceptions.NotFound(f"No {what} has been requested.")
    return report


def _evaluation_report(request: Request, evaluation_id: uuid.UUID) -> Report:
    found = report_for_evaluation(_evaluation(request, evaluation_id))
    return _visible(request, found, "report")


def _certificate(request: Request, decision_id: uuid.UUID) -> Report:
    found = report_for_decision(_decision(request, decision_id))
    return _visible(request, found, "certificate")


def _body(report: Report, code: int = status.HTTP_200_OK) -> Response:
    return Response(ReportSerializer(report).data, status=code)


def _download(request: SignedInApiRequest, report: Report, part: str) -> Any:
    """The ready report's PDF or statement, audited (409 while not ready)."""
    found = report_download(report=report, actor=request.user, part=part)
    response = HttpResponse(found.data, content_type=found.content_type)
    response["Content-Disposition"] = f'attachment; filename="{found.filename}"'
    response["X-Content-SHA256"] = found.sha256
    return response


REPORT_READ: dict[Any, Any] = {200: ReportSerializer, **READ_ERRORS}
REPORT_WRITE: dict[Any, Any] = {202: ReportSerializer, **WRITE_ERRORS}
# errors are JSON whatever the download's type: 401, 403 and 404 come from the
# central rules (accounts.api.schema), 409 and 503 are named with their type here
JSON = "application/json"
PDF_READ: dict[Any, Any] = {
    (200, PDF): OpenApiResponse(OpenApiTypes.BINARY),
    (409, JSON): NOT_READY,
}
STATEMENT_READ: dict[Any, Any] = {
    (200, STATEMENT): OpenApiResponse(
        OpenApiTypes.OBJECT, description="The DSSE envelope, as signed."
    ),
    (409, JSON): NOT_READY,
}


class EvaluationReportApi(APIView):
    """The evaluation's signed benchmark report: its status, progress, digests
    and download URLs (GET, 404 before one is requested); POST requests it, or
    again after a failure (202; the live report if there is one)."""

    @extend_schema(operation_id="gate_evaluation_report", responses=REPORT_READ)
    def get(self, request: Request, evaluation_id: uuid.UUID) -> Response:
        return _body(_evaluation_report(request, evaluation_id))

    @extend_schema(
        operation_id="gate_evaluation_report_request",
        request=None,
        responses=REPORT_WRITE,
    )
    def post(self, request: SignedInApiRequest, evaluation_id: uuid.UUID) -> Response:
        evaluation = _evaluation(request, evaluation_id)
        if not can_request_report(request.user, evaluation.rfp):
            raise PermissionDenied
        report = report_request(evaluation=evaluation, actor=request.user)
        return _body(report, status.HTTP_202_ACCEPTED)


class EvaluationReportPdfApi(APIView):
    """The signed benchmark report (PAdES), byte for byte; ``X-Content-SHA256``
    is its digest. 409 while it is not ready."""

    renderer_classes = [JSONRenderer, PdfRenderer]
    http_method_names = ["get", "options"]

    @extend_schema(
        operation_id="gate_evaluation_report_pdf",
        responses=PDF_READ,
    )
    def get(
        self, request: SignedInApiRequest, evaluation_id: uuid.UUID
    ) -> HttpResponse:
        report = _evaluation_report(request, evaluation_id)
        return _download(request, report, "pdf")


class EvaluationReportStatementApi(APIView):
    """The report's in-toto statement in its DSSE envelope, byte for byte
    (verify it with ``GET /api/v1/reports/key``). 409 while not ready."""

    http_method_names = ["get", "options"]

    @extend_schema(
        operation_id="gate_evaluation_report_statement",
        responses=STATEMENT_READ,
    )
    def get(
        self, request: SignedInApiRequest, evaluation_id: uuid.UUID
    ) -> HttpResponse:
        report = _evaluation_report(request, evaluation_id)
        return _download(request, report, "statement")


class DecisionCertificateApi(APIView):
    """A recorded promotion's acceptance certificate: status, progress, digests
    and download URLs (GET, 404 before one is requested); POST requests it, or
    again after a failure (202; 409 for a decision that is not a recorded
    promotion)."""

    @extend_schema(operation_id="gate_decision_certificate", responses=REPORT_READ)
    def get(self, request: Request, decision_id: uuid.UUID) -> Response:
        return _body(_certificate(request, decision_id))

    @extend_schema(
        operation_id="gate_decision_certificate_request",
        request=None,
        responses=REPORT_WRITE,
    )
    def post(self, request: SignedInApiRequest, decision_id: uuid.UUID) -> Response:
        decision = _decision(request, decision_id)
        if not can_request_report(request.user, decision.plan.rfp):
            raise PermissionDenied
        report = report_request(
            evaluation=decision.evaluation, actor=request.user, decision=decision
        )
        return _body(report, status.HTTP_202_ACCEPTED)


class DecisionCertificatePdfApi(APIView):
    """The signed acceptance certificate (PAdES), byte for byte. 409 while it is
    not ready."""

    renderer_classes = [JSONRenderer, PdfRenderer]
    http_method_names = ["get", "options"]

    @extend_schema(
        operation_id="gate_decision_certificate_pdf",
        responses=PDF_READ,
    )
    def get(self, request: SignedInApiRequest, decision_id: uuid.UUID) -> HttpResponse:
        report = _certificate(request, decision_id)
        return _download(request, report, "pdf")


class DecisionCertificateStatementApi(APIView):
    """The certificate's in-toto statement in its DSSE envelope. 409 while it is
    not ready."""

    http_method_names = ["get", "options"]

    @extend_schema(
        operation_id="gate_decision_certificate_statement",
        responses=STATEMENT_READ,
    )
    def get(self, request: SignedInApiRequest, decision_id: uuid.UUID) -> HttpResponse:
        report = _certificate(request, decision_id)
        return _download(request, report, "statement")


class NoReportSigned(exceptions.NotFound):
    default_code = "no_report_signed"
    default_detail = "No report has been signed yet: there is no statement key."


class ReportKeyUnavailable(exceptions.APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_code = "report_key_unavailable"
    default_detail = "The statement key cannot be read; the operators must look."


class ReportKeyApi(APIView):
    """The Ed25519 public key every report's in-toto statement is signed with
    (PEM SubjectPublicKeyInfo). Public: anyone, signed in or not, may verify a
    statement. 404 before the first report is signed (a read never makes it)."""

    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]
    renderer_classes = [JSONRenderer, PemRenderer]

    @extend_schema(
        operation_id="report_statement_key",
        auth=[],
        responses={
            (200, PEM): OpenApiResponse(OpenApiTypes.STR),
            (404, JSON): NOT_FOUND,
            (503, JSON): error_response(503),
        },
    )
    def get(self, request: Request) -> HttpResponse:
        try:
            pem = report_statement_public_key_pem()
        except LogKeyError as error:
            raise ReportKeyUnavailable from error
        if pem is None:
            raise NoReportSigned
        response = HttpResponse(pem, content_type=PEM)
        response["Content-Disposition"] = 'inline; filename="reports.pub"'
        return response
