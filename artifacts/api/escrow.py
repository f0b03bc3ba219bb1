"""Escrow API: a bundle's evidence package (docs/architecture.md, streamed zip), the
deposits a caller may see with their log index, leaf and inclusion proof, and
the legal hold and retention of one deposit.

Deposits are sealed like bundles (``artifacts.selectors.escrow``): the
depositing vendor sees its own, the buyer side (buyers, evaluators, the labs
and auditors the buyer engaged) once the RFP is opened; 404 for anyone else.
Legal hold and retention are for the buyer's buyers and admins and its
auditors (403 for others who see the deposit)."""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404, StreamingHttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
)
from rest_framework import serializers, status
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.errors import error_body
from accounts.api.pagination import (
    PAGE_PARAMETERS,
    LimitOffsetPagination,
    page_response,
    page_serializer,
)
from accounts.api.parsers import JSONParser
from accounts.api.schema import NO_NUL
from accounts.lib.paging import PAGE_SIZE
from accounts.views.requests import SignedInApiRequest
from artifacts.models import Deposit
from artifacts.permissions import can_change_hold
from artifacts.selectors.escrow import (
    DepositFilter,
    bundle_deposits,
    deposit_get_visible,
    deposit_items,
    deposit_list_filtered,
    evidence_bundle_get,
)
from artifacts.selectors.evidence_package import EvidencePackage
from artifacts.selectors.proofs import b64, leaf_inclusion
from artifacts.services.escrow import deposit_legal_hold_set, deposit_retention_extend
from artifacts.services.evidence import evidence_package_prepare
from artifacts.storage.object_lock import EscrowStorageError

logger = logging.getLogger(__name__)


class ZipRenderer(BaseRenderer):
    """Lets clients ask for ``application/zip``; errors still come as JSON."""

    media_type = "application/zip"
    format = "zip"

    def render(self, data: Any, accepted_media_type: Any = None, context: Any = None):
        return json.dumps(data).encode() if isinstance(data, dict | list) else data


class EvidencePackageApi(APIView):
    """The bundle's evidence package: every deposit of it with its inclusion
    proof, the signed checkpoint, the log key, the blobs, the vendor keys and
    a README. Each download is audited and logged."""

    renderer_classes = [JSONRenderer, ZipRenderer]
    http_method_names = ["get", "options"]  # a HEAD would log a download too

    @extend_schema(
        operation_id="bundle_evidence_package",
        responses={(200, "application/zip"): OpenApiResponse(OpenApiTypes.BINARY)},
    )
    def get(
        self, request: SignedInApiRequest, bundle_id: uuid.UUID
    ) -> StreamingHttpResponse:
        bundle = evidence_bundle_get(request.user, bundle_id)
        if bundle is None or not bundle_deposits(bundle):
            raise Http404
        package = evidence_package_prepare(bundle=bundle, actor=request.user)
        return package_response(package)


def package_response(package: EvidencePackage) -> StreamingHttpResponse:
    """An evidence package streamed as its zip (each one a download of its own:
    never cached)."""
    return StreamingHttpResponse(
        package.stream(),
        content_type="application/zip",
        headers={
            "Content-Disposition": f'attachment; filename="{package.filename}"',
            "Cache-Control": "no-store",
        },
    )


class DepositSerializer(serializers.Serializer):
    class Meta:
        ref_name = "Deposit"

    id = serializers.UUIDField(source="public_id")
    kind = serializers.CharField()
    rfp = serializers.CharField(source="rfp.reference")
    vendor = serializers.SerializerMethodField(
        help_text="the vendor whose bundle the deposit names (the depositor for "
        "a deposit naming no bundle)"
    )
    depositor = serializers.CharField(
        source="organisation.slug",
        help_text="who deposited it: the vendor, its lab (run outputs) or the "
        "buyer (gate evaluations, signed reports)",
    )
    bundle_id = serializers.UUIDField(source="bundle.public_id", allow_null=True)
    log_index = serializers.IntegerField()
    leaf_hash = serializers.CharField(help_text="hex SHA-256(0x00 || leaf)")
    deposited_at = serializers.DateTimeField()
    retain_until = serializers.DateTimeField()
    legal_hold = serializers.BooleanField()
    evidence_url = serializers.SerializerMethodField()

    @extend_schema_field(serializers.CharField())
    def get_vendor(self, deposit: Deposit) -> str:
        owner = deposit.bundle.organisation if deposit.bundle else deposit.organisation
        return owner.slug

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_evidence_url(self, deposit: Deposit) -> str | None:
        if deposit.kind != Deposit.Kind.BUNDLE or deposit.bundle is None:
            return None  # a run output names the bundle it ran, not a package
        return reverse("bundle-evidence", args=[deposit.bundle.public_id])


