"""Bids over the API: the caller's own bid (vendors), the sealed or opened list
(buyer side) and receipts (the two-person opening is ``procurement.api.opening``).
Same rules as the pages: 404 for what the caller may not know exists, 403 for a
forbidden action, 409 for a refused move."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
)
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.pagination import (
    PAGE_PARAMETERS,
    LimitOffsetPagination,
    PagedDocumentSerializer,
    page_rows,
)
from accounts.models import Organisation
from accounts.views.requests import SignedInApiRequest
from procurement.api.serializers import OrganisationRefSerializer
from procurement.models import Bid, BidDocument, BidReceipt, Rfp
from procurement.permissions import bidding_organisation, is_buyer_side
from procurement.selectors.bids import (
    bid_commitments,
    bid_count_live,
    bid_document_get,
    bid_get_own,
    bid_get_visible,
    bid_is_own,
    bid_list_opened,
    bid_receipt_list,
)
from procurement.selectors.rfps import rfp_get_visible_or_404
from procurement.services.bid_inputs import STATS, bid_documents_store
from procurement.services.bids import (
    bid_documents_add,
    bid_reconfirm,
    bid_submit,
    bid_withdraw,
)
from procurement.views.bids import bid_document_response

# --- shared serializers -----------------------------------------------------------


class ClaimSerializer(serializers.Serializer):
    class Meta:
        ref_name = "BidClaim"

    metric = serializers.CharField(max_length=64, help_text="lower_snake_case")
    stat = serializers.ChoiceField(choices=STATS)
    value = serializers.FloatField()
    unit = serializers.CharField(max_length=32, allow_blank=True, default="")
    scenario = serializers.CharField(max_length=64, allow_blank=True, default="")


def _money(digits: int, places: int, minimum: str = "0") -> serializers.DecimalField:
    return serializers.DecimalField(
        max_digits=digits, decimal_places=places, min_value=Decimal(minimum)
    )


class CostInputsSerializer(serializers.Serializer):
    class Meta:
        ref_name = "BidCostInputs"

    currency = serializers.RegexField(r"^[A-Z]{3}$", default="EUR")
    hardware_cost = _money(14, 2)
    amortisation_years = _money(4, 1, "0.5")
    power_draw_kw = _money(8, 3)
    energy_price_per_kwh = _money(8, 4)
    rack_units = serializers.IntegerField(min_value=0, max_value=32767)
    rack_unit_cost_per_year = _money(10, 2)
    support_cost_per_year = _money(12, 2)
    delivered_tokens_per_s = _money(14, 2, "0.01")


class BidBundleSerializer(serializers.Serializer):
    class Meta:
        ref_name = "BidBundle"

    id = serializers.UUIDField(source="bundle_public_id")
    sha256 = serializers.CharField(
        source="bundle_sha256", help_text="SHA-256 of the uploaded archive"
    )
    manifest_sha256 = serializers.CharField(source="bundle_manifest_sha256")
    url = serializers.SerializerMethodField()

    def get_url(self, bid: Bid) -> str:
        return reverse("bundle-detail", args=[bid.bundle_public_id])


class DocumentSerializer(serializers.Serializer):
    class Meta:
        ref_name = "BidDocument"

    name = serializers.CharField()
    sha256 = serializers.CharField()
    size = serializers.IntegerField()
    content_type = serializers.CharField()
    uploaded_at = serializers.DateTimeField()
    url = serializers.SerializerMethodField()

    def get_url(self, document: BidDocument) -> str:
        return reverse("bid-document", args=[document.bid.public_id, document.sha256])


class BidSerializer(serializers.Serializer):
    class Meta:
        ref_name = "Bid"

    id = serializers.UUIDField(source="public_id")
    rfp = serializers.CharField(source="rfp.reference")
    status = serializers.CharField()
    version = serializers.IntegerField()
    commitment = serializers.CharField()
    submitted_at = serializers.DateTimeField()
    cover_note = serializers.CharField()
    claims = ClaimSerializer(source="claimed_metrics", many=True)
    cost_inputs = CostInputsSerializer(allow_null=True)
    documents = DocumentSerializer(source="current_documents", many=True)
    bundle = serializers.SerializerMethodField(
        help_text="The signed bundle the bid relies on (null: none)."
    )
    bundle_differences = serializers.JSONField(
        help_text=(
            'Where the bid differs from its bundle: {"claims": {"metric|stat|'
            'scenario": sentence}, "cost_inputs": {field: sentence}}.'
        )
    )

    @extend_schema_field(BidBundleSerializer(allow_null=True))
    def get_bundle(self, bid: Bid) -> dict[str, Any] | None:
        if bid.bundle_public_id is None:
            return None
        return BidBundleSerializer(bid).data


class OpenedBidSerializer(BidSerializer):
    class Meta:
        ref_name = "OpenedBid"

    vendor = OrganisationRefSerializer(source="vendor_organisation")


class ReceiptSerializer(serializers.Serializer):
    class Meta:
        ref_name = "BidReceipt"

    id = serializers.UUIDField(source="public_id")
    action = serializers.CharField()
    commitment = serializers.CharField()
    issued_at = serializers.DateTimeField()
    issued_to = serializers.CharField(source="issued_to.username")
    contents = serializers.JSONField(
        help_text="The committed payload: commitment == sha256(canonical JSON)."
    )


class ActionResultSerializer(serializers.Serializer):
    class Meta:
        ref_name = "BidActionResult"

    bid = BidSerializer()
    receipt = ReceiptSerializer()


def _bidder(request: Request, rfp_id: uuid.UUID) -> tuple[Rfp, Organisation]:
    rfp = rfp_get_visible_or_404(request.user, public_id=rfp_id)
    organisation = bidding_organisation(request.user, rfp)
    if organisation is None:
        raise PermissionDenied
    return rfp, organisation


def _result(receipt: BidReceipt, rfp: Rfp, organisation: Organisation, code: int):
    bid = bid_get_own(rfp=rfp, organisation=organisation)
    data = {"bid": bid, "receipt": receipt}
    return Response(ActionResultSerializer(data).data, status=code)


# --- the caller's own bid ---------------------------------------------------------


class BidOwnApi(APIView):
    """GET: the caller's organisation's bid (404 if none). POST: submit it, or
    replace it with a new version; current documents carry over unless named in
    ``remove_documents``. 201 for a (re)submission, 200 for a replacement."""

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "BidSubmitInput"

        class CostInputsInputSerializer(CostInputsSerializer):
            """
            The same fields, each optional: a blank one takes the bid's bundle's value
            (all are needed when the bid names no bundle)."""

            class Meta:
                ref_name = "BidCostInputsInput"

            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                for field in self.fields.values():
                    field.required = False

        cover_note = serializers.CharField(
            allow_blank=True, max_length=20000, default=""
        )
        bundle = serializers.UUIDField(
            required=False,
            help_text=(
                "Public id of one of your organisation's accepted bundles on this "
                "RFP; without it, the newest. Its claims and cost model become the "
                "bid's; claims and cost inputs given here replace the bundle's "
                "values and are flagged as differing from the signed bundle."
            ),
        )
        # many=True makes a ListSerializer, which takes max_length (the stubs'
        # Serializer does not)
        claims = ClaimSerializer(many=True, max_length=200, required=False)  # type: ignore[call-arg]
        cost_inputs = CostInputsInputSerializer(required=False)
        remove_documents = serializers.ListField(
            child=serializers.CharField(max_length=200), default=list
        )

    @extend_schema(operation_id="bid_own", responses={200: BidSerializer})
    def get(self, request: Request, rfp_id: uuid.UUID) -> Response:
        rfp, organisation = _bidder(request, rfp_id)
        bid = bid_get_own(rfp=rfp, organisation=organisation)
        if bid is None:
            raise Http404
        return Response(BidSerializer(bid).data)

    @extend_schema(
        operation_id="bid_submit",
        request=InputSerializer,
        responses={200: ActionResultSerializer, 201: ActionResultSerializer},
    )
    def post(self, request: SignedInApiRequest, rfp_id: uuid.UUID) -> Response:
        rfp, organisation = _bidder(request, rfp_id)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        bundle = data.pop("bundle", None)
        receipt = bid_submit(
            rfp=rfp,
            organisation=organisation,
            actor=request.user,
            bundle=str(bundle) if bundle is not None else None,
            **data,
        )
        created = receipt.action == BidReceipt.Action.SUBMITTED
        code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        return _result(receipt, rfp, organisation, code)


class BidDocumentUploadApi(APIView):
    """Add one document (multipart field ``file``) to the caller's bid: a new
    version. A file named like a current document replaces it."""

    parser_classes = [MultiPartParser]

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "BidDocumentUploadInput"

        file = serializers.FileField()

    @extend_schema(
        operation_id="bid_document_upload",
        request={"multipart/form-data": InputSerializer},
        responses={201: ActionResultSerializer},
    )
    def post(self, request: SignedInApiRequest, rfp_id: uuid.UUID) -> Response:
        rfp, organisation = _bidder(request, rfp_id)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        stored = bid_documents_store(uploads=[serializer.validated_data["file"]])
        receipt = bid_documents_add(
            rfp=rfp, organisation=organisation, actor=request.user, documents=stored
        )
        return _result(receipt, rfp, organisation, status.HTTP_201_CREATED)


class BidWithdrawApi(APIView):
    @extend_schema(
        operation_id="bid_withdraw",
        request=None,
        responses={200: ActionResultSerializer},
    )
    def post(self, request: SignedInApiRequest, rfp_id: uuid.UUID) -> Response:
        rfp, organisation = _bidder(request, rfp_id)
        receipt = bid_withdraw(rfp=rfp, organisation=organisation, actor=request.user)
        return _result(receipt, rfp, organisation, status.HTTP_200_OK)


class BidReconfirmApi(APIView):
    @extend_schema(
        operation_id="bid_reconfirm",
        request=None,
        responses={200: ActionResultSerializer},
    )
    def post(self, request: SignedInApiRequest, rfp_id: uuid.UUID) -> Response:
        rfp, organisation = _bidder(request, rfp_id)
        receipt = bid_reconfirm(rfp=rfp, organisation=organisation, actor=request.user)
        return _result(receipt, rfp, organisation, status.HTTP_200_OK)


# --- the buyer side and observers -------------------------------------------------


class BidListApi(APIView):
    """Sealed: only ``count`` and ``commitments`` (sorted by hash); ``bids`` is
    null. Opened: a page of the ``bids`` in full, for the buyer side (``next``
    and ``previous`` link the pages). Vendors get 403."""

    class OutputSerializer(PagedDocumentSerializer):
        class Meta:
            ref_name = "BidListResult"

        sealed = serializers.BooleanField()
        commitments = serializers.ListField(child=serializers.CharField())
        bids = OpenedBidSerializer(many=True, allow_null=True)

    @extend_schema(
        operation_id="bid_list",
        parameters=PAGE_PARAMETERS,
        responses={200: OutputSerializer},
    )
    def get(self, request: Request, rfp_id: uuid.UUID) -> Response:
        rfp = rfp_get_visible_or_404(request.user, public_id=rfp_id)
        if bidding_organisation(request.user, rfp) is not None:
            raise PermissionDenied
        data: dict[str, Any] = {
            "sealed": rfp.is_sealed,
            "count": bid_count_live(rfp=rfp),
            "next": None,
            "previous": None,
            "commitments": bid_commitments(rfp=rfp),
            "bids": None,
        }
        if not rfp.is_sealed and is_buyer_side(request.user, rfp):
            data["bids"], page = page_rows(self, request, bid_list_opened(rfp=rfp))
            data |= page
        return Response(self.OutputSerializer(data).data)


def _visible_bid(request: Request, bid_id: uuid.UUID) -> Bid:
    bid = bid_get_visible(request.user, public_id=bid_id)
    if bid is None:
        raise Http404
    return bid


class BidDetailApi(APIView):
    """One bid: the bidder's own, or any live bid for the buyer side once opened."""

    @extend_schema(operation_id="bid_detail", responses={200: OpenedBidSerializer})
    def get(self, request: Request, bid_id: uuid.UUID) -> Response:
        return Response(OpenedBidSerializer(_visible_bid(request, bid_id)).data)


