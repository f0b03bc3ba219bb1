"""Output serializers the gates API shares between its operations, and the error
answers its operations document (the API's one error shape)."""

from __future__ import annotations

import json
from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema_field
from rest_framework import serializers

from accounts.api.errors import ErrorSerializer
from gates.models import Decision, GatePlan, RetestObligation


def _error(text: str) -> OpenApiResponse:
    return OpenApiResponse(ErrorSerializer, description=text)


BAD_INPUT = _error("Bad input: every problem with its path.")
NOT_SIGNED_IN = _error("No valid token or session.")
FORBIDDEN = _error("You may see it but not do this.")
NOT_FOUND = _error("No such object, or not one you may see.")
CONFLICT = _error("Its current state refuses the request.")

READ_ERRORS: dict[int, OpenApiResponse] = {401: NOT_SIGNED_IN, 404: NOT_FOUND}
WRITE_ERRORS: dict[int, OpenApiResponse] = {
    400: BAD_INPUT,
    401: NOT_SIGNED_IN,
    403: FORBIDDEN,
    404: NOT_FOUND,
    409: CONFLICT,
}


@extend_schema_field({"type": "object", "additionalProperties": True})
class DocumentField(serializers.Field):
    """A stored canonical JSON text as the object it holds."""

    def to_representation(self, value: str) -> Any:
        return json.loads(value)


class EvaluationSummarySerializer(serializers.Serializer):
    class Meta:
        ref_name = "GateEvaluationSummary"

    id = serializers.UUIDField(source="public_id")
    gate = serializers.CharField()
    verdict = serializers.CharField()
    score_pct = serializers.DecimalField(
        max_digits=6, decimal_places=2, allow_null=True, coerce_to_string=False
    )
    evaluated_at = serializers.DateTimeField()
    plan = serializers.UUIDField(source="plan.public_id")
    plan_version = serializers.IntegerField(source="plan.version")
    campaign = serializers.UUIDField(source="campaign.public_id")
    max_drift = serializers.CharField()
    stop_loss_triggered = serializers.BooleanField()
    more_runs_needed = serializers.IntegerField()
    evaluation_sha256 = serializers.CharField()


class PlanSerializer(serializers.Serializer):
    class Meta:
        ref_name = "GatePlan"

    id = serializers.UUIDField(source="public_id")
    rfp = serializers.UUIDField(source="rfp.public_id")
    rfp_reference = serializers.CharField(source="rfp.reference")
    vendor = serializers.CharField(source="vendor_organisation.slug")
    version = serializers.IntegerField()
    status = serializers.ChoiceField(choices=GatePlan.Status.choices)
    sha256 = serializers.CharField(help_text="SHA-256 of the canonical document.")
    document = DocumentField(help_text="The reprogate.gate-plan/v1 document.")
    lab_environment_accepted = serializers.BooleanField()
    lab_environment_note = serializers.CharField()
    max_extra_runs = serializers.IntegerField()
    bundle = serializers.UUIDField(
        source="bundle.public_id", allow_null=True, default=None
    )
    supersedes = serializers.UUIDField(
        source="supersedes.public_id", allow_null=True, default=None
    )
    created_at = serializers.DateTimeField()
    frozen_at = serializers.DateTimeField(allow_null=True)
    frozen_by = serializers.CharField(
        source="frozen_by.username", allow_null=True, default=None
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


class ObligationSerializer(serializers.Serializer):
    class Meta:
        ref_name = "RetestObligation"

    id = serializers.UUIDField(source="public_id")
    rfp = serializers.UUIDField(source="rfp.public_id")
    rfp_reference = serializers.CharField(source="rfp.reference")
    vendor = serializers.CharField(source="vendor_organisation.slug")
    plan = serializers.UUIDField(source="plan.public_id")
    gate = serializers.CharField()
    evaluation = serializers.UUIDField(source="evaluation.public_id")
    criteria = serializers.ListField(child=serializers.CharField())
    reason = serializers.CharField()
    status = serializers.ChoiceField(
        choices=RetestObligation.Status.choices,
        source="status_now",
        help_text="By the clock at read time (past its deadline: expired).",
    )
    deadline = serializers.DateTimeField()
    max_attempts = serializers.IntegerField()
    attempts_used = serializers.IntegerField()
    attempts_left = serializers.IntegerField()
    cost_bearer = serializers.ChoiceField(choices=RetestObligation.CostBearer.choices)
    bundle = serializers.UUIDField(
        source="bundle.public_id", allow_null=True, default=None
    )
    campaign = serializers.UUIDField(
        source="campaign.public_id", allow_null=True, default=None
    )
    requested_at = serializers.DateTimeField(allow_null=True)
    closed_at = serializers.DateTimeField(allow_null=True)
    breached_at = serializers.DateTimeField(allow_null=True)
