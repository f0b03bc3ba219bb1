"""Gate plans: an RFP's plans (GET), a vendor's default draft or an imported
document (POST); one plan (GET), its draft edited (PATCH), frozen, copied to a new
version, and exported as its canonical bytes (the ones evaluations cite by
``sha256``). Writing plans is for the RFP's buyers; vendors read their own."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.pagination import PAGE_PARAMETERS, page_response, page_serializer
from accounts.exceptions import Problem
from accounts.models import Organisation
from accounts.views.requests import SignedInApiRequest
from gates.api.access import one, require_plan_editor, rfp_for
from gates.api.serializers import READ_ERRORS, WRITE_ERRORS, DocumentField
from gates.exceptions import GatesError
from gates.models import GatePlan
from gates.selectors.plans import plan_draft, plan_export, plan_list_visible_to
from gates.services.plans import (
    plan_create_default,
    plan_freeze,
    plan_import,
    plan_new_version,
    plan_update,
)
from procurement.models import Rfp

# ?vendor= of the plan list: a slug or nothing (never a NUL for the database).
VENDOR_SLUG = r"^[-a-zA-Z0-9_]*$"


class PlanSerializer(serializers.Serializer):
    class Meta:
        ref_name = "GatePlan"

    id = serializers.UUIDField(source="public_id")
    rfp = serializers.UUIDField(source="rfp.public_id")
    rfp_reference = serializers.CharField(source="rfp.reference")
    vendor = serializers.CharField(source="vendor_organisation.slug")
    version = serializers.IntegerField()
    status = serializers.ChoiceField(choices=GatePlan.Status.choices)
    sha256 = serializers.CharField(help_text="SHA-256 of the canonical document.")
    document = DocumentField(help_text="The reprogate.gate-plan/v1 document.")
    lab_environment_accepted = serializers.BooleanField()
    lab_environment_note = serializers.CharField()
    max_extra_runs = serializers.IntegerField()
    bundle = serializers.UUIDField(
        source="bundle.public_id", allow_null=True, default=None
    )
    supersedes = serializers.UUIDField(
        source="supersedes.public_id", allow_null=True, default=None
    )
    created_at = serializers.DateTimeField()
    frozen_at = serializers.DateTimeField(allow_null=True)
    frozen_by = serializers.CharField(
        source="frozen_by.username", allow_null=True, default=None
    )


class DocumentInputField(serializers.JSONField):
    """A ``reprogate.gate-plan/v1`` document as a JSON object (checked in full by
    the service, every problem with its path)."""

    def to_internal_value(self, data: Any) -> Any:
        value = super().to_internal_value(data)
        if not isinstance(value, dict):
            raise serializers.ValidationError("Must be a JSON object (the plan).")
        return value


def _vendor_of(rfp: Rfp, slug: str) -> Organisation:
    vendor = rfp.invited_vendors.filter(
        slug=slug, kind=Organisation.Kind.VENDOR
    ).first()
    if vendor is None:
        raise serializers.ValidationError(
            {"vendor": f"{slug!r} is not a vendor invited to this RFP."}
        )
    return vendor


SETTINGS = frozenset(
    {"lab_environment_accepted", "lab_environment_note", "max_extra_runs"}
)


@contextmanager
def document_paths() -> Iterator[None]:
    """The services name a document's problems by their path in the document;
    in a request the document is the field ``document``: ``document.gates[0]…``."""
    try:
        yield
    except GatesError as refused:
        problems = tuple(
            p
            if p.path is None or p.path in SETTINGS
            else Problem(p.code, p.message, f"document.{p.path}")
            for p in refused.problems
        )
        raise GatesError(refused.message, refused.code, problems) from refused


def _plan_to_edit(request: Request, plan_id: uuid.UUID) -> GatePlan:
    """The visible plan (else 404) if the caller may edit the RFP's plans (else
    403)."""
    plan = one(plan_list_visible_to(request.user), plan_id)
    require_plan_editor(request.user, plan.rfp)
    return plan


def _plan(plan: GatePlan, code: int = status.HTTP_200_OK) -> Response:
    return Response(PlanSerializer(plan).data, status=code)


class PlanListApi(APIView):
    """The RFP's gate plans you may see, by vendor and newest version first (GET);
    a vendor's default draft from its accepted bundle's claims, or a draft from a
    plan document (POST, buyers)."""

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "GatePlanCreateInput"

        vendor = serializers.SlugField(help_text="An invited vendor's slug.")
        document = DocumentInputField(
            required=False,
            help_text="A reprogate.gate-plan/v1 document to import (else the "
            "default plan is drafted).",
        )

    PageSerializer = page_serializer("GatePlanPage", PlanSerializer)

    @extend_schema(
        operation_id="gate_plan_list",
        parameters=[
            *PAGE_PARAMETERS,
            OpenApiParameter(
                "vendor", str, description="A vendor's slug.", pattern=VENDOR_SLUG
            ),
        ],
        responses={200: PageSerializer, **READ_ERRORS},
    )
    def get(self, request: Request, rfp_id: uuid.UUID) -> Response:
        rfp = rfp_for(request.user, rfp_id)
        plans = plan_list_visible_to(request.user).filter(rfp=rfp)
        if vendor := request.query_params.get("vendor", ""):
            if not re.fullmatch(VENDOR_SLUG, vendor):
                raise serializers.ValidationError(
                    {"vendor": "A vendor's slug: letters, digits, '-' and '_'."}
                )
            plans = plans.filter(vendor_organisation__slug=vendor)
        plans = plans.order_by("vendor_organisation__slug", "-version")
        return page_response(self, request, plans, PlanSerializer)

    @extend_schema(
        operation_id="gate_plan_create",
        request=InputSerializer,
        responses={
            201: OpenApiResponse(PlanSerializer, description="A new draft."),
            200: OpenApiResponse(
                PlanSerializer, description="An import replaced the draft's content."
            ),
            **WRITE_ERRORS,
        },
    )
    def post(self, request: SignedInApiRequest, rfp_id: uuid.UUID) -> Response:
        rfp = rfp_for(request.user, rfp_id)
        require_plan_editor(request.user, rfp)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        vendor = _vendor_of(rfp, data.validated_data["vendor"])
        document = data.validated_data.get("document")
        if document is None:
            plan = plan_create_default(rfp=rfp, vendor=vendor, actor=request.user)
            return _plan(plan, status.HTTP_201_CREATED)
        draft = plan_draft(rfp, vendor)  # an import replaces its content
        raw = json.dumps(document, ensure_ascii=False).encode("utf-8")
        with document_paths():
            plan = plan_import(rfp=rfp, vendor=vendor, data=raw, actor=request.user)
        return _plan(plan, status.HTTP_200_OK if draft else status.HTTP_201_CREATED)


class PlanDetailApi(APIView):
    """One gate plan (GET); its draft edited (PATCH, buyers; 409 once frozen)."""

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "GatePlanPatchInput"

        document = DocumentInputField(required=False)
        lab_environment_accepted = serializers.BooleanField(required=False)
        lab_environment_note = serializers.CharField(
            allow_blank=True, required=False, max_length=2000
        )
        max_extra_runs = serializers.IntegerField(
            required=False, min_value=0, max_value=50
        )

    @extend_schema(
        operation_id="gate_plan_detail",
        responses={200: PlanSerializer, **READ_ERRORS},
    )
    def get(self, request: Request, plan_id: uuid.UUID) -> Response:
        plan = one(plan_list_visible_to(request.user), plan_id)
        self.check_object_permissions(request, plan)
        return _plan(plan)

    @extend_schema(
        operation_id="gate_plan_update",
        request=InputSerializer,
        responses={200: PlanSerializer, **WRITE_ERRORS},
    )
    def patch(self, request: SignedInApiRequest, plan_id: uuid.UUID) -> Response:
        plan = _plan_to_edit(request, plan_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        changes = dict(data.validated_data)
        document = changes.pop("document") if "document" in changes else plan.plan
        with document_paths():
            plan = plan_update(
                plan=plan, document=document, actor=request.user, **changes
            )
        return _plan(plan)


class PlanFreezeApi(APIView):
    """Freeze the draft: its document never changes again and it supersedes the
    vendor's previous frozen plan (409 if not a draft; 400 if it no longer
    validates)."""

    @extend_schema(
        operation_id="gate_plan_freeze",
        request=None,
        responses={200: PlanSerializer, **WRITE_ERRORS},
    )
    def post(self, request: SignedInApiRequest, plan_id: uuid.UUID) -> Response:
        plan = _plan_to_edit(request, plan_id)
        return _plan(plan_freeze(plan=plan, actor=request.user))


class PlanNewVersionApi(APIView):
    """A draft copy of a frozen plan, one version up (409 if a draft exists or the
    plan is not frozen)."""

    @extend_schema(
        operation_id="gate_plan_new_version",
        request=None,
        responses={201: PlanSerializer, **WRITE_ERRORS},
    )
    def post(self, request: SignedInApiRequest, plan_id: uuid.UUID) -> Response:
        plan = _plan_to_edit(request, plan_id)
        draft = plan_new_version(plan=plan, actor=request.user)
        return _plan(draft, status.HTTP_201_CREATED)


class PlanExportApi(APIView):
    """The plan document as its canonical bytes (SHA-256 = the plan's
    ``sha256``): the file ``reprogate gate evaluate --plan`` reads."""

    @extend_schema(
        operation_id="gate_plan_export",
        responses={
            (200, "application/json"): OpenApiResponse(
                OpenApiTypes.OBJECT, description="reprogate.gate-plan/v1"
            ),
            **READ_ERRORS,
        },
    )
    def get(self, request: Request, plan_id: uuid.UUID) -> HttpResponse:
        plan = one(plan_list_visible_to(request.user), plan_id)
        response = HttpResponse(plan_export(plan), content_type="application/json")
        name = f"gate-plan-{plan.rfp.reference}-{plan.vendor_organisation.slug}"
        response["Content-Disposition"] = (
            f'attachment; filename="{name}-v{plan.version}.json"'
        )
        return response
