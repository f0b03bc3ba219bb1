"""RFP API: list, read, author (create a draft, patch it), publish, cancel, invite.

GET and the authoring call on the same collection or item share one APIView (DRF
routes by URL, not by method); each method has its own operation id."""

from __future__ import annotations

import uuid
from typing import Any

from django.core.exceptions import PermissionDenied
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.pagination import (
    PAGE_PARAMETERS,
    LimitOffsetPagination,
    page_response,
    page_serializer,
)
from accounts.api.parsers import JSONParser
from accounts.lib.paging import PAGE_SIZE
from accounts.models import Organisation
from accounts.views.requests import SignedInApiRequest
from procurement.api.serializers import (
    ONE_LINE_TEXT,
    PERCENT_TEXT,
    OrganisationRefSerializer,
)
from procurement.models import ArtifactKind, Rfp
from procurement.models.rfp import REFERENCE_VALIDATOR
from procurement.permissions import can_manage_rfp
from procurement.selectors.rfps import (
    invited_vendor_scope_for,
    managed_buyer_organisations,
    rfp_get_visible_or_404,
    rfp_list_visible_to,
    rfp_template_list_for,
    rfp_with_configuration,
)
from procurement.services.cancellation import rfp_cancel
from procurement.services.rfp_lifecycle import rfp_publish
from procurement.services.rfps import rfp_configure, rfp_create, rfp_invite_vendor
from procurement.services.templates import rfp_create_from_template

# --- shared output ------------------------------------------------------------------


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

    invited_vendor_count = serializers.SerializerMethodField()
    invited_vendors_url = serializers.SerializerMethodField()

    @extend_schema_field(
        OrganisationRefSerializer(
            many=True,
            help_text=f"The first {PAGE_SIZE}; invited_vendors_url pages them all.",
        )
    )
    def get_invited_vendors(self, rfp: Rfp) -> list[dict[str, Any]]:
        visible = self.context["invited_scope"].visible(rfp)[:PAGE_SIZE]
        return OrganisationRefSerializer(visible, many=True).data  # type: ignore[return-value]

    @extend_schema_field(serializers.IntegerField())
    def get_invited_vendor_count(self, rfp: Rfp) -> int:
        return len(self.context["invited_scope"].visible(rfp))

    @extend_schema_field(serializers.CharField())
    def get_invited_vendors_url(self, rfp: Rfp) -> str:
        return reverse("rfp-invite", args=[rfp.public_id])


class RfpSummaryOutputSerializer(RfpOutputSerializer):
    class Meta:
        ref_name = "RfpSummary"

    questions_deadline = serializers.DateTimeField(allow_null=True)
    min_bids = serializers.IntegerField()
    created_at = serializers.DateTimeField()


class ArtifactSerializer(serializers.Serializer):
    class Meta:
        ref_name = "RfpRequiredArtifact"

    kind = serializers.ChoiceField(choices=ArtifactKind.choices)
    title = serializers.CharField(max_length=200)
    guidance = serializers.CharField(allow_blank=True, required=False, default="")
    mandatory = serializers.BooleanField(required=False, default=True)


class MetricSerializer(serializers.Serializer):
    class Meta:
        ref_name = "RfpRequiredMetric"

    name = serializers.CharField(max_length=64)
    stats = serializers.CharField(
        max_length=100, allow_blank=True, required=False, default=""
    )
    series = serializers.BooleanField(
        required=False, default=False, help_text="Reported as a time series too."
    )
    description = serializers.CharField(
        max_length=200, allow_blank=True, required=False, default=""
    )


class CriterionSerializer(serializers.Serializer):
    class Meta:
        ref_name = "RfpCriterion"

    name = serializers.CharField(max_length=120)
    description = serializers.CharField(allow_blank=True, required=False, default="")
    weight = serializers.IntegerField(min_value=0, max_value=100)


class TermsSerializer(serializers.Serializer):
    class Meta:
        ref_name = "RfpContractTerms"

    escrow_clause = serializers.CharField()
    escrow_retention_years = serializers.IntegerField(allow_null=True)
    acceptance_clause = serializers.CharField()
    retest_clause = serializers.CharField()
    retest_tolerance_pct = serializers.DecimalField(max_digits=5, decimal_places=2)
    retest_vendor_funded = serializers.BooleanField()
    retest_deadline_days = serializers.IntegerField()
    retest_max_attempts = serializers.IntegerField()
    audit_rights_clause = serializers.CharField()
    dispute_window_days = serializers.IntegerField()
    update_deposit_days = serializers.IntegerField()
    drift_policy = serializers.JSONField()
    standstill_days = serializers.IntegerField()
    frozen_at = serializers.DateTimeField(source="terms_frozen_at", allow_null=True)


class RfpDetailOutputSerializer(RfpSummaryOutputSerializer):
    """Needs the RFP's rows prefetched (``rfp_with_configuration``)."""

    class Meta:
        ref_name = "RfpDetail"

    description = serializers.CharField()
    workload_requirements = serializers.CharField()
    addendum_extension_days = serializers.IntegerField()
    closed_at = serializers.DateTimeField(allow_null=True)
    opened_at = serializers.DateTimeField(allow_null=True)
    terms = TermsSerializer(source="*")
    artifacts = ArtifactSerializer(many=True)
    metrics = MetricSerializer(many=True)
    criteria = CriterionSerializer(many=True)


