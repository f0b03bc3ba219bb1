"""Output serializers that several procurement API modules share."""

from __future__ import annotations

from typing import Any

from django.core.validators import RegexValidator
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from procurement.lib import requirements as lib


class VendorSerializer(serializers.Serializer):
    class Meta:
        ref_name = "EvaluationVendor"

    slug = serializers.SlugField()
    name = serializers.CharField()


class BidRefSerializer(serializers.Serializer):
    class Meta:
        ref_name = "EvaluationBid"

    id = serializers.UUIDField(source="public_id")
    vendor = VendorSerializer(source="vendor_organisation")


class OrganisationRefSerializer(serializers.Serializer):
    id = serializers.UUIDField(source="public_id")
    slug = serializers.SlugField()
    name = serializers.CharField()


# Request texts whose rules the OpenAPI document states as patterns (it knows the
# raw text; DRF trims whitespace first, so the patterns allow it at both ends).
# Spelled out: what ``\s`` matches differs between regex dialects (U+0085).
_BREAKS = r"\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029"  # str.splitlines()' line breaks
_SPACE = (  # str.isspace()
    r"\t\n\x0b\x0c\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
)
ONE_LINE_TEXT = RegexValidator(
    rf"^[{_SPACE}]*[^\x00{_BREAKS}]*[^\x00{_SPACE}][^\x00{_BREAKS}]*[{_SPACE}]*$",
    "The title must be one line: remove its line breaks.",
)
# 0 to 100 with at most two decimals (what a percentage field of an RFP stores).
PERCENT_TEXT = RegexValidator(
    r"^(?:0*100(?:\.0{0,2})?|0*\d{1,2}(?:\.\d{0,2})?|0*\.\d{1,2})$",
    "Between 0 and 100, with at most two decimals.",
)


# --- the requirements document (reprogate.rfp-requirements/v1) ---------------------
# the request schema of its PUT and of an addendum that changes it


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
    # ListField, not many=True: drf-spectacular states a ListField's maxItems
    workloads = serializers.ListField(
        child=WorkloadSerializer(), max_length=lib.MAX_WORKLOADS, required=False
    )
    accelerators = serializers.ListField(
        child=AcceleratorSerializer(), max_length=lib.MAX_ACCELERATORS, required=False
    )
    fabric = FabricSerializer(required=False)
    environment = EnvironmentSerializer(required=False)
    metrics = serializers.ListField(
        child=MetricSerializer(), max_length=lib.MAX_METRICS, required=False
    )
    artifacts = ArtifactsSerializer(required=False)
