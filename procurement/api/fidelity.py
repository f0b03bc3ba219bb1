"""The fidelity matrix of an RFP (DESIGN §3b): per vendor and requirement, what
the RFP requires, what the vendor's accepted bundle declares, what the lab
captured, the verdict and where each value comes from. The buyer side sees every
vendor that bid once the bids are opened (an empty list while sealed); a vendor
only its own organisation; others who may know the RFP 403; outsiders 404."""

from __future__ import annotations

import uuid
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.pagination import (
    PAGE_PARAMETERS,
    PagedDocumentSerializer,
    page_rows,
)
from accounts.api.schema import error_response
from procurement.lib.fidelity import VERDICTS
from procurement.selectors.fidelity import RfpFidelity, fidelity_visible_to
from procurement.selectors.rfps import rfp_get_visible_or_404


def fidelity_document(fidelity: RfpFidelity) -> dict[str, Any]:
    return {
        "rfp": fidelity.rfp.reference,
        "sealed": fidelity.sealed,
        "vendors": [
            {
                "vendor": v.vendor.slug,
                "name": v.vendor.name,
                "approach": v.approach,
                **v.matrix.as_dict(),
            }
            for v in fidelity.vendors
        ],
    }


class RfpFidelityApi(APIView):
    class OutputSerializer(PagedDocumentSerializer):
        class Meta:
            ref_name = "RfpFidelity"

        class VendorSerializer(serializers.Serializer):
            class Meta:
                ref_name = "FidelityVendor"

            class RowSerializer(serializers.Serializer):
                class Meta:
                    ref_name = "FidelityRow"

                class ValueSerializer(serializers.Serializer):
                    class Meta:
                        ref_name = "FidelityValue"

                    value = serializers.JSONField(help_text="A string, number or list.")
                    source = serializers.CharField(  # type: ignore[assignment]
                        help_text="Where it comes from: an RFP clause path, a "
                        "manifest path (manifest.json:approach) or a run and the "
                        "capture's path."
                    )

                id = serializers.CharField(help_text="The requirement's path.")
                label = serializers.CharField()  # type: ignore[assignment]
                mandatory = serializers.BooleanField()
                required = ValueSerializer()  # type: ignore[assignment]
                declared = ValueSerializer(allow_null=True)
                captured = ValueSerializer(allow_null=True)
                verdict = serializers.ChoiceField(choices=VERDICTS)
                reason = serializers.CharField()

            vendor = serializers.CharField(help_text="The vendor organisation's slug.")
            name = serializers.CharField()
            approach = serializers.CharField(
                help_text="As its bundle declares ('' when it does not)."
            )
            bundle = serializers.CharField(allow_null=True)
            run = serializers.CharField(allow_null=True, help_text="The run captured.")
            counts = serializers.DictField(child=serializers.IntegerField())
            rows = RowSerializer(many=True)

        rfp = serializers.CharField()
        sealed = serializers.BooleanField()
        vendors = VendorSerializer(many=True, help_text="A page of the vendors.")

    @extend_schema(
        operation_id="rfp_fidelity",
        parameters=PAGE_PARAMETERS,
        responses={
            200: OutputSerializer,
            403: error_response(403),
            404: error_response(404),
        },
    )
    def get(self, request: Request, rfp_id: uuid.UUID) -> Response:
        rfp = rfp_get_visible_or_404(request.user, public_id=rfp_id)
        fidelity = fidelity_visible_to(request.user, rfp)
        if fidelity is None:
            raise PermissionDenied
        document = fidelity_document(fidelity)
        vendors, page = page_rows(self, request, document.pop("vendors"))
        data = page | document | {"vendors": vendors}
        return Response(self.OutputSerializer(data).data)