def _detail(request: Request, rfp: Rfp, code: int = status.HTTP_200_OK) -> Response:
    rfp = rfp_with_configuration(rfp)
    context = {"invited_scope": invited_vendor_scope_for(request.user)}
    return Response(RfpDetailOutputSerializer(rfp, context=context).data, status=code)


def _rfp_for(request: Request, rfp_id: uuid.UUID, *, manage: bool = False) -> Rfp:
    """404 if the caller may not know the RFP; 403 if ``manage`` and they may not
    author it. Its status is read by the clock (writes apply deadlines)."""
    rfp = rfp_get_visible_or_404(request.user, public_id=rfp_id)
    if manage and not can_manage_rfp(request.user, rfp):
        raise PermissionDenied
    return rfp


# --- collection ---------------------------------------------------------------------


class RfpListApi(APIView):
    """RFPs visible to the caller, soonest deadline first (GET); a new draft (POST)."""

    parser_classes = [
        JSONParser
    ]  # a form's fields cannot say null (questions_deadline)

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "RfpCreateInput"

        reference = serializers.CharField(
            max_length=40, validators=[REFERENCE_VALIDATOR]
        )
        title = serializers.CharField(max_length=200, validators=[ONE_LINE_TEXT])
        submission_deadline = serializers.DateTimeField()
        questions_deadline = serializers.DateTimeField(required=False, allow_null=True)
        buyer_organisation = serializers.SlugField(
            required=False, help_text="Slug; needed only if you author for several."
        )
        template = serializers.UUIDField(
            required=False,
            help_text="Start from this template instead of the defaults.",
        )

    class PageSerializer(serializers.Serializer):
        class Meta:
            ref_name = "RfpPage"

        count = serializers.IntegerField()
        next = serializers.URLField(allow_null=True)
        previous = serializers.URLField(allow_null=True)
        results = RfpSummaryOutputSerializer(many=True)

    @extend_schema(
        operation_id="rfp_list",
        parameters=[
            *PAGE_PARAMETERS,
            OpenApiParameter("status", str, enum=Rfp.Status.values),
        ],
        responses={200: PageSerializer},
    )
    def get(self, request: Request) -> Response:
        rfps = rfp_list_visible_to(request.user)
        wanted = request.query_params.get("status", "")
        if wanted and wanted not in Rfp.Status.values:
            raise serializers.ValidationError({"status": f"Unknown status {wanted!r}."})
        if wanted:
            rfps = rfps.filter(effective_status=wanted)
        paginator = LimitOffsetPagination()
        page = paginator.paginate_queryset(
            rfps.prefetch_related("invited_vendors"), request, view=self
        )
        context = {"invited_scope": invited_vendor_scope_for(request.user)}
        data = RfpSummaryOutputSerializer(page, many=True, context=context).data
        return paginator.get_paginated_response(data)

    @extend_schema(
        operation_id="rfp_create",
        request=InputSerializer,
        responses={201: RfpDetailOutputSerializer},
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        rfp = _create(request.user, dict(data.validated_data))
        return _detail(request, rfp, status.HTTP_201_CREATED)


def _buyer_for(user: Any, slug: str | None) -> Organisation:
    """The buyer organisation to author for: 403 if none, 400 if ambiguous."""
    organisations = list(managed_buyer_organisations(user))
    if slug is not None:
        organisations = [o for o in organisations if o.slug == slug]
    if not organisations:
        raise PermissionDenied
    if len(organisations) > 1:
        raise serializers.ValidationError(
            {"buyer_organisation": "You author for several; name one by its slug."}
        )
    return organisations[0]


def _create(user: Any, data: dict[str, Any]) -> Rfp:
    buyer = _buyer_for(user, data.pop("buyer_organisation", None))
    template_id = data.pop("template", None)
    if template_id is None:
        return rfp_create(buyer_organisation=buyer, actor=user, **data)
    template = rfp_template_list_for(user).filter(
        public_id=template_id, buyer_organisation=buyer
    )
    if not template.exists():
        raise serializers.ValidationError({"template": "No such template."})
    return rfp_create_from_template(template=template.get(), actor=user, **data)


# --- one RFP ------------------------------------------------------------------------


class RfpDetailApi(APIView):
    """One RFP; 404 when the caller may not know it exists. PATCH edits a draft
    (JSON: its lists, and a null, have no form field)."""

    class InputSerializer(serializers.Serializer):
        """Every field optional; a list given replaces the whole list."""

        class Meta:
            ref_name = "RfpPatchInput"

        reference = serializers.CharField(
            max_length=40, required=False, validators=[REFERENCE_VALIDATOR]
        )
        title = serializers.CharField(
            max_length=200, required=False, validators=[ONE_LINE_TEXT]
        )
        description = serializers.CharField(allow_blank=True, required=False)
        questions_deadline = serializers.DateTimeField(required=False, allow_null=True)
        submission_deadline = serializers.DateTimeField(required=False)
        min_bids = serializers.IntegerField(required=False)
        addendum_extension_days = serializers.IntegerField(required=False)
        workload_requirements = serializers.CharField(allow_blank=True, required=False)
        escrow_clause = serializers.CharField(allow_blank=True, required=False)
        escrow_retention_years = serializers.IntegerField(
            min_value=1, max_value=50, required=False, allow_null=True
        )
        acceptance_clause = serializers.CharField(allow_blank=True, required=False)
        retest_clause = serializers.CharField(allow_blank=True, required=False)
        retest_tolerance_pct = serializers.DecimalField(
            max_digits=5, decimal_places=2, required=False, validators=[PERCENT_TEXT]
        )
        retest_vendor_funded = serializers.BooleanField(required=False)
        retest_deadline_days = serializers.IntegerField(
            min_value=1, max_value=365, required=False
        )
        retest_max_attempts = serializers.IntegerField(
            min_value=1, max_value=10, required=False
        )
        audit_rights_clause = serializers.CharField(allow_blank=True, required=False)
        dispute_window_days = serializers.IntegerField(
            min_value=1, max_value=90, required=False
        )
        update_deposit_days = serializers.IntegerField(
            min_value=1, max_value=365, required=False
        )
        drift_policy = serializers.JSONField(required=False)
        standstill_days = serializers.IntegerField(required=False)
        artifacts = ArtifactSerializer(many=True, required=False)
        metrics = MetricSerializer(many=True, required=False)
        criteria = CriterionSerializer(many=True, required=False)

    parser_classes = [JSONParser]

    @extend_schema(
        operation_id="rfp_detail", responses={200: RfpDetailOutputSerializer}
    )
    def get(self, request: Request, rfp_id: uuid.UUID) -> Response:
        rfp = _rfp_for(request, rfp_id)
        self.check_object_permissions(request, rfp)
        return _detail(request, rfp)

    @extend_schema(
        operation_id="rfp_update",
        request=InputSerializer,
        responses={200: RfpDetailOutputSerializer},
    )
    def patch(self, request: SignedInApiRequest, rfp_id: uuid.UUID) -> Response:
        rfp = _rfp_for(request, rfp_id, manage=True)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        changes = dict(data.validated_data)
        rfp = rfp_configure(rfp=rfp, changes=changes, actor=request.user)
        return _detail(request, rfp)


class RfpPublishApi(APIView):
    """Publish a complete draft; every member of each invited vendor is notified."""

    @extend_schema(
        operation_id="rfp_publish",
        request=None,
        responses={200: RfpDetailOutputSerializer},
    )
    def post(self, request: SignedInApiRequest, rfp_id: uuid.UUID) -> Response:
        rfp = _rfp_for(request, rfp_id, manage=True)
        return _detail(request, rfp_publish(rfp=rfp, actor=request.user))


class RfpCancelApi(APIView):
    """Cancel an RFP that is not final, with a reason the invited vendors read."""

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "RfpCancelInput"

        reason = serializers.CharField(max_length=2000)

    @extend_schema(
        operation_id="rfp_cancel",
        request=InputSerializer,
        responses={200: RfpDetailOutputSerializer},
    )
    def post(self, request: SignedInApiRequest, rfp_id: uuid.UUID) -> Response:
        rfp = _rfp_for(request, rfp_id, manage=True)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        rfp = rfp_cancel(rfp=rfp, actor=request.user, **data.validated_data)
        return _detail(request, rfp)


class RfpInviteApi(APIView):
    """A page of the invited vendors you may see, by slug (GET: all of them on
    the buyer side, your own organisation for a vendor); invite a vendor
    organisation by slug (POST: in a draft, or published before the deadline,
    when its members are notified at once)."""

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "RfpInviteInput"

        vendor = serializers.SlugRelatedField(
            slug_field="slug",
            queryset=Organisation.objects.filter(kind=Organisation.Kind.VENDOR),
            help_text="The vendor organisation's slug.",
        )

    @extend_schema(
        operation_id="rfp_invited_vendor_list",
        parameters=PAGE_PARAMETERS,
        responses={
            200: page_serializer("InvitedVendorPage", OrganisationRefSerializer)
        },
    )
    def get(self, request: Request, rfp_id: uuid.UUID) -> Response:
        rfp = _rfp_for(request, rfp_id)
        visible = invited_vendor_scope_for(request.user).visible(rfp)
        vendors = sorted(visible, key=lambda org: org.slug)
        return page_response(self, request, vendors, OrganisationRefSerializer)

    @extend_schema(
        operation_id="rfp_invite",
        request=InputSerializer,
        responses={201: RfpDetailOutputSerializer},
    )
    def post(self, request: SignedInApiRequest, rfp_id: uuid.UUID) -> Response:
        rfp = _rfp_for(request, rfp_id, manage=True)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        rfp = rfp_invite_vendor(rfp=rfp, actor=request.user, **data.validated_data)
        return _detail(request, rfp, status.HTTP_201_CREATED)
