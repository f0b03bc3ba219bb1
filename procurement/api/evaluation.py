"""Evaluation API: the caller's score sheet, consensus and comparison (JSON and CSV;
the TCO formula versions and the award are ``procurement.api.award``). Buyer side
only: vendors get 404 on all of these, auditors and lab operators 403; before
opening every endpoint answers 409."""

from __future__ import annotations

import json
import uuid
from typing import Any

from django.http import Http404, HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.pagination import (
    PAGE_PARAMETERS,
    PagedDocumentSerializer,
    page_rows,
)
from accounts.api.schema import error_response
from accounts.views.requests import SignedInApiRequest
from procurement.api.serializers import BidRefSerializer
from procurement.lib.scoring import DISAGREEMENT_SPREAD, SCORE_MAX, SCORE_MIN
from procurement.models import Rfp, ScoreSheet
from procurement.permissions import (
    bidding_organisation,
    can_evaluate,
    is_buyer_side,
)
from procurement.selectors.comparison import comparison_for
from procurement.selectors.comparison_exports import (
    comparison_csv_text,
    comparison_json,
)
from procurement.selectors.evaluation import (
    consensus_visibility,
    evaluation_bids,
    evaluation_board,
    evaluation_criteria,
    score_sheet_get,
    score_sheet_missing,
    score_sheet_scores,
)
from procurement.selectors.rfps import rfp_get_visible_or_404
from procurement.services.evaluation import (
    EvaluationStateError,
    ScoreEntry,
    score_sheet_save,
    score_sheet_submit,
)


def buyer_side_rfp(request: Request, rfp_id: uuid.UUID) -> Rfp:
    """404 for RFPs the caller may not know and for vendors; 403 for other roles."""
    rfp = rfp_get_visible_or_404(request.user, public_id=rfp_id)
    if bidding_organisation(request.user, rfp) is not None:
        raise Http404
    if not is_buyer_side(request.user, rfp):
        raise PermissionDenied
    return rfp


def require_opened(rfp: Rfp) -> Rfp:
    if rfp.is_sealed:
        raise EvaluationStateError(
            f"The bids of {rfp.reference} are sealed; there is no evaluation before "
            "they are opened.",
            code="rfp_sealed",
        )
    return rfp


class CriterionSerializer(serializers.Serializer):
    class Meta:
        ref_name = "EvaluationCriterion"

    id = serializers.IntegerField(source="pk")
    name = serializers.CharField()
    weight = serializers.IntegerField(help_text="Percent; the weights sum to 100.")


# --- score sheet ----------------------------------------------------------------


class SheetOutputSerializer(PagedDocumentSerializer):
    class Meta:
        ref_name = "ScoreSheet"

    class ScoreSerializer(serializers.Serializer):
        class Meta:
            ref_name = "ScoreSheetScore"

        bid = serializers.UUIDField()
        criterion = serializers.IntegerField()
        value = serializers.IntegerField(min_value=SCORE_MIN, max_value=SCORE_MAX)
        justification = serializers.CharField()

    class MissingSerializer(serializers.Serializer):
        class Meta:
            ref_name = "ScoreSheetMissing"

        bid = serializers.UUIDField()
        criterion = serializers.IntegerField()

    status = serializers.ChoiceField(["not_started", "draft", "submitted"])
    submitted_at = serializers.DateTimeField(allow_null=True)
    editable = serializers.BooleanField()
    bids = BidRefSerializer(many=True, help_text="A page of the bids.")
    criteria = CriterionSerializer(many=True)
    scores = ScoreSerializer(many=True, help_text="The page's bids' scores.")
    missing = MissingSerializer(many=True, help_text="The page's bids' gaps.")


