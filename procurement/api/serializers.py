from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from procurement.models import Rfp


class OrganisationRefSerializer(serializers.Serializer):
    id = serializers.UUIDField(source="public_id")
    slug = serializers.SlugField()
    name = serializers.CharField()


class RfpOutputSerializer(serializers.Serializer):
    """Needs ``context={"invited_scope": InvitedVendorScope}``: a vendor sees its own
    invitation only, never its competitors'."""

    id = serializers.UUIDField(source="public_id")
    reference = serializers.CharField()
    title = serializers.CharField()
    status = serializers.CharField(source="status_now")  # by the clock at read time
    submission_deadline = serializers.DateTimeField()
    buyer_organisation = OrganisationRefSerializer()
    invited_vendors = serializers.SerializerMethodField()

    @extend_schema_field(OrganisationRefSerializer(many=True))
    def get_invited_vendors(self, rfp: Rfp) -> list[dict[str, Any]]:
        visible = self.context["invited_scope"].visible(rfp)
        return OrganisationRefSerializer(visible, many=True).data  # type: ignore[return-value]
