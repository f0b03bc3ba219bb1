"""The evidence package of a gate evaluation (``gates.services.evidence``): a
streamed zip that ``reprogate evidence verify`` checks offline, re-evaluating
the gate and checking its reports.

Who may download it: whoever sees the evaluation's escrow on its page — the
RFP's buyer side and the lab and audit organisations the buyer engages
(``gate_scope(...).full``) — and the vendor the evaluation is about, which sees
the evaluation's documents and reports already and may want to check the
verdict itself. The package holds the judged bundle's archive, so the caller
must also be one who may have that bundle's own package
(``artifacts.selectors.escrow.evidence_bundle_get``: sealed until the RFP is
opened). Anyone else gets 404, as if the evaluation did not exist."""

from __future__ import annotations

import uuid

from django.http import Http404, StreamingHttpResponse
from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.views import APIView

from artifacts.api.escrow import ZipRenderer
from artifacts.selectors.escrow import evidence_bundle_get
from gates.api.access import evaluation_list_visible_to, one
from gates.models import Evaluation
from gates.permissions import AnyUser, gate_scope
from gates.serializers import READ_ERRORS
from gates.services.evidence import evaluation_evidence_prepare


def _may_download(user: AnyUser, evaluation: Evaluation) -> bool:
    scope = gate_scope(user, evaluation.rfp)
    if not (scope.full or evaluation.vendor_organisation_id in scope.vendor_ids):
        return False
    return evidence_bundle_get(user, evaluation.campaign.bundle.public_id) is not None


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
    def get(self, request: Request, evaluation_id: uuid.UUID) -> StreamingHttpResponse:
        evaluation = one(evaluation_list_visible_to(request.user), evaluation_id)
        if evaluation.deposit is None or not _may_download(request.user, evaluation):
            raise Http404
        package = evaluation_evidence_prepare(evaluation=evaluation, actor=request.user)
        return StreamingHttpResponse(
            package.stream(),
            content_type="application/zip",
            headers={
                "Content-Disposition": f'attachment; filename="{package.filename}"',
                "Cache-Control": "no-store",
            },
        )


urlpatterns = [
    path(
        "evaluations/<uuid:evaluation_id>/evidence/",
        EvaluationEvidenceApi.as_view(),
        name="gate-evaluation-evidence",
    ),
]
