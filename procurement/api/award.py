"""TCO formula and award API: the formula versions the comparison uses, and the
two-person award: a buyer or admin requests it (winning bid, rationale, and an
override reason while score sheets are missing), another buyer-side member
confirms it, any buyer-side member cancels a pending request. Buyer side only
(vendors 404, auditors and lab operators 403); 409 unless the bids are opened or
when no request is pending."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

from django.core.validators import RegexValidator
from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.pagination import PAGE_PARAMETERS, page_response, page_serializer
from accounts.api.schema import error_response
from accounts.views.requests import SignedInApiRequest
from procurement.api.evaluation import buyer_side_rfp, require_opened
from procurement.api.serializers import BidRefSerializer
from procurement.models import AwardRequest, Bid
from procurement.permissions import can_manage_rfp
from procurement.selectors.award import (
    award_get,
    award_request_pending,
    award_summary,
)
from procurement.selectors.evaluation import tco_formula_current, tco_formula_list
from procurement.services.award import (
    AWARD_RATIONALE_MIN,
    award_cancel,
    award_confirm,
    award_request,
)
from procurement.services.evaluation import rfp_require_evaluation_open
from procurement.services.tco import HOURS_PER_YEAR_MAX, tco_formula_create

# --- TCO formula ----------------------------------------------------------------


# 1 to 99.99, and 0.001 to 1, written with at most 2 and 3 decimals.
PUE_TEXT = RegexValidator(r"^0*[1-9]\d?(?:\.\d{0,2})?$", "Between 1 and 99.99.")
UTILISATION_TEXT = RegexValidator(
    r"^(?:0*1(?:\.0{0,3})?|0*\.(?:00[1-9]|0[1-9]\d?|[1-9]\d{0,2}))$",
    "Between 0.001 and 1.",
)


class TcoFormulaListApi(APIView):
    """The RFP's TCO formula versions, newest first (version 1 with the defaults,
    unrecorded, before any exists); POST records a new version (buyers, admins)."""

    class OutputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "TcoFormula"

        version = serializers.IntegerField()
        recorded = serializers.SerializerMethodField()
        pue = serializers.DecimalField(4, 2)
        utilisation = serializers.DecimalField(4, 3)
        hours_per_year = serializers.IntegerField()
        created_at = serializers.DateTimeField(allow_null=True)
        created_by = serializers.CharField(
            source="created_by.username", default=None, allow_null=True
        )

        def get_recorded(self, formula: Any) -> bool:
            return formula.pk is not None

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "TcoFormulaInput"

        # The bounds as patterns too: the OpenAPI document's decimals are text.
        pue = serializers.DecimalField(
            4, 2, min_value=Decimal(1), validators=[PUE_TEXT]
        )
        utilisation = serializers.DecimalField(
            4,
            3,
            min_value=Decimal("0.001"),
            max_value=Decimal(1),
            validators=[UTILISATION_TEXT],
        )
        hours_per_year = serializers.IntegerField(
            min_value=1, max_value=HOURS_PER_YEAR_MAX
        )

    @extend_schema(
        operation_id="rfp_tco_formula_list",
        parameters=PAGE_PARAMETERS,
        responses={200: page_serializer("TcoFormulaPage", OutputSerializer)},
    )
    def get(self, request: Request, rfp_id: uuid.UUID) -> Response:
        rfp = buyer_side_rfp(request, rfp_id)
        recorded = tco_formula_list(rfp)
        formulas = recorded if recorded.exists() else [tco_formula_current(rfp)]
        return page_response(self, request, formulas, self.OutputSerializer)

    @extend_schema(
        operation_id="rfp_tco_formula_create",
        request=InputSerializer,
        responses={201: OutputSerializer},
    )
    def post(self, request: SignedInApiRequest, rfp_id: uuid.UUID) -> Response:
        rfp = buyer_side_rfp(request, rfp_id)
        if not can_manage_rfp(request.user, rfp):
            raise PermissionDenied(
                "Only the RFP's buyers and admins change the formula."
            )
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        formula = tco_formula_create(rfp=rfp, actor=request.user, **data.validated_data)
        return Response(
            self.OutputSerializer(formula).data, status=status.HTTP_201_CREATED
        )


# --- award ----------------------------------------------------------------------


class AwardRequestOutputSerializer(serializers.Serializer):
    class Meta:
        ref_name = "AwardRequest"

    id = serializers.UUIDField(source="public_id")
    status = serializers.ChoiceField(AwardRequest.Status.choices)
    bid = BidRefSerializer()
    rationale = serializers.CharField()
    override_reason = serializers.CharField()
    gates_override_reason = serializers.CharField()
    fidelity_override_reason = serializers.CharField()
    sheets_submitted = serializers.IntegerField()
    sheets_expected = serializers.IntegerField()
    requested_by = serializers.CharField(source="requested_by.username")
    requested_at = serializers.DateTimeField()
    confirmed_by = serializers.CharField(
        source="confirmed_by.username", allow_null=True, default=None
    )
    confirmed_at = serializers.DateTimeField(allow_null=True)
    cancelled_by = serializers.CharField(
        source="cancelled_by.username", allow_null=True, default=None
    )
    cancelled_at = serializers.DateTimeField(allow_null=True)
    cancel_reason = serializers.CharField()


class AwardOutputSerializer(serializers.Serializer):
    class Meta:
        ref_name = "Award"

    id = serializers.UUIDField(source="public_id")
    bid = BidRefSerializer()
    rationale = serializers.CharField()
    decided_by = serializers.CharField(source="decided_by.username")
    decided_at = serializers.DateTimeField()
    standstill_ends_at = serializers.DateTimeField()
    requested_by = serializers.CharField(
        source="request.requested_by.username", allow_null=True, default=None
    )
    requested_at = serializers.DateTimeField(
        source="request.requested_at", allow_null=True, default=None
    )
    override_reason = serializers.CharField(
        source="request.override_reason", default=""
    )
    gates_override_reason = serializers.CharField(
        source="request.gates_override_reason", default=""
    )
    fidelity_override_reason = serializers.CharField(
        source="request.fidelity_override_reason", default=""
    )
    sheets_submitted = serializers.IntegerField(
        source="request.sheets_submitted", allow_null=True, default=None
    )
    sheets_expected = serializers.IntegerField(
        source="request.sheets_expected", allow_null=True, default=None
    )


class AwardApi(APIView):
    """The award (404 before there is one): winner, rationale, who requested and
    who confirmed it, and the override reason when score sheets were missing."""

    @extend_schema(
        operation_id="rfp_award_get",
        responses={200: AwardOutputSerializer, 409: error_response(409)},
    )
    def get(self, request: Request, rfp_id: uuid.UUID) -> Response:
        award = award_get(require_opened(buyer_side_rfp(request, rfp_id)))
        if award is None:
            raise Http404
        return Response(AwardOutputSerializer(award).data)


class AwardRequestApi(APIView):
    """GET the pending award request with the ranks, totals and completeness the
    confirmer signs (404 when none is pending); POST requests the award (buyers,
    admins): 400 while score sheets are missing unless ``override_reason`` says
    why the award cannot wait, and while the winner's lab validation has not
    passed unless ``gates_override_reason`` says why it may win anyway, and while
    its fidelity matrix shows a contradicted mandatory requirement unless
    ``fidelity_override_reason`` does."""

    class PendingAwardOutputSerializer(serializers.Serializer):
        """The pending request with what a confirmer is about to sign."""

        class Meta:
            ref_name = "PendingAward"

        class AwardSheetsSerializer(serializers.Serializer):
            class Meta:
                ref_name = "AwardSheets"

            submitted = serializers.IntegerField()
            expected = serializers.IntegerField()
            complete = serializers.BooleanField()
            missing = serializers.ListField(child=serializers.CharField())

        class AwardRankSerializer(serializers.Serializer):
            """
            One evaluated bid as the confirmer sees it (rank and total once the caller
            may see the consensus; the evidence completeness always)."""

            class Meta:
                ref_name = "AwardRank"

            bid = BidRefSerializer()
            rank = serializers.IntegerField(source="consensus.rank", default=None)
            weighted_total = serializers.DecimalField(
                5, 2, source="consensus.weighted_total", default=None
            )
            scores_complete = serializers.BooleanField(
                source="consensus.complete", default=None
            )
            mandatory_artifacts_present = serializers.IntegerField(
                source="evidence.mandatory_present"
            )
            mandatory_artifacts = serializers.IntegerField(
                source="evidence.mandatory_total"
            )
            lab_validation = serializers.CharField(
                source="lab.verdict",
                help_text="The vendor's latest lab-validation verdict; "
                "empty: not yet run.",
            )

        request = AwardRequestOutputSerializer()
        sheets = AwardSheetsSerializer()
        ranking = AwardRankSerializer(many=True)

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "AwardRequestInput"

        bid = serializers.UUIDField()
        rationale = serializers.CharField(min_length=AWARD_RATIONALE_MIN)
        override_reason = serializers.CharField(
            required=False, allow_blank=True, default="", max_length=5000
        )
        gates_override_reason = serializers.CharField(
            required=False, allow_blank=True, default="", max_length=5000
        )
        fidelity_override_reason = serializers.CharField(
            required=False, allow_blank=True, default="", max_length=5000
        )

    @extend_schema(
        operation_id="rfp_award_request_get",
        responses={200: PendingAwardOutputSerializer, 409: error_response(409)},
    )
    def get(self, request: Request, rfp_id: uuid.UUID) -> Response:
        rfp = require_opened(buyer_side_rfp(request, rfp_id))
        pending = award_request_pending(rfp)
        if pending is None:
            raise Http404
        summary = award_summary(request.user, rfp)
        data = {
            "request": pending,
            "sheets": summary.sheets,
            "ranking": summary.comparison.rows,
        }
        return Response(self.PendingAwardOutputSerializer(data).data)

    @extend_schema(
        operation_id="rfp_award_request",
        request=InputSerializer,
        responses={201: AwardRequestOutputSerializer},
    )
    def post(self, request: SignedInApiRequest, rfp_id: uuid.UUID) -> Response:
        rfp = buyer_side_rfp(request, rfp_id)
        if not can_manage_rfp(request.user, rfp):
            raise PermissionDenied("Only the RFP's buyers and admins request awards.")
        rfp_require_evaluation_open(rfp)  # 409 before looking at any bid
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        bid = Bid.objects.filter(rfp=rfp, public_id=fields.pop("bid")).first()
        if bid is None:
            raise serializers.ValidationError({"bid": "No such bid on this RFP."})
        pending = award_request(rfp=rfp, bid=bid, actor=request.user, **fields)
        return Response(
            AwardRequestOutputSerializer(pending).data, status=status.HTTP_201_CREATED
        )


class AwardConfirmApi(APIView):
    """Another buyer-side member (not the requester) confirms: the RFP is awarded."""

    @extend_schema(
        operation_id="rfp_award_confirm",
        request=None,
        responses={200: AwardOutputSerializer},
    )
    def post(self, request: SignedInApiRequest, rfp_id: uuid.UUID) -> Response:
        rfp = buyer_side_rfp(request, rfp_id)
        award = award_confirm(rfp=rfp, actor=request.user)
        return Response(AwardOutputSerializer(award).data)


class AwardCancelApi(APIView):
    """Any buyer-side member cancels the pending request: the requester withdraws
    it, another member declines it (with an optional reason)."""

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "AwardCancelInput"

        reason = serializers.CharField(
            required=False, allow_blank=True, default="", max_length=2000
        )

    @extend_schema(
        operation_id="rfp_award_cancel",
        request=InputSerializer,
        responses={200: AwardRequestOutputSerializer},
    )
    def post(self, request: SignedInApiRequest, rfp_id: uuid.UUID) -> Response:
        rfp = buyer_side_rfp(request, rfp_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        cancelled = award_cancel(rfp=rfp, actor=request.user, **data.validated_data)
        return Response(AwardRequestOutputSerializer(cancelled).data)