def _sheet_data(
    view: APIView, request: Request, rfp: Rfp, sheet: ScoreSheet | None
) -> dict[str, Any]:
    """The sheet for a page of the bids: their scores and gaps."""
    criteria = evaluation_criteria(rfp)
    bids, page = page_rows(view, request, list(evaluation_bids(rfp)))
    scores = score_sheet_scores(sheet)
    by_pk = {b.pk: b.public_id for b in bids}
    submitted = sheet is not None and sheet.submitted_at is not None
    return page | {
        "status": "submitted" if submitted else ("draft" if sheet else "not_started"),
        "submitted_at": sheet.submitted_at if sheet else None,
        "editable": rfp.status == Rfp.Status.OPENED and not submitted,
        "bids": bids,
        "criteria": criteria,
        "scores": [
            {
                "bid": by_pk[s.bid_id],
                "criterion": s.criterion_id,
                "value": s.value,
                "justification": s.justification,
            }
            for s in scores.values()
            if s.bid_id in by_pk
        ],
        "missing": [
            {"bid": b.public_id, "criterion": c.pk}
            for b, c in score_sheet_missing(bids, criteria, scores)
        ],
    }


def _evaluator_rfp(request: Request, rfp_id: uuid.UUID) -> Rfp:
    rfp = require_opened(buyer_side_rfp(request, rfp_id))
    if not can_evaluate(request.user, rfp):
        raise PermissionDenied("Only evaluators of the buying organisation score.")
    return rfp


class ScoreSheetApi(APIView):
    """The caller's own score sheet: read it, or replace its draft scores."""

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "ScoreSheetInput"

        class EntrySerializer(serializers.Serializer):
            class Meta:
                ref_name = "ScoreSheetEntryInput"

            bid = serializers.UUIDField()
            criterion = serializers.IntegerField()
            value = serializers.IntegerField(min_value=SCORE_MIN, max_value=SCORE_MAX)
            justification = serializers.CharField(max_length=4000)

        scores = EntrySerializer(many=True, allow_empty=True)

    @extend_schema(
        operation_id="rfp_scores_get",
        parameters=PAGE_PARAMETERS,
        responses={200: SheetOutputSerializer, 409: error_response(409)},
    )
    def get(self, request: Request, rfp_id: uuid.UUID) -> Response:
        rfp = _evaluator_rfp(request, rfp_id)
        sheet = score_sheet_get(rfp, request.user)
        data = _sheet_data(self, request, rfp, sheet)
        return Response(SheetOutputSerializer(data).data)

    @extend_schema(
        operation_id="rfp_scores_put",
        parameters=PAGE_PARAMETERS,
        request=InputSerializer,
        responses={200: SheetOutputSerializer},
    )
    def put(self, request: SignedInApiRequest, rfp_id: uuid.UUID) -> Response:
        rfp = _evaluator_rfp(request, rfp_id)
        given = self.InputSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        entries = [ScoreEntry(**e) for e in given.validated_data["scores"]]
        sheet = score_sheet_save(rfp=rfp, entries=entries, actor=request.user)
        data = _sheet_data(self, request, rfp, sheet)
        return Response(SheetOutputSerializer(data).data)


class ScoreSheetSubmitApi(APIView):
    """Submit the caller's sheet: every bid scored on every criterion, then locked."""

    @extend_schema(
        operation_id="rfp_scores_submit",
        parameters=PAGE_PARAMETERS,
        request=None,
        responses={200: SheetOutputSerializer},
    )
    def post(self, request: SignedInApiRequest, rfp_id: uuid.UUID) -> Response:
        rfp = _evaluator_rfp(request, rfp_id)
        sheet = score_sheet_submit(rfp=rfp, actor=request.user)
        data = _sheet_data(self, request, rfp, sheet)
        return Response(SheetOutputSerializer(data).data)


# --- consensus ------------------------------------------------------------------


