"""Escrow release API: list and request releases, one release with its steps,
each step (object, approve, reject, withdraw, execute), the certificate (its
exact bytes) and the released deposits (a zip).

404 for a release the caller may not see, 403 for a step they see but may
not take (``artifacts.selectors.release``); rule violations answer 400
or 409 with the service's code (e.g. ``notice_running``,
``role_already_approved``, ``approvals_missing``)."""

from __future__ import annotations

import uuid
from typing import Any, ClassVar

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.pagination import PAGE_PARAMETERS, page_response, page_serializer
from accounts.api.schema import error_response
from accounts.views.requests import SignedInApiRequest
from artifacts.api.escrow import ZipRenderer
from artifacts.models import Release
from artifacts.permissions import (
    RELEASE_STEP_ALLOWED,
    AnyUser,
    can_request_release,
)
from artifacts.selectors.release import (
    release_get_visible,
    release_list_visible_to,
    release_package_get,
)
from artifacts.selectors.release_package import release_filename, release_package_stream
from artifacts.services.release import (
    release_object,
    release_reject,
    release_request,
    release_withdraw,
)
from artifacts.services.release_execution import (
    release_approve,
    release_download_record,
    release_execute,
)
from procurement.selectors.rfps import rfp_get_visible


class ReleaseStepSerializer(serializers.Serializer):
    class Meta:
        ref_name = "EscrowReleaseStep"

    action = serializers.CharField()
    role = serializers.CharField()
    by = serializers.CharField(source="actor.username")
    at = serializers.DateTimeField(source="occurred_at")
    text = serializers.CharField()
    acknowledges_objection = serializers.BooleanField()
    log_index = serializers.IntegerField(source="event.log_index")


class ReleaseDepositSerializer(serializers.Serializer):
    class Meta:
        ref_name = "EscrowReleaseDeposit"

    id = serializers.UUIDField(source="public_id")
    kind = serializers.CharField()
    log_index = serializers.IntegerField()
    leaf_hash = serializers.CharField()


class ReleaseSerializer(serializers.Serializer):
    class Meta:
        ref_name = "EscrowRelease"

    id = serializers.UUIDField(source="public_id")
    status = serializers.CharField()
    rfp = serializers.CharField(source="rfp.reference")
    vendor = serializers.CharField(source="organisation.slug")
    condition = serializers.CharField()
    statement = serializers.CharField()
    contract_clause_sha256 = serializers.CharField()
    requested_by = serializers.CharField(source="requested_by.username")
    requested_at = serializers.DateTimeField()
    notice_ends_at = serializers.DateTimeField()
    executed_at = serializers.DateTimeField(allow_null=True)
    certificate_sha256 = serializers.CharField()


class ReleaseDetailSerializer(ReleaseSerializer):
    class Meta:
        ref_name = "EscrowReleaseDetail"

    deposits = ReleaseDepositSerializer(many=True, source="deposits.all")
    steps = ReleaseStepSerializer(many=True, source="steps.all")


class ReleaseListApi(APIView):
    """Releases you may see, newest first (GET); request one (POST: a buyer
    or admin of the RFP's buyer organisation, on an awarded RFP; on the breach
    condition it may cite one of the vendor's recorded breaches)."""

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "EscrowReleaseRequestInput"

        rfp = serializers.UUIDField(help_text="the RFP's id")
        condition = serializers.ChoiceField(choices=Release.Condition.values)
        statement = serializers.CharField(
            max_length=4000, required=False, allow_blank=True, default=""
        )
        breach = serializers.CharField(
            max_length=100,
            required=False,
            allow_blank=True,
            default="",
            help_text=(
                "On the breach condition: the id of a recorded breach of the "
                "awarded vendor's on this RFP to cite (a failed or expired "
                "re-test obligation); the statement then quotes it. An id that "
                "is not one of the vendor's breaches answers 400 "
                "(unknown_breach, path breach); citing one on another "
                "condition answers 400 (breach_cited)."
            ),
        )

    PageSerializer = page_serializer("EscrowReleasePage", ReleaseSerializer)

    @extend_schema(
        operation_id="escrow_release_list",
        parameters=PAGE_PARAMETERS,
        responses={200: PageSerializer},
    )
    def get(self, request: Request) -> Response:
        releases = release_list_visible_to(request.user)
        return page_response(self, request, releases, ReleaseSerializer)

    @extend_schema(
        operation_id="escrow_release_request",
        request=InputSerializer,
        responses={201: ReleaseDetailSerializer, 404: error_response(404)},
    )
    def post(self, request: SignedInApiRequest) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        rfp = rfp_get_visible(request.user, public_id=fields.pop("rfp"))
        if rfp is None or not can_request_release(request.user, rfp):
            raise Http404
        release = release_request(rfp=rfp, actor=request.user, **fields)
        body = ReleaseDetailSerializer(release).data
        return Response(body, status=status.HTTP_201_CREATED)


def _visible(request: Request, release_id: uuid.UUID) -> Release:
    release = release_get_visible(request.user, release_id)
    if release is None:
        raise Http404
    return release


class ReleaseDetailApi(APIView):
    """One release: its deposits and every step with its log index."""

    @extend_schema(
        operation_id="escrow_release_detail",
        responses={200: ReleaseDetailSerializer},
    )
    def get(self, request: Request, release_id: uuid.UUID) -> Response:
        return Response(ReleaseDetailSerializer(_visible(request, release_id)).data)


