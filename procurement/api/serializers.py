"""Output serializers that several procurement API modules share."""

from __future__ import annotations

from django.core.validators import RegexValidator
from rest_framework import serializers


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
