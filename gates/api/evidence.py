"""The evidence package of a gate evaluation (``gates.services.evidence``): a
streamed zip that ``reprogate evidence verify`` checks offline, re-evaluating
the gate and checking its reports.

Who may download it: ``gates.permissions.can_download_evaluation_evidence``;
anyone else gets 404, as if the evaluation did not exist."""

from __future__ import annotations

import uuid

from django.http import Http404, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.renderers import JSONRenderer
from rest_framework.views import APIView

from accounts.views.requests import SignedInApiRequest
from artifacts.api.escrow import ZipRenderer, package_response
from gates.api.access import evaluation_list_visible_to, one
from gates.api.serializers import READ_ERRORS
from gates.permissions import can_download_evaluation_evidence
from gates.services.evidence import evaluation_evidence_prepare


class EvaluationEvidenceApi(APIView):
    """The evaluation's evidence package: its deposit, the judged bundle's, its
    reports' deposits, their inclusion proofs, the signed checkpoint, the log,
    vendor and statement keys and a README. Each download is audited and
    logged."""

    renderer_classes = [JSONRenderer, ZipRenderer]
    http_method_names = ["get", "options"]  # a HEAD would log a download too

    @extend_schema(
        operation_id="gate_evaluation_evidence_package",
        responses={
            (200, "application/zip"): OpenApiResponse(OpenApiTypes.BINARY),
            **READ_ERRORS,
        },
    )
    def get(
        self, request: SignedInApiRequest, evaluation_id: uuid.UUID
    ) -> StreamingHttpResponse:
        evaluation = one(evaluation_list_visible_to(request.user), evaluation_id)
        if not can_download_evaluation_evidence(request.user, evaluation):
            raise Http404
        package = evaluation_evidence_prepare(evaluation=evaluation, actor=request.user)
        return package_response(package)
