"""TCO formula and award API: the formula versions the comparison uses and the
award with its rationale. Buyer side only (vendors 404, auditors and lab operators
403); the award answers 409 unless the bids are opened."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

from django.http import Http404
from django.urls import path
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from procurement.api.evaluation import BidRefSerializer, buyer_side_rfp, require_opened
from procurement.models import Award, Bid
from procurement.permissions import can_manage_rfp
from procurement.selectors.evaluation import tco_formula_current, tco_formula_list
from procurement.services.award import AWARD_RATIONALE_MIN, award_create
from procurement.services.evaluation import rfp_require_evaluation_open
from procurement.services.tco import HOURS_PER_YEAR_MAX, tco_formula_create

# --- TCO formula ----------------------------------------------------------------


class TcoFormulaOutputSerializer(serializers.Serializer):
    class Meta:
        ref_name = "TcoFormula"

    version = serializers.IntegerField()
    recorded = serializers.SerializerMethodField()
    pue = serializers.DecimalField(4, 2)
    utilisation = serializers.DecimalField(4, 3)
    hours_per_year = serializers.IntegerField()
    created_at = serializers.DateTimeField(allow_null=True)
    created_by = serializers.CharField(source="created_by.username", default=None)

    def get_recorded(self, formula: Any) -> bool:
        return formula.pk is not None


class TcoFormulaListApi(APIView):
    """The RFP's TCO formula versions, newest first (version 1 with the defaults,
    unrecorded, before any exists); POST records a new version (buyers, admins)."""

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "TcoFormulaInput"

        pue = serializers.DecimalField(4, 2, min_value=Decimal(1))
        utilisation = serializers.DecimalField(
            4, 3, min_value=Decimal("0.001"), max_value=Decimal(1)
        )
        hours_per_year = serializers.IntegerField(
            min_value=1, max_value=HOURS_PER_YEAR_MAX
        )

    @extend_schema(
        operation_id="rfp_tco_formula_list",
        responses={200: TcoFormulaOutputSerializer(many=True)},
    )
    def get(self, request: Request, rfp_id: uuid.UUID) -> Response:
        rfp = buyer_side_rfp(request, rfp_id)
        formulas = list(tco_formula_list(rfp)) or [tco_formula_current(rfp)]
        return Response(TcoFormulaOutputSerializer(formulas, many=True).data)

    @extend_schema(
        operation_id="rfp_tco_formula_create",
        request=InputSerializer,
        responses={201: TcoFormulaOutputSerializer},
    )
    def post(self, request: Request, rfp_id: uuid.UUID) -> Response:
        rfp = buyer_side_rfp(request, rfp_id)
        if not can_manage_rfp(request.user, rfp):
            raise PermissionDenied(
                "Only the RFP's buyers and admins change the formula."
            )
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        formula = tco_formula_create(rfp=rfp, actor=request.user, **data.validated_data)
        return Response(
            TcoFormulaOutputSerializer(formula).data, status=status.HTTP_201_CREATED
        )


# --- award ----------------------------------------------------------------------


class AwardOutputSerializer(serializers.Serializer):
    class Meta:
        ref_name = "Award"

    id = serializers.UUIDField(source="public_id")
    bid = BidRefSerializer()
    rationale = serializers.CharField()
    decided_by = serializers.CharField(source="decided_by.username")
    decided_at = serializers.DateTimeField()
    standstill_ends_at = serializers.DateTimeField()


class AwardApi(APIView):
    """GET the award (404 before there is one); POST awards the RFP to one of its
    submitted bids with a written rationale (buyers, admins; 409 unless opened)."""

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "AwardInput"

        bid = serializers.UUIDField()
        rationale = serializers.CharField(min_length=AWARD_RATIONALE_MIN)

    @extend_schema(operation_id="rfp_award_get", responses={200: AwardOutputSerializer})
    def get(self, request: Request, rfp_id: uuid.UUID) -> Response:
        rfp = require_opened(buyer_side_rfp(request, rfp_id))
        award = (
            Award.objects.filter(rfp=rfp)
            .select_related("bid__vendor_organisation", "decided_by")
            .first()
        )
        if award is None:
            raise Http404
        return Response(AwardOutputSerializer(award).data)

    @extend_schema(
        operation_id="rfp_award_create",
        request=InputSerializer,
        responses={201: AwardOutputSerializer},
    )
    def post(self, request: Request, rfp_id: uuid.UUID) -> Response:
        rfp = buyer_side_rfp(request, rfp_id)
        if not can_manage_rfp(request.user, rfp):
            raise PermissionDenied("Only the RFP's buyers and admins award.")
        rfp_require_evaluation_open(rfp)  # 409 before looking at any bid
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        bid = Bid.objects.filter(rfp=rfp, public_id=data.validated_data["bid"]).first()
        if bid is None:
            raise serializers.ValidationError({"bid": "No such bid on this RFP."})
        award = award_create(
            rfp=rfp,
            bid=bid,
            rationale=data.validated_data["rationale"],
            actor=request.user,
        )
        return Response(
            AwardOutputSerializer(award).data, status=status.HTTP_201_CREATED
        )


P = "rfps/<uuid:rfp_id>/"
urlpatterns = [
    path(f"{P}tco-formulas/", TcoFormulaListApi.as_view(), name="rfp-tco-formulas"),
    path(f"{P}award/", AwardApi.as_view(), name="rfp-award"),
]
