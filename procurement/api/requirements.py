"""An RFP's requirements document (``reprogate.rfp-requirements/v1``): read by
the buyer side and, once published, by the invited vendors; replaced by the
buyer side while the RFP is a draft (after that, an addendum changes it).

The request schema states the document's vocabulary and limits
(``procurement.lib.requirements``, which has the last word: it also refuses a
range whose low end is above its high end and a workload id or metric given
twice, which no schema states)."""

from __future__ import annotations

import uuid
from typing import Any

from django.core.exceptions import PermissionDenied
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.parsers import JSONParser
from accounts.views.requests import SignedInApiRequest
from procurement.lib import requirements as lib
from procurement.permissions import can_manage_rfp
from procurement.selectors.requirements import requirements_document
from procurement.selectors.rfps import rfp_get_visible_or_404
from procurement.services.requirements import rfp_set_requirements


def _vocabulary(names: tuple[str, ...], **kwargs: Any) -> serializers.ListField:
    return serializers.ListField(
        child=serializers.ChoiceField(choices=list(names)),
        max_length=len(names),
        required=False,
        **kwargs,
    )


def _range(*, low: float, high: float, integers: bool) -> serializers.ListField:
    child: serializers.Field = (
        serializers.IntegerField(min_value=int(low), max_value=int(high))
        if integers
        else serializers.FloatField(min_value=low, max_value=high)
    )
    return serializers.ListField(
        child=child,
        min_length=2,
        max_length=2,
        required=False,
        help_text="[low, high], low <= high.",
    )


@extend_schema_field(
    {
        "type": "object",
        "maxProperties": lib.MAX_SDKS,
        "propertyNames": {"pattern": r"^[a-z][a-z0-9_-]{0,31}$"},
        "additionalProperties": {
            "type": "string",
            "maxLength": lib.MAX_SDK_SPEC_LENGTH,
            "pattern": rf"^{lib.SDK_SPEC_RE.pattern}$",
        },
        "description": 'SDK name to version clauses, e.g. {"cuda": ">=12.2"}.',
    }
)
class SdkField(serializers.DictField):
    child = serializers.CharField(max_length=lib.MAX_SDK_SPEC_LENGTH)


class WorkloadSerializer(serializers.Serializer):
    class Meta:
        ref_name = "RequirementsWorkload"
        closed = True

    id = serializers.RegexField(r"^[a-z0-9][a-z0-9._-]{0,63}$", max_length=64)
    model_family = serializers.ChoiceField(choices=list(lib.MODEL_FAMILIES))
    params_b = _range(low=lib.MIN_PARAMS_B, high=lib.MAX_PARAMS_B, integers=False)
    context_tokens = serializers.IntegerField(
        min_value=1, max_value=lib.MAX_CONTEXT_TOKENS, required=False
    )
    concurrency = _range(low=1, high=lib.MAX_CONCURRENCY, integers=True)
    tenants = serializers.IntegerField(
        min_value=1, max_value=lib.MAX_TENANTS, required=False
    )
    scenario_kinds = _vocabulary(lib.SCENARIO_KINDS)


class AcceleratorSerializer(serializers.Serializer):
    class Meta:
        ref_name = "RequirementsAccelerator"
        closed = True

    vendors = serializers.ListField(
        child=serializers.ChoiceField(choices=list(lib.ACCELERATOR_VENDORS)),
        min_length=1,
        max_length=len(lib.ACCELERATOR_VENDORS),
    )
    per_node = serializers.IntegerField(
        min_value=1, max_value=lib.MAX_PER_NODE, required=False
    )
    sdk = SdkField(required=False)


class FabricSerializer(serializers.Serializer):
    class Meta:
        ref_name = "RequirementsFabric"
        closed = True

    transports = _vocabulary(lib.TRANSPORTS)
    qos = serializers.BooleanField(required=False)


class EnvironmentSerializer(serializers.Serializer):
    class Meta:
        ref_name = "RequirementsEnvironment"
        closed = True

    pinned = _vocabulary(lib.PINNED_FIELDS)


class MetricSerializer(serializers.Serializer):
    class Meta:
        ref_name = "RequirementsMetric"
        closed = True

    metric = serializers.RegexField(r"^[a-z][a-z0-9_]{0,63}$", max_length=64)
    stats = serializers.ListField(
        child=serializers.RegexField(
            rf"^{lib.STAT_RE.pattern}$", max_length=lib.MAX_STAT_LENGTH
        ),
        max_length=lib.MAX_STATS,
        required=False,
    )
    series = serializers.BooleanField(required=False)


class ArtifactsSerializer(serializers.Serializer):
    class Meta:
        ref_name = "RequirementsArtifacts"
        closed = True

    mandatory = _vocabulary(lib.ARTIFACT_KINDS)
    bid_requires_bundle = serializers.BooleanField(required=False)


class RequirementsDocumentSerializer(serializers.Serializer):
    """A ``reprogate.rfp-requirements/v1`` document; a section left out requires
    nothing."""

    class Meta:
        ref_name = "RfpRequirements"
        closed = True

    schema = serializers.ChoiceField(choices=[lib.SCHEMA])
    approaches = _vocabulary(lib.APPROACHES)
    workloads = WorkloadSerializer(
        many=True, required=False, max_length=lib.MAX_WORKLOADS
    )
    accelerators = AcceleratorSerializer(
        many=True, required=False, max_length=lib.MAX_ACCELERATORS
    )
    fabric = FabricSerializer(required=False)
    environment = EnvironmentSerializer(required=False)
    metrics = MetricSerializer(many=True, required=False, max_length=lib.MAX_METRICS)
    artifacts = ArtifactsSerializer(required=False)


class RfpRequirementsApi(APIView):
    """GET: the RFP's requirements document (buyer side; invited vendors once it
    is published; anyone else 404). PUT: replace it, whole, while the RFP is a
    draft (buyer side; 409 after publication)."""

    parser_classes = [JSONParser]

    @extend_schema(
        operation_id="rfp_requirements",
        responses={200: RequirementsDocumentSerializer},
    )
    def get(self, request: Request, rfp_id: uuid.UUID) -> Response:
        rfp = rfp_get_visible_or_404(request.user, public_id=rfp_id)
        return Response(requirements_document(rfp))

    @extend_schema(
        operation_id="rfp_requirements_set",
        request=RequirementsDocumentSerializer,
        responses={200: RequirementsDocumentSerializer},
    )
    def put(self, request: SignedInApiRequest, rfp_id: uuid.UUID) -> Response:
        rfp = rfp_get_visible_or_404(request.user, public_id=rfp_id)
        if not can_manage_rfp(request.user, rfp):
            raise PermissionDenied
        RequirementsDocumentSerializer(data=request.data).is_valid(raise_exception=True)
        # the document as sent: the library, not DRF's coercions, reads it
        rfp = rfp_set_requirements(rfp=rfp, document=request.data, actor=request.user)
        return Response(requirements_document(rfp))
