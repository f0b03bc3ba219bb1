"""Re-test obligations: the ones the caller may see (a vendor: its own), one
obligation, and the vendor's request to re-test it with a revised bundle."""

from __future__ import annotations

import uuid

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.pagination import PAGE_PARAMETERS, page_response, page_serializer
from accounts.views.requests import SignedInApiRequest
from artifacts.selectors.bundles import bundle_get_visible
from gates.api.access import (
    obligation_list_visible_to,
    one,
    require_vendor_member,
)
from gates.api.serializers import READ_ERRORS, WRITE_ERRORS
from gates.models import RetestObligation
from gates.services.obligations import obligation_request_retest


class ObligationSerializer(serializers.Serializer):
    class Meta:
        ref_name = "RetestObligation"

    id = serializers.UUIDField(source="public_id")
    rfp = serializers.UUIDField(source="rfp.public_id")
    rfp_reference = serializers.CharField(source="rfp.reference")
    vendor = serializers.CharField(source="vendor_organisation.slug")
    plan = serializers.UUIDField(source="plan.public_id")
    gate = serializers.CharField()
    kind = serializers.ChoiceField(
        choices=RetestObligation.Kind.choices,
        help_text="retest: a blocking criterion failed; update_revalidation: an "
        "update bundle changed the environment the gate passed on.",
    )
    evaluation = serializers.UUIDField(
        source="evaluation.public_id",
        allow_null=True,
        default=None,
        help_text="The evaluation that raised a re-test (null for a re-validation).",
    )
    canary_hosts = serializers.ListField(
        child=serializers.CharField(),
        help_text="A re-validation runs on these canary hosts first.",
    )
    criteria = serializers.ListField(child=serializers.CharField())
    reason = serializers.CharField()
    status = serializers.ChoiceField(
        choices=RetestObligation.Status.choices,
        source="status_now",
        help_text="By the clock at read time (past its deadline: expired).",
    )
    deadline = serializers.DateTimeField()
    max_attempts = serializers.IntegerField()
    attempts_used = serializers.IntegerField()
    attempts_left = serializers.IntegerField()
    cost_bearer = serializers.ChoiceField(choices=RetestObligation.CostBearer.choices)
    bundle = serializers.UUIDField(
        source="bundle.public_id", allow_null=True, default=None
    )
    campaign = serializers.UUIDField(
        source="campaign.public_id", allow_null=True, default=None
    )
    requested_at = serializers.DateTimeField(allow_null=True)
    closed_at = serializers.DateTimeField(allow_null=True)
    breached_at = serializers.DateTimeField(allow_null=True)


class ObligationListApi(APIView):
    """Your visible re-test obligations, soonest deadline first."""

    PageSerializer = page_serializer("RetestObligationPage", ObligationSerializer)

    @extend_schema(
        operation_id="retest_obligation_list",
        parameters=PAGE_PARAMETERS,
        responses={200: PageSerializer, **READ_ERRORS},
    )
    def get(self, request: Request) -> Response:
        obligations = obligation_list_visible_to(request.user).order_by(
            "deadline", "id"
        )
        return page_response(self, request, obligations, ObligationSerializer)


class ObligationDetailApi(APIView):
    """One re-test obligation: reason, deadline, attempts, cost bearer."""

    @extend_schema(
        operation_id="retest_obligation_detail",
        responses={200: ObligationSerializer, **READ_ERRORS},
    )
    def get(self, request: Request, obligation_id: uuid.UUID) -> Response:
        obligation = one(obligation_list_visible_to(request.user), obligation_id)
        self.check_object_permissions(request, obligation)
        return Response(ObligationSerializer(obligation).data)


class ObligationRequestApi(APIView):
    """The vendor asks for the re-test with its revised, accepted bundle on the
    RFP; the lab runs it (409 unless the obligation is open)."""

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "RetestRequestInput"

        bundle = serializers.UUIDField(help_text="Your revised, accepted bundle.")

    @extend_schema(
        operation_id="retest_obligation_request",
        request=InputSerializer,
        responses={200: ObligationSerializer, **WRITE_ERRORS},
    )
    def post(self, request: SignedInApiRequest, obligation_id: uuid.UUID) -> Response:
        obligation = one(obligation_list_visible_to(request.user), obligation_id)
        require_vendor_member(request.user, obligation.vendor_organisation_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        bundle = bundle_get_visible(request.user, data.validated_data["bundle"])
        if bundle is None:
            raise serializers.ValidationError({"bundle": "No such bundle."})
        obligation_request_retest(
            obligation=obligation, bundle=bundle, actor=request.user
        )
        obligation = one(obligation_list_visible_to(request.user), obligation_id)
        self.check_object_permissions(request, obligation)
        return Response(ObligationSerializer(obligation).data)