class ConsensusApi(APIView):
    """Mean, spread and standard deviation per bid and criterion over the submitted
    sheets, the weighted totals and the ranking. Evaluators see it after submitting
    their own sheet; buyers and admins as soon as one sheet is submitted
    (``provisional`` until every evaluator has)."""

    class OutputSerializer(PagedDocumentSerializer):
        class Meta:
            ref_name = "Consensus"

        class RowSerializer(serializers.Serializer):
            class Meta:
                ref_name = "ConsensusRow"

            class CellSerializer(serializers.Serializer):
                class Meta:
                    ref_name = "ConsensusCell"

                class IndividualSerializer(serializers.Serializer):
                    class Meta:
                        ref_name = "ConsensusScore"

                    evaluator = serializers.CharField()
                    value = serializers.IntegerField()
                    justification = serializers.CharField()

                criterion = serializers.IntegerField(source="criterion.pk")
                mean = serializers.DecimalField(
                    6, 2, source="result.mean", allow_null=True
                )
                spread = serializers.IntegerField(
                    source="result.spread", allow_null=True
                )
                stdev = serializers.DecimalField(
                    6, 2, source="result.stdev", allow_null=True
                )
                disagreement = serializers.BooleanField(source="result.disagreement")
                scores = IndividualSerializer(many=True)

            bid = BidRefSerializer()
            rank = serializers.IntegerField(source="result.rank")
            weighted_total = serializers.DecimalField(
                6, 2, source="result.weighted_total", help_text="Of 100."
            )
            complete = serializers.BooleanField(source="result.complete")
            cells = CellSerializer(many=True)

        provisional = serializers.BooleanField()
        submitted_sheets = serializers.IntegerField(source="submitted")
        evaluators = serializers.IntegerField()
        disagreement_spread = serializers.IntegerField()
        criteria = CriterionSerializer(many=True)
        rows = RowSerializer(many=True, help_text="A page of the bids, by rank.")

    @extend_schema(
        operation_id="rfp_consensus",
        parameters=PAGE_PARAMETERS,
        responses={200: OutputSerializer, 409: error_response(409)},
    )
    def get(self, request: Request, rfp_id: uuid.UUID) -> Response:
        rfp = require_opened(buyer_side_rfp(request, rfp_id))
        visibility = consensus_visibility(request.user, rfp)
        if not visibility.visible:
            raise PermissionDenied(visibility.reason)
        board = evaluation_board(rfp)
        rows, page = page_rows(self, request, board.rows)
        data = page | {
            "provisional": board.provisional,
            "submitted": board.submitted,
            "evaluators": len(board.progress),
            "disagreement_spread": DISAGREEMENT_SPREAD,
            "criteria": board.criteria,
            "rows": rows,
        }
        return Response(self.OutputSerializer(data).data)


# --- comparison -----------------------------------------------------------------


class CsvRenderer(BaseRenderer):
    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data: Any, accepted_media_type: Any = None, context: Any = None):
        """Errors (dicts) still go out as JSON text."""
        return data if isinstance(data, str | bytes) else json.dumps(data)


class ComparisonApi(APIView):
    """The comparison matrix as JSON, the page's JSON export with its vendors
    paged (``count``, ``next``, ``previous``): vendors with rank, weighted total
    and consensus means (only when the caller may see scores), completeness,
    claimed metrics and TCO; every number with its unit."""

    @extend_schema(
        operation_id="rfp_comparison",
        parameters=PAGE_PARAMETERS,
        responses={200: OpenApiTypes.OBJECT, 409: error_response(409)},
    )
    def get(self, request: Request, rfp_id: uuid.UUID) -> Response:
        rfp = require_opened(buyer_side_rfp(request, rfp_id))
        document = comparison_json(comparison_for(request.user, rfp))
        vendors, page = page_rows(self, request, document.pop("vendors"))
        return Response(page | document | {"vendors": vendors})


class ComparisonCsvApi(APIView):
    """The comparison matrix as CSV with a header row (same data as the JSON)."""

    renderer_classes = [JSONRenderer, CsvRenderer]

    @extend_schema(
        operation_id="rfp_comparison_csv",
        responses={
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="CSV"),
            409: error_response(409),
        },
    )
    def get(self, request: Request, rfp_id: uuid.UUID) -> HttpResponse:
        rfp = require_opened(buyer_side_rfp(request, rfp_id))
        text = comparison_csv_text(comparison_for(request.user, rfp))
        response = HttpResponse(text, content_type="text/csv; charset=utf-8")
        name = f"{rfp.reference}-comparison.csv"
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response
