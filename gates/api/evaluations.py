"""Evaluations: one as its three documents exactly as evaluated (GET), a gate of a
plan evaluated on a campaign (POST), and the runs an INCONCLUSIVE one needs
(POST more-runs).

The body of ``GET /api/v1/evaluations/<id>/`` is written from the stored
canonical texts themselves, never re-serialised: ``evaluation``, ``plan`` and
``results`` hold the bytes the engine read and wrote, so ``reprogate gate
evaluate --from`` on the saved body reproduces ``evaluation`` byte for byte.
Beside them: the evaluation's id, gate, verdict, digests and escrow log index."""

from __future__ import annotations

import json
import uuid
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.views.requests import SignedInApiRequest
from benchmarks.selectors.access import campaign_get_visible, can_add_runs
from gates.api.access import (
    evaluation_list_visible_to,
    one,
    require_evaluator,
)
from gates.api.serializers import READ_ERRORS, WRITE_ERRORS, DocumentField
from gates.models import Evaluation
from gates.selectors.plans import plan_list_visible_to
from gates.services.pipeline import gate_judge
from gates.services.runs import gate_schedule_more_runs


class EvaluationDocumentsSerializer(serializers.Serializer):
    """For the schema only: the body is written from the stored bytes."""

    class Meta:
        ref_name = "GateEvaluationDocuments"

    id = serializers.UUIDField()
    gate = serializers.CharField()
    verdict = serializers.CharField()
    rfp = serializers.CharField(help_text="The RFP's reference.")
    vendor = serializers.CharField(help_text="The vendor organisation's slug.")
    plan_version = serializers.IntegerField()
    campaign = serializers.UUIDField()
    evaluated_at = serializers.DateTimeField()
    plan_sha256 = serializers.CharField()
    results_sha256 = serializers.CharField()
    evaluation_sha256 = serializers.CharField()
    log_index = serializers.IntegerField(
        allow_null=True, help_text="The escrow deposit's transparency-log index."
    )
    evaluation = DocumentField(help_text="reprogate.evaluation/v1, as evaluated.")
    plan = DocumentField(help_text="reprogate.gate-plan/v1, as evaluated.")
    results = DocumentField(help_text="reprogate.results/v1, as evaluated.")


def evaluation_body(evaluation: Evaluation) -> bytes:
    """The response body: the extras as JSON, then the three stored texts as they
    are (each is canonical JSON already, so the body is valid JSON)."""
    deposit = evaluation.deposit
    extras: dict[str, Any] = {
        "id": str(evaluation.public_id),
        "gate": evaluation.gate,
        "verdict": evaluation.verdict,
        "rfp": evaluation.rfp.reference,
        "vendor": evaluation.vendor_organisation.slug,
        "plan_version": evaluation.plan.version,
        "campaign": str(evaluation.campaign.public_id),
        "evaluated_at": serializers.DateTimeField().to_representation(
            evaluation.evaluated_at
        ),
        "plan_sha256": evaluation.plan_sha256,
        "results_sha256": evaluation.results_sha256,
        "evaluation_sha256": evaluation.evaluation_sha256,
        "log_index": deposit.log_index if deposit is not None else None,
    }
    fields = [f"{json.dumps(k)}:{json.dumps(v)}" for k, v in extras.items()]
    fields += [
        f'"evaluation":{evaluation.evaluation_document}',
        f'"plan":{evaluation.plan_document}',
        f'"results":{evaluation.results_document}',
    ]
    return ("{" + ",".join(fields) + "}").encode("utf-8")


def _documents(evaluation: Evaluation, code: int = 200) -> HttpResponse:
    return HttpResponse(
        evaluation_body(evaluation), content_type="application/json", status=code
    )


class EvaluationDetailApi(APIView):
    """An evaluation's three documents exactly as evaluated (docs/gate-documents.md)."""

    @extend_schema(
        operation_id="gate_evaluation_detail",
        responses={200: EvaluationDocumentsSerializer, **READ_ERRORS},
    )
    def get(self, request: Request, evaluation_id: uuid.UUID) -> HttpResponse:
        evaluation = one(evaluation_list_visible_to(request.user), evaluation_id)
        self.check_object_permissions(request, evaluation)
        return _documents(evaluation)


class GateEvaluateApi(APIView):
    """Evaluate one gate of the current frozen plan on a campaign's runs as they
    are now; 409 if the plan is not the frozen one."""

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "GateEvaluateInput"

        campaign = serializers.UUIDField(help_text="A campaign of the plan's vendor.")

    @extend_schema(
        operation_id="gate_evaluate",
        request=InputSerializer,
        responses={201: EvaluationDocumentsSerializer, **WRITE_ERRORS},
    )
    def post(
        self, request: SignedInApiRequest, plan_id: uuid.UUID, gate: str
    ) -> HttpResponse:
        plan = one(plan_list_visible_to(request.user), plan_id)
        require_evaluator(request.user, plan.rfp)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        campaign = campaign_get_visible(request.user, data.validated_data["campaign"])
        if campaign is None:
            raise serializers.ValidationError({"campaign": "No such campaign."})
        evaluation = gate_judge(
            plan=plan, gate=gate, campaign=campaign, actor=request.user
        )
        return _documents(evaluation, status.HTTP_201_CREATED)


class EvaluationMoreRunsApi(APIView):
    """Schedule on the evaluation's campaign exactly the runs its INCONCLUSIVE
    criteria need (the pool's lab operators, the RFP's buyers); the gate is
    evaluated again when they finish. 409 when none are needed, they are
    scheduled already, or a later evaluation or plan version exists."""

    class OutputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "GateMoreRuns"

        evaluation = serializers.UUIDField()
        campaign = serializers.UUIDField()
        extra_runs = serializers.IntegerField(help_text="Runs added to the campaign.")
        automatic = serializers.BooleanField()
        requested_at = serializers.DateTimeField()

    @extend_schema(
        operation_id="gate_evaluation_more_runs",
        request=None,
        responses={
            201: OpenApiResponse(OutputSerializer),
            **WRITE_ERRORS,
        },
    )
    def post(self, request: SignedInApiRequest, evaluation_id: uuid.UUID) -> Response:
        evaluation = one(evaluation_list_visible_to(request.user), evaluation_id)
        if not can_add_runs(request.user, evaluation.campaign):
            raise PermissionDenied
        link = gate_schedule_more_runs(evaluation=evaluation, actor=request.user)
        data = {
            "evaluation": evaluation.public_id,
            "campaign": link.campaign.public_id,
            "extra_runs": link.extra_runs,
            "automatic": link.automatic,
            "requested_at": link.requested_at,
        }
        return Response(
            self.OutputSerializer(data).data, status=status.HTTP_201_CREATED
        )