TEXT_FILTERS = {"rfp": "RFP reference", "vendor": "vendor organisation slug"}
FILTERS = [
    *(
        OpenApiParameter(name, {"type": "string", "pattern": NO_NUL}, description=text)
        for name, text in TEXT_FILTERS.items()
    ),
    OpenApiParameter("kind", str, enum=Deposit.Kind.values),
]


class DepositListApi(APIView):
    """Deposits you may see, newest first; filter by RFP, vendor and kind."""

    # Read by the OpenAPI schema (a page of the rows, ?limit and ?offset); get()
    # pages with the same paginator.
    pagination_class = LimitOffsetPagination

    @extend_schema(
        operation_id="deposit_list",
        parameters=FILTERS,
        responses={200: DepositSerializer(many=True)},
    )
    def get(self, request: Request) -> Response:
        query = request.query_params
        kind = query.get("kind", "")
        if kind and kind not in Deposit.Kind.values:
            choices = ", ".join(Deposit.Kind.values)
            raise serializers.ValidationError({"kind": [f"One of {choices}."]})
        nul = {
            name: ["No NUL character."]
            for name in TEXT_FILTERS
            if "\x00" in query.get(name, "")
        }
        if nul:  # a text no reference or slug holds (and PostgreSQL refuses)
            raise serializers.ValidationError(nul)
        where = DepositFilter(
            rfp=query.get("rfp", ""), vendor=query.get("vendor", ""), kind=kind
        )
        paginator = LimitOffsetPagination()
        deposits = deposit_list_filtered(request.user, where)
        page = paginator.paginate_queryset(deposits, request, self)
        data = DepositSerializer(page, many=True).data
        return paginator.get_paginated_response(data)


def _visible_deposit(request: Request, deposit_id: uuid.UUID) -> Deposit:
    deposit = deposit_get_visible(request.user, deposit_id)
    if deposit is None:
        raise Http404
    return deposit


class DepositBlobSerializer(serializers.Serializer):
    class Meta:
        ref_name = "DepositBlob"

    role = serializers.CharField()
    path = serializers.CharField()
    sha256 = serializers.CharField(source="blob.sha256")
    size = serializers.IntegerField(source="blob.size")


