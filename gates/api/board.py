"""The gate board of one RFP: per vendor the caller may see and gate of its
current plan, the latest evaluation's verdict and id, the decision state and
the open re-test obligations and the open dispute
(``gates.selectors.board.gate_board``)."""

from __future__ import annotations

import uuid
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.pagination import (
    PAGE_PARAMETERS,
    PagedDocumentSerializer,
    page_rows,
)
from gates.api.access import rfp_for
from gates.api.serializers import READ_ERRORS
from gates.permissions import can_see_gate_plan_drafts
from gates.selectors.board import BoardRow, GateCell, gate_board
from procurement.models import Rfp


def _decision(decision: Any) -> dict[str, Any] | None:
    if decision is None:
        return None
    return {
        "id": decision.public_id,
        "kind": decision.kind,
        "status": decision.status,
        "decided_at": decision.decided_at,
    }


def _gate(cell: GateCell) -> dict[str, Any]:
    evaluation = cell.evaluation
    latest = None
    if evaluation is not None:
        score = evaluation.score_pct
        latest = {
            "id": evaluation.public_id,
            "verdict": evaluation.verdict,
            "score_pct": float(score) if score is not None else None,
            "evaluated_at": evaluation.evaluated_at,
            "plan_version": evaluation.plan_version,  # type: ignore[attr-defined]
            "hosts": list(cell.hosts),
        }
    return {
        "gate": cell.gate,
        "stage": cell.stage,
        "latest_evaluation": latest,
        "decision": _decision(cell.decision),
        "pending_promotion": _decision(cell.pending),
        "open_obligations": {
            "count": cell.open_obligations,
            "ids": [o.public_id for o in cell.obligations],
        },
        "lab_deviation": cell.lab_deviation,
        "revalidation_due": cell.revalidation_due,
        "open_dispute": cell.dispute.public_id if cell.dispute else None,
    }


def _vendor(row: BoardRow, drafts: bool) -> dict[str, Any]:
    draft = row.draft if drafts else None
    return {
        "vendor": row.vendor.slug,
        "vendor_name": row.vendor.name,
        "plan": row.plan.public_id if row.plan else None,
        "plan_version": row.plan.version if row.plan else None,
        "draft": draft.public_id if draft else None,
        "gates": [_gate(cell) for cell in row.cells],
    }


def board_data(rfp: Rfp, rows: list[BoardRow], *, drafts: bool) -> dict[str, Any]:
    """``drafts``: show the draft plans' ids (the buyer side's work only)."""
    return {
        "rfp": rfp.public_id,
        "reference": rfp.reference,
        "vendors": [_vendor(row, drafts) for row in rows],
    }


class GateBoardApi(APIView):
    """Per vendor and gate: the latest evaluation, the decision, the open re-test
    obligations (a vendor sees its own row only)."""

    class OutputSerializer(PagedDocumentSerializer):
        class Meta:
            ref_name = "GateBoard"

        class BoardVendorSerializer(serializers.Serializer):
            class Meta:
                ref_name = "GateBoardVendor"

            class BoardGateSerializer(serializers.Serializer):
                class Meta:
                    ref_name = "GateBoardGate"

                class BoardDecisionSerializer(serializers.Serializer):
                    class Meta:
                        ref_name = "GateBoardDecision"

                    id = serializers.UUIDField()
                    kind = serializers.CharField()
                    status = serializers.CharField()
                    decided_at = serializers.DateTimeField()

                class BoardEvaluationSerializer(serializers.Serializer):
                    class Meta:
                        ref_name = "GateBoardEvaluation"

                    id = serializers.UUIDField()
                    verdict = serializers.CharField()
                    score_pct = serializers.FloatField(allow_null=True)
                    evaluated_at = serializers.DateTimeField()
                    plan_version = serializers.IntegerField()
                    hosts = serializers.ListField(
                        child=serializers.CharField(),
                        help_text="The lab hosts (worker names) that ran the "
                        "runs it judged.",
                    )

                class BoardObligationsSerializer(serializers.Serializer):
                    class Meta:
                        ref_name = "GateBoardObligations"

                    count = serializers.IntegerField()
                    ids = serializers.ListField(child=serializers.UUIDField())

                gate = serializers.CharField()
                stage = serializers.CharField()
                latest_evaluation = BoardEvaluationSerializer(allow_null=True)
                decision = BoardDecisionSerializer(
                    allow_null=True, help_text="The latest recorded decision."
                )
                pending_promotion = BoardDecisionSerializer(
                    allow_null=True,
                    help_text="A promotion waiting for its second sign-off.",
                )
                open_obligations = BoardObligationsSerializer()
                lab_deviation = serializers.BooleanField(
                    help_text="Failed on a lab environment the plan does not "
                    "accept: the lab's to answer, not the vendor's."
                )
                revalidation_due = serializers.BooleanField(
                    help_text="An update bundle changed the environment the gate "
                    "passed on: it is re-validated (a live update re-validation "
                    "obligation)."
                )
                open_dispute = serializers.UUIDField(
                    allow_null=True,
                    help_text="The vendor's open dispute of a verdict of the gate: "
                    "no promotion or rollback until it is decided.",
                )

            vendor = serializers.CharField(help_text="The vendor organisation's slug.")
            vendor_name = serializers.CharField()
            plan = serializers.UUIDField(
                allow_null=True, help_text="The current frozen plan."
            )
            plan_version = serializers.IntegerField(allow_null=True)
            draft = serializers.UUIDField(allow_null=True)
            gates = BoardGateSerializer(many=True)

        rfp = serializers.UUIDField()
        reference = serializers.CharField()
        vendors = BoardVendorSerializer(many=True, help_text="A page of the vendors.")

    @extend_schema(
        operation_id="gate_board",
        parameters=PAGE_PARAMETERS,
        responses={200: OutputSerializer, **READ_ERRORS},
    )
    def get(self, request: Request, rfp_id: uuid.UUID) -> Response:
        rfp = rfp_for(request.user, rfp_id)
        rows, page = page_rows(self, request, gate_board(rfp=rfp, user=request.user))
        drafts = can_see_gate_plan_drafts(request.user, rfp)
        data = page | board_data(rfp, rows, drafts=drafts)
        return Response(self.OutputSerializer(data).data)
