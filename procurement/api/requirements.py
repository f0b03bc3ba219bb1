"""An RFP's requirements document (``reprogate.rfp-requirements/v1``): read by
the buyer side and, once published, by the invited vendors; replaced by the
buyer side while the RFP is a draft (after that, an addendum changes it).

The request schema states the document's vocabulary and limits
(``procurement.lib.requirements``, which has the last word: it also refuses a
range whose low end is above its high end and a workload id or metric given
twice, which no schema states)."""

from __future__ import annotations

import uuid

from django.core.exceptions import PermissionDenied
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.parsers import JSONParser
from accounts.views.requests import SignedInApiRequest
from procurement.api.serializers import RequirementsDocumentSerializer
from procurement.permissions import can_manage_rfp
from procurement.selectors.requirements import requirements_document
from procurement.selectors.rfps import rfp_get_visible_or_404
from procurement.services.requirements import rfp_set_requirements


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