class BidDocumentDownloadApi(APIView):
    @extend_schema(
        operation_id="bid_document_download",
        responses={
            (200, "application/octet-stream"): OpenApiResponse(OpenApiTypes.BINARY)
        },
    )
    def get(self, request: Request, bid_id: uuid.UUID, sha256: str) -> FileResponse:
        bid = _visible_bid(request, bid_id)
        own = bid_is_own(request.user, bid)
        document = bid_document_get(bid=bid, sha256=sha256, own=own)
        if document is None:
            raise Http404
        return bid_document_response(document)


class BidReceiptListApi(APIView):
    """The bid's receipts, newest first: for the bidder only (404 for others)."""

    class PageSerializer(serializers.Serializer):
        class Meta:
            ref_name = "BidReceiptPage"

        count = serializers.IntegerField()
        next = serializers.URLField(allow_null=True)
        previous = serializers.URLField(allow_null=True)
        results = ReceiptSerializer(many=True)

    @extend_schema(
        operation_id="bid_receipt_list",
        parameters=PAGE_PARAMETERS,
        responses={200: PageSerializer},
    )
    def get(self, request: Request, bid_id: uuid.UUID) -> Response:
        bid = _visible_bid(request, bid_id)
        if not bid_is_own(request.user, bid):
            raise Http404
        paginator = LimitOffsetPagination()
        page = paginator.paginate_queryset(bid_receipt_list(bid=bid), request, self)
        data = ReceiptSerializer(page, many=True).data
        return paginator.get_paginated_response(data)
