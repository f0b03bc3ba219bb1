"""Output serializers that several procurement API modules share."""

from __future__ import annotations

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