class _ReasonInput(serializers.Serializer):
    class Meta:
        ref_name = "EscrowReleaseReasonInput"

    reason = serializers.CharField(max_length=4000)


class _StepApi(APIView):
    # staticmethods: the predicate and the service are plain functions
    allowed: ClassVar[staticmethod[[AnyUser, Release], bool]]
    service: ClassVar[staticmethod[..., Release]]
    InputSerializer: ClassVar[type[serializers.Serializer] | None] = None

    def step(self, request: Request, release_id: uuid.UUID) -> Response:
        release = _visible(request, release_id)
        if not type(self).allowed(request.user, release):
            raise PermissionDenied
        fields: dict[str, Any] = {}
        if self.InputSerializer is not None:
            data = self.InputSerializer(data=request.data)
            data.is_valid(raise_exception=True)
            fields = dict(data.validated_data)
        release = type(self).service(release=release, actor=request.user, **fields)
        return Response(ReleaseDetailSerializer(release).data)


def _step_schema(name: str, body: type[serializers.Serializer] | None) -> Any:
    return extend_schema(
        operation_id=f"escrow_release_{name}",
        request=body,
        responses={200: ReleaseDetailSerializer},
    )


class ReleaseObjectApi(_StepApi):
    """The vendor objects within the notice period (the release is disputed)."""

    allowed = staticmethod(RELEASE_STEP_ALLOWED["object"])
    service = staticmethod(release_object)
    InputSerializer = _ReasonInput

    @_step_schema("object", _ReasonInput)
    def post(self, request: Request, release_id: uuid.UUID) -> Response:
        return self.step(request, release_id)


class ReleaseApproveApi(_StepApi):
    """Approve as buyer or auditor, after the notice period; on a disputed
    release with ``acknowledge_objection`` and a ``note`` answering it."""

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "EscrowReleaseApprovalInput"

        note = serializers.CharField(
            max_length=4000, required=False, allow_blank=True, default=""
        )
        acknowledge_objection = serializers.BooleanField(required=False, default=False)

    allowed = staticmethod(RELEASE_STEP_ALLOWED["approve"])
    service = staticmethod(release_approve)

    @_step_schema("approve", InputSerializer)
    def post(self, request: SignedInApiRequest, release_id: uuid.UUID) -> Response:
        return self.step(request, release_id)


class ReleaseRejectApi(_StepApi):
    """The auditor rejects the release (its ruling for the vendor)."""

    allowed = staticmethod(RELEASE_STEP_ALLOWED["reject"])
    service = staticmethod(release_reject)
    InputSerializer = _ReasonInput

    @_step_schema("reject", _ReasonInput)
    def post(self, request: SignedInApiRequest, release_id: uuid.UUID) -> Response:
        return self.step(request, release_id)


class ReleaseWithdrawApi(_StepApi):
    """The buyer withdraws the request."""

    allowed = staticmethod(RELEASE_STEP_ALLOWED["withdraw"])
    service = staticmethod(release_withdraw)
    InputSerializer = _ReasonInput

    @_step_schema("withdraw", _ReasonInput)
    def post(self, request: SignedInApiRequest, release_id: uuid.UUID) -> Response:
        return self.step(request, release_id)


class ReleaseExecuteApi(_StepApi):
    """The buyer executes an approved release: the certificate is issued."""

    allowed = staticmethod(RELEASE_STEP_ALLOWED["execute"])
    service = staticmethod(release_execute)

    @_step_schema("execute", None)
    def post(self, request: Request, release_id: uuid.UUID) -> Response:
        return self.step(request, release_id)


class ReleaseCertificateApi(APIView):
    """The release certificate, byte for byte (its SHA-256 is logged)."""

    @extend_schema(
        operation_id="escrow_release_certificate",
        responses={(200, "application/json"): OpenApiResponse(OpenApiTypes.OBJECT)},
    )
    def get(self, request: Request, release_id: uuid.UUID) -> HttpResponse:
        release = _visible(request, release_id)
        if release.status != Release.Status.RELEASED:
            raise Http404
        return HttpResponse(bytes(release.certificate), content_type="application/json")


class ReleasePackageApi(APIView):
    """The released deposits as a zip (certificate.json, blobs/<sha256>), for
    the buyer organisation; each download is logged and audited."""

    # JSON first: an error (404) is a JSON body and says so, as for the evidence
    # package; the zip itself is streamed, never rendered.
    renderer_classes = [JSONRenderer, ZipRenderer]
    http_method_names = ["get", "options"]

    @extend_schema(
        operation_id="escrow_release_package",
        responses={(200, "application/zip"): OpenApiResponse(OpenApiTypes.BINARY)},
    )
    def get(
        self, request: SignedInApiRequest, release_id: uuid.UUID
    ) -> StreamingHttpResponse:
        release = release_package_get(request.user, release_id)
        if release is None:
            raise Http404
        release_download_record(release=release, actor=request.user)
        name = release_filename(release)
        return StreamingHttpResponse(
            release_package_stream(release),
            content_type="application/zip",
            headers={
                "Content-Disposition": f'attachment; filename="{name}"',
                "Cache-Control": "no-store",
            },
        )