class DepositDetailApi(APIView):
    """One deposit: its leaf, its first blobs (``blobs_url`` pages them all) and
    its inclusion proof in the latest checkpoint (verified by the server; check
    it yourself too). A deposit newer than the latest checkpoint has
    ``inclusion: null`` and says so in ``inclusion_pending`` (the next
    checkpoint comes within a minute)."""

    class InclusionSerializer(serializers.Serializer):
        class Meta:
            ref_name = "DepositInclusion"

        size = serializers.IntegerField(source="head.size")
        root_hash = serializers.CharField(source="head.root_b64")
        checkpoint = serializers.CharField(source="head.note")
        proof = serializers.ListField(child=serializers.CharField(), source="proof_b64")
        verified = serializers.BooleanField(source="ok")
        problem = serializers.CharField()

    class OutputSerializer(DepositSerializer):
        class Meta:
            ref_name = "DepositDetail"

        leaf = serializers.SerializerMethodField(help_text="base64 of the leaf bytes")
        record = serializers.SerializerMethodField(
            help_text="the leaf, parsed, its blob list left out (blobs_url pages "
            "it; the leaf holds it)"
        )
        blobs = serializers.SerializerMethodField(
            help_text=f"The first {PAGE_SIZE} blobs; blobs_url pages them all."
        )
        blob_count = serializers.IntegerField(source="items.count")
        blobs_url = serializers.SerializerMethodField()

        @extend_schema_field(serializers.CharField())
        def get_leaf(self, deposit: Deposit) -> str:
            return b64(deposit.leaf)

        @extend_schema_field(serializers.DictField())
        def get_record(self, deposit: Deposit) -> dict[str, Any]:
            record = json.loads(bytes(deposit.leaf))
            record.pop("blobs", None)
            return record

        @extend_schema_field(DepositBlobSerializer(many=True))
        def get_blobs(self, deposit: Deposit) -> list[dict[str, Any]]:
            first = deposit_items(deposit)[:PAGE_SIZE]
            return list(DepositBlobSerializer(first, many=True).data)

        @extend_schema_field(serializers.CharField())
        def get_blobs_url(self, deposit: Deposit) -> str:
            return reverse("deposit-blob-list", args=[deposit.public_id])

    @extend_schema(
        operation_id="deposit_detail",
        responses={200: OutputSerializer},
    )
    def get(self, request: Request, deposit_id: uuid.UUID) -> Response:
        deposit = _visible_deposit(request, deposit_id)
        data = dict(self.OutputSerializer(deposit).data)
        inclusion = leaf_inclusion(deposit.log_index, bytes(deposit.leaf))
        data["inclusion"] = (
            None if inclusion.pending else self.InclusionSerializer(inclusion).data
        )
        data["inclusion_pending"] = inclusion.problem if inclusion.pending else ""
        return Response(data)


class DepositBlobListApi(APIView):
    """A page of the deposit's blobs, in the leaf's order."""

    @extend_schema(
        operation_id="deposit_blob_list",
        parameters=PAGE_PARAMETERS,
        responses={200: page_serializer("DepositBlobPage", DepositBlobSerializer)},
    )
    def get(self, request: Request, deposit_id: uuid.UUID) -> Response:
        deposit = _visible_deposit(request, deposit_id)
        blobs = deposit_items(deposit)
        return page_response(self, request, blobs, DepositBlobSerializer)


def _storage_unavailable() -> Response:
    logger.exception("escrow storage failed")
    body = error_body(
        "storage_unavailable", "The storage refused the lock; nothing was changed."
    )
    return Response(body, status=status.HTTP_503_SERVICE_UNAVAILABLE)


def _holdable_deposit(request: Request, deposit_id: uuid.UUID) -> Deposit:
    deposit = _visible_deposit(request, deposit_id)
    if not can_change_hold(request.user, deposit):
        raise PermissionDenied
    return deposit


class DepositLegalHoldApi(APIView):
    """Place (``hold: true``) or release a deposit's legal hold (409 if it is
    so already). JSON: a form field left out would read as ``false``."""

    parser_classes = [JSONParser]

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "DepositLegalHoldInput"

        hold = serializers.BooleanField()
        reason = serializers.CharField(max_length=500)

    @extend_schema(
        operation_id="deposit_legal_hold",
        request=InputSerializer,
        responses={200: DepositSerializer},
    )
    def post(self, request: SignedInApiRequest, deposit_id: uuid.UUID) -> Response:
        deposit = _holdable_deposit(request, deposit_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            deposit = deposit_legal_hold_set(
                deposit=deposit, actor=request.user, **data.validated_data
            )
        except EscrowStorageError:
            return _storage_unavailable()
        return Response(DepositSerializer(deposit).data)


class DepositRetentionApi(APIView):
    """Keep a deposit longer (400 unless ``retain_until`` is later)."""

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "DepositRetentionInput"

        retain_until = serializers.DateTimeField()
        reason = serializers.CharField(max_length=500)

    @extend_schema(
        operation_id="deposit_retention_extend",
        request=InputSerializer,
        responses={200: DepositSerializer},
    )
    def post(self, request: SignedInApiRequest, deposit_id: uuid.UUID) -> Response:
        deposit = _holdable_deposit(request, deposit_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            deposit = deposit_retention_extend(
                deposit=deposit, actor=request.user, **data.validated_data
            )
        except EscrowStorageError:
            return _storage_unavailable()
        return Response(DepositSerializer(deposit).data)
