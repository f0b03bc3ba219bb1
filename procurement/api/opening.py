"""The two-person opening over the API: a buyer or admin requests it once the
RFP is closed, another buyer-side member confirms it (the bids unseal), the
requester may cancel a pending request. 404 for an RFP the caller may not know,
403 for a forbidden action, 409 for a refused move."""

from __future__ import annotations

import uuid
from typing import Any

from django.core.exceptions import PermissionDenied
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.views.requests import SignedInApiRequest
from procurement.models import BidOpening, Rfp
from procurement.permissions import can_manage_rfp, is_buyer_side
from procurement.selectors.rfps import rfp_get_visible_or_404
from procurement.services.opening import (
    bid_opening_cancel,
    bid_opening_confirm,
    bid_opening_request,
)


class OpeningSerializer(serializers.Serializer):
    class Meta:
        ref_name = "BidOpening"

    rfp_status = serializers.CharField(source="rfp.status")
    requested_by = serializers.CharField(source="requested_by.username")
    requested_at = serializers.DateTimeField()
    confirmed_by = serializers.CharField(
        source="confirmed_by.username", allow_null=True
    )
    confirmed_at = serializers.DateTimeField(allow_null=True)


def _opening(request: Request, rfp_id: uuid.UUID, allowed: Any) -> Rfp:
    rfp = rfp_get_visible_or_404(request.user, public_id=rfp_id)
    if not allowed(request.user, rfp):
        raise PermissionDenied
    return rfp


def _opening_result(opening: BidOpening, code: int = status.HTTP_200_OK) -> Response:
    opening.rfp.refresh_from_db(fields=["status"])
    return Response(OpeningSerializer(opening).data, status=code)


class BidOpeningRequestApi(APIView):
    """A buyer or admin requests the opening of a closed RFP's bids."""

    @extend_schema(
        operation_id="bid_opening_request",
        request=None,
        responses={201: OpeningSerializer},
    )
    def post(self, request: SignedInApiRequest, rfp_id: uuid.UUID) -> Response:
        rfp = _opening(request, rfp_id, can_manage_rfp)
        opening = bid_opening_request(rfp=rfp, actor=request.user)
        return _opening_result(opening, status.HTTP_201_CREATED)


class BidOpeningConfirmApi(APIView):
    """Another buyer-side member (not the requester) confirms: bids unseal."""

    @extend_schema(
        operation_id="bid_opening_confirm",
        request=None,
        responses={200: OpeningSerializer},
    )
    def post(self, request: SignedInApiRequest, rfp_id: uuid.UUID) -> Response:
        rfp = _opening(request, rfp_id, is_buyer_side)
        return _opening_result(bid_opening_confirm(rfp=rfp, actor=request.user))


class BidOpeningCancelApi(APIView):
    """The requester takes a pending request back."""

    @extend_schema(
        operation_id="bid_opening_cancel", request=None, responses={204: None}
    )
    def post(self, request: SignedInApiRequest, rfp_id: uuid.UUID) -> Response:
        rfp = _opening(request, rfp_id, can_manage_rfp)
        bid_opening_cancel(rfp=rfp, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
