"""Verdict disputes: the judged vendor contests an evaluation (within the RFP's
dispute window); the ones the caller may see (the buyer side: its RFPs'; a
vendor: its own; anyone else: none); one dispute; the buyer side upholds (a
re-test at the buyer's cost) or rejects it; the vendor withdraws it. A state
that forbids it (the window closed, one open already, decided) is 409."""

from __future__ import annotations

import uuid

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.pagination import PAGE_PARAMETERS, page_response, page_serializer
from accounts.views.requests import SignedInApiRequest
from artifacts.selectors.bundles import bundle_get_visible
from gates.api.access import (
    dispute_list_visible_to,
    evaluation_list_visible_to,
    one,
    require_buyer_side,
    require_vendor_member,
)
from gates.api.serializers import READ_ERRORS, WRITE_ERRORS
from gates.models import Dispute
from gates.models.disputes import REASON_MAX
from gates.services.disputes import (
    dispute_open,
    dispute_reject,
    dispute_uphold,
    dispute_withdraw,
)


class DisputeSerializer(serializers.Serializer):
    class Meta:
        ref_name = "GateDispute"

    id = serializers.UUIDField(source="public_id")
    rfp = serializers.UUIDField(source="rfp.public_id")
    rfp_reference = serializers.CharField(source="rfp.reference")
    vendor = serializers.CharField(source="vendor_organisation.slug")
    plan = serializers.UUIDField(source="plan.public_id")
    gate = serializers.CharField()
    evaluation = serializers.UUIDField(source="evaluation.public_id")
    verdict = serializers.CharField(
        source="evaluation.verdict", help_text="The verdict contested."
    )
    reason = serializers.CharField()
    bundle = serializers.UUIDField(
        source="bundle.public_id",
        allow_null=True,
        default=None,
        help_text="The revised bundle to re-run (null: the judged bundle).",
    )
    status = serializers.ChoiceField(choices=Dispute.Status.choices)
    opened_by = serializers.CharField(source="opened_by.username")
    opened_at = serializers.DateTimeField()
    decided_by = serializers.CharField(
        source="decided_by.username", allow_null=True, default=None
    )
    decided_at = serializers.DateTimeField(allow_null=True)
    decision_reason = serializers.CharField()
    retest = serializers.UUIDField(
        source="retest.public_id",
        allow_null=True,
        default=None,
        help_text="The buyer-funded re-test obligation an upheld dispute scheduled.",
    )
    log_index = serializers.IntegerField(
        allow_null=True, help_text="The transparency-log entry of its latest step."
    )


def _dispute(
    request: Request, dispute_id: uuid.UUID, code: int = status.HTTP_200_OK
) -> Response:
    found = one(dispute_list_visible_to(request.user), dispute_id)
    return Response(DisputeSerializer(found).data, status=code)


class DisputeOpenApi(APIView):
    """Contest the evaluation's verdict (the judged vendor's members, within the
    RFP's ``dispute_window_days`` of the evaluation; one open dispute each)."""

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "GateDisputeInput"

        reason = serializers.CharField(max_length=REASON_MAX)
        bundle = serializers.UUIDField(
            required=False,
            allow_null=True,
            default=None,
            help_text="A revised accepted bundle of yours on the RFP to re-run.",
        )

    @extend_schema(
        operation_id="gate_dispute_open",
        request=InputSerializer,
        responses={201: DisputeSerializer, **WRITE_ERRORS},
    )
    def post(self, request: SignedInApiRequest, evaluation_id: uuid.UUID) -> Response:
        evaluation = one(evaluation_list_visible_to(request.user), evaluation_id)
        require_vendor_member(request.user, evaluation.vendor_organisation_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        bundle_id = data.validated_data["bundle"]
        bundle = bundle_get_visible(request.user, bundle_id) if bundle_id else None
        if bundle_id and bundle is None:
            raise serializers.ValidationError({"bundle": "No such bundle."})
        dispute = dispute_open(
            evaluation=evaluation,
            reason=data.validated_data["reason"],
            bundle=bundle,
            actor=request.user,
        )
        return _dispute(request, dispute.public_id, status.HTTP_201_CREATED)


class DisputeListApi(APIView):
    """The disputes you may see, newest first."""

    PageSerializer = page_serializer("GateDisputePage", DisputeSerializer)

    @extend_schema(
        operation_id="gate_dispute_list",
        parameters=PAGE_PARAMETERS,
        responses={200: PageSerializer, **READ_ERRORS},
    )
    def get(self, request: Request) -> Response:
        disputes = dispute_list_visible_to(request.user).order_by("-opened_at", "-id")
        return page_response(self, request, disputes, DisputeSerializer)


class DisputeDetailApi(APIView):
    """One dispute: the reason, the outcome and the re-test it scheduled."""

    @extend_schema(
        operation_id="gate_dispute_detail",
        responses={200: DisputeSerializer, **READ_ERRORS},
    )
    def get(self, request: Request, dispute_id: uuid.UUID) -> Response:
        return _dispute(request, dispute_id)


class DisputeUpholdApi(APIView):
    """Uphold the dispute (buyer side): a re-test at the buyer's cost is
    scheduled (409 unless open)."""

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "GateDisputeUpholdInput"

        reason = serializers.CharField(
            max_length=REASON_MAX, allow_blank=True, required=False, default=""
        )

    @extend_schema(
        operation_id="gate_dispute_uphold",
        request=InputSerializer,
        responses={200: DisputeSerializer, **WRITE_ERRORS},
    )
    def post(self, request: SignedInApiRequest, dispute_id: uuid.UUID) -> Response:
        dispute = one(dispute_list_visible_to(request.user), dispute_id)
        require_buyer_side(request.user, dispute.rfp)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        dispute_uphold(dispute=dispute, actor=request.user, **data.validated_data)
        return _dispute(request, dispute_id)


class DisputeRejectApi(APIView):
    """Reject the dispute with a written reason (buyer side; 409 unless open)."""

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "GateDisputeRejectInput"

        reason = serializers.CharField(max_length=REASON_MAX)

    @extend_schema(
        operation_id="gate_dispute_reject",
        request=InputSerializer,
        responses={200: DisputeSerializer, **WRITE_ERRORS},
    )
    def post(self, request: SignedInApiRequest, dispute_id: uuid.UUID) -> Response:
        dispute = one(dispute_list_visible_to(request.user), dispute_id)
        require_buyer_side(request.user, dispute.rfp)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        dispute_reject(dispute=dispute, actor=request.user, **data.validated_data)
        return _dispute(request, dispute_id)


class DisputeWithdrawApi(APIView):
    """Withdraw your dispute (the vendor's members; 409 unless open)."""

    @extend_schema(
        operation_id="gate_dispute_withdraw",
        request=None,
        responses={200: DisputeSerializer, **WRITE_ERRORS},
    )
    def post(self, request: SignedInApiRequest, dispute_id: uuid.UUID) -> Response:
        dispute = one(dispute_list_visible_to(request.user), dispute_id)
        require_vendor_member(request.user, dispute.vendor_organisation_id)
        dispute_withdraw(dispute=dispute, actor=request.user)
        return _dispute(request, dispute_id)
