"""Decisions on a gate: promote (pending until a second buyer-side person signs
it off), hold or rollback (recorded at once); a pending promotion seconded or
withdrawn. The rules (streak, stop-loss, previous gate) are the services'; a
refusal is 400 with its problems, a state that forbids it 409."""

from __future__ import annotations

import uuid

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.views.requests import SignedInApiRequest
from gates.api.access import (
    decision_list_visible_to,
    one,
    require_buyer_side,
)
from gates.api.serializers import WRITE_ERRORS
from gates.models import Decision
from gates.selectors.plans import plan_list_visible_to
from gates.services.decisions import (
    decision_record,
    decision_second,
    decision_withdraw,
)


class DecisionSerializer(serializers.Serializer):
    class Meta:
        ref_name = "GateDecision"

    id = serializers.UUIDField(source="public_id")
    plan = serializers.UUIDField(source="plan.public_id")
    gate = serializers.CharField()
    evaluation = serializers.UUIDField(source="evaluation.public_id")
    kind = serializers.CharField(help_text="promote, hold or rollback.")
    status = serializers.ChoiceField(choices=Decision.Status.choices)
    rationale = serializers.CharField()
    decided_by = serializers.CharField(source="decided_by.username")
    decided_at = serializers.DateTimeField()
    second_by = serializers.CharField(
        source="second_by.username", allow_null=True, default=None
    )
    second_at = serializers.DateTimeField(allow_null=True)
    second_note = serializers.CharField()
    withdrawn_by = serializers.CharField(
        source="withdrawn_by.username", allow_null=True, default=None
    )
    withdrawn_at = serializers.DateTimeField(allow_null=True)
    log_index = serializers.IntegerField(
        allow_null=True, help_text="The decision's transparency-log entry."
    )


def _decision(decision: Decision, code: int = status.HTTP_200_OK) -> Response:
    return Response(DecisionSerializer(decision).data, status=code)


class DecisionRecordApi(APIView):
    """Decide on a gate on the strength of its latest evaluation (buyer side)."""

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "GateDecisionInput"

        kind = serializers.ChoiceField(choices=Decision.Kind.choices)
        rationale = serializers.CharField(max_length=5000)

    @extend_schema(
        operation_id="gate_decision_record",
        request=InputSerializer,
        responses={201: DecisionSerializer, **WRITE_ERRORS},
    )
    def post(
        self, request: SignedInApiRequest, plan_id: uuid.UUID, gate: str
    ) -> Response:
        plan = one(plan_list_visible_to(request.user), plan_id)
        require_buyer_side(request.user, plan.rfp)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        decision = decision_record(
            plan=plan, gate=gate, actor=request.user, **data.validated_data
        )
        return _decision(decision, status.HTTP_201_CREATED)


class DecisionSecondApi(APIView):
    """The second sign-off of a pending promotion, by another buyer-side person."""

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "GateDecisionSecondInput"

        note = serializers.CharField(
            max_length=5000, allow_blank=True, required=False, default=""
        )

    @extend_schema(
        operation_id="gate_decision_second",
        request=InputSerializer,
        responses={200: DecisionSerializer, **WRITE_ERRORS},
    )
    def post(self, request: SignedInApiRequest, decision_id: uuid.UUID) -> Response:
        decision = one(decision_list_visible_to(request.user), decision_id)
        require_buyer_side(request.user, decision.plan.rfp)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        decision = decision_second(
            decision=decision, actor=request.user, **data.validated_data
        )
        return _decision(decision)


class DecisionWithdrawApi(APIView):
    """Withdraw a pending promotion (409 once recorded or withdrawn)."""

    @extend_schema(
        operation_id="gate_decision_withdraw",
        request=None,
        responses={200: DecisionSerializer, **WRITE_ERRORS},
    )
    def post(self, request: SignedInApiRequest, decision_id: uuid.UUID) -> Response:
        decision = one(decision_list_visible_to(request.user), decision_id)
        require_buyer_side(request.user, decision.plan.rfp)
        decision_withdraw(decision=decision, actor=request.user)
        return _decision(one(decision_list_visible_to(request.user), decision_id))
