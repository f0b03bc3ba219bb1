"""Clarifications and addenda over the API, with the page's rules: 404 for an RFP
or question the caller may not know exists, 403 for a forbidden action."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, cast

from django.http import Http404
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import exceptions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.pagination import PAGE_PARAMETERS, LimitOffsetPagination
from accounts.api.parsers import JSONParser
from accounts.views.requests import SignedInApiRequest
from procurement.api.serializers import (
    ONE_LINE_TEXT,
    PERCENT_TEXT,
    RequirementsDocumentSerializer,
)
from procurement.models import Rfp
from procurement.permissions import can_manage_rfp
from procurement.selectors.clarifications import (
    AddendumView,
    ClarificationRow,
    ClarificationScope,
    addendum_diff_rows,
    addendum_list_for,
    clarification_find_visible,
    clarification_list_visible_to,
    clarification_rows,
    clarification_scope_for,
)
from procurement.selectors.rfps import rfp_get_visible_or_404
from procurement.services.addenda import REASON_MAX_LENGTH, rfp_amend
from procurement.services.clarifications import (
    ANSWER_MAX_LENGTH,
    QUESTION_MAX_LENGTH,
    clarification_answer,
    clarification_ask,
)


def _rfp_and_scope(
    request: Request, rfp_id: uuid.UUID
) -> tuple[Rfp, ClarificationScope]:
    rfp = rfp_get_visible_or_404(request.user, public_id=rfp_id)
    scope = clarification_scope_for(request.user, rfp)
    if not scope.can_read:
        raise exceptions.PermissionDenied(
            "Only the buyer side and invited vendors read clarifications."
        )
    return rfp, scope


class ClarificationOutputSerializer(serializers.Serializer):
    """A clarification as the caller may see it; it never names who asked.
    ``asked_at`` is given to the buyer side and to the asking organisation only."""

    class Meta:
        ref_name = "Clarification"

    id = serializers.UUIDField(source="clarification.public_id")
    # a declared field: DRF's metaclass takes it out of the class (Field.label stays)
    label = serializers.CharField()  # type: ignore[assignment]
    public_label = serializers.CharField(help_text='"Q&A N" once answered.')
    status = serializers.SerializerMethodField()
    question = serializers.CharField(source="clarification.question")
    answer = serializers.CharField(source="clarification.answer")
    answered_at = serializers.DateTimeField(
        source="clarification.answered_at", allow_null=True
    )
    asked_at = serializers.SerializerMethodField()
    is_own = serializers.BooleanField()

    @extend_schema_field(serializers.ChoiceField(choices=["pending", "answered"]))
    def get_status(self, row: ClarificationRow) -> str:
        return "answered" if row.clarification.is_answered else "pending"

    @extend_schema_field(serializers.DateTimeField(allow_null=True))
    def get_asked_at(self, row: ClarificationRow) -> datetime | None:
        return row.clarification.created_at if row.show_asked_at else None


class RfpClarificationsApi(APIView):
    """GET: the RFP's clarifications the caller may see (the buyer side: all,
    unanswered first; a vendor: every answered one and its own). POST: an invited
    vendor asks a question."""

    class PageSerializer(serializers.Serializer):
        class Meta:
            ref_name = "ClarificationPage"

        count = serializers.IntegerField()
        next = serializers.URLField(allow_null=True)
        previous = serializers.URLField(allow_null=True)
        results = ClarificationOutputSerializer(many=True)

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "ClarificationAskInput"

        question = serializers.CharField(max_length=QUESTION_MAX_LENGTH)

    @extend_schema(
        operation_id="rfp_clarification_list",
        parameters=PAGE_PARAMETERS,
        responses={200: PageSerializer},
    )
    def get(self, request: Request, rfp_id: uuid.UUID) -> Response:
        rfp, scope = _rfp_and_scope(request, rfp_id)
        paginator = LimitOffsetPagination()
        listed = clarification_list_visible_to(scope, rfp=rfp)
        page = paginator.paginate_queryset(listed, request, view=self) or []
        rows = clarification_rows(scope, rfp=rfp, clarifications=page)
        data = ClarificationOutputSerializer(rows, many=True).data
        return paginator.get_paginated_response(data)

    @extend_schema(
        operation_id="rfp_clarification_ask",
        request=InputSerializer,
        responses={201: ClarificationOutputSerializer},
    )
    def post(self, request: SignedInApiRequest, rfp_id: uuid.UUID) -> Response:
        rfp, scope = _rfp_and_scope(request, rfp_id)
        if not scope.can_ask or scope.organisation is None:
            raise exceptions.PermissionDenied("Only invited vendors ask questions.")
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        clarification = clarification_ask(
            rfp=rfp,
            organisation=scope.organisation,
            actor=request.user,
            **serializer.validated_data,
        )
        (row,) = clarification_rows(scope, rfp=rfp, clarifications=[clarification])
        data = ClarificationOutputSerializer(row).data
        return Response(data, status=status.HTTP_201_CREATED)


class ClarificationAnswerApi(APIView):
    """A buyer publishes the answer to every invited vendor. Answers are final."""

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "ClarificationAnswerInput"

        answer = serializers.CharField(max_length=ANSWER_MAX_LENGTH)

    @extend_schema(
        operation_id="clarification_answer",
        request=InputSerializer,
        responses={200: ClarificationOutputSerializer},
    )
    def post(
        self, request: SignedInApiRequest, clarification_id: uuid.UUID
    ) -> Response:
        found = clarification_find_visible(request.user, public_id=clarification_id)
        if found is None:
            raise Http404
        clarification, scope = found
        if not can_manage_rfp(request.user, clarification.rfp):
            raise exceptions.PermissionDenied("Only buyers answer questions.")
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        clarification = clarification_answer(
            clarification=clarification, actor=request.user, **serializer.validated_data
        )
        rfp = clarification.rfp
        (row,) = clarification_rows(scope, rfp=rfp, clarifications=[clarification])
        return Response(ClarificationOutputSerializer(row).data)


class RfpAddendaApi(APIView):
    """GET: the RFP's addenda with their diffs (buyer side and invited vendors).
    POST: a buyer issues the next addendum (JSON: its changes are an object)."""

    parser_classes = [JSONParser]

    class PageSerializer(serializers.Serializer):
        class Meta:
            ref_name = "AddendumPage"

        class AddendumOutputSerializer(serializers.Serializer):
            class Meta:
                ref_name = "Addendum"

            class AddendumChangeSerializer(serializers.Serializer):
                class Meta:
                    ref_name = "AddendumChange"

                field = serializers.CharField()
                label = serializers.CharField()  # type: ignore[assignment]  # as above
                old = serializers.JSONField(
                    help_text="ISO 8601 for times, a string for decimals."
                )
                new = serializers.JSONField()

            number = serializers.IntegerField(source="addendum.number")
            reason = serializers.CharField(source="addendum.reason")
            issued_at = serializers.DateTimeField(source="addendum.issued_at")
            deadline_extended_to = serializers.DateTimeField(
                source="addendum.deadline_extended_to",
                allow_null=True,
                help_text="Set when the addendum pushed the submission deadline out.",
            )
            changes = AddendumChangeSerializer(source="rows", many=True)

        count = serializers.IntegerField()
        next = serializers.URLField(allow_null=True)
        previous = serializers.URLField(allow_null=True)
        results = AddendumOutputSerializer(many=True)

    OutputSerializer = PageSerializer.AddendumOutputSerializer

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "AddendumIssueInput"

        class AddendumChangesInputSerializer(serializers.Serializer):
            """The conditions an addendum may change; any other key is refused."""

            class Meta:
                ref_name = "AddendumChangesInput"
                closed = True  # the schema says: no other key (accounts.api.schema)

            title = serializers.CharField(
                max_length=200, required=False, validators=[ONE_LINE_TEXT]
            )
            description = serializers.CharField(required=False, allow_blank=True)
            questions_deadline = serializers.DateTimeField(
                required=False, allow_null=True
            )
            submission_deadline = serializers.DateTimeField(required=False)
            min_bids = serializers.IntegerField(
                required=False, min_value=1, max_value=20
            )
            workload_requirements = serializers.CharField(
                required=False, allow_blank=True
            )
            escrow_clause = serializers.CharField(required=False, allow_blank=True)
            escrow_retention_years = serializers.IntegerField(
                required=False, min_value=1, max_value=50, allow_null=True
            )
            acceptance_clause = serializers.CharField(required=False, allow_blank=True)
            retest_clause = serializers.CharField(required=False, allow_blank=True)
            retest_tolerance_pct = serializers.DecimalField(
                max_digits=5,
                decimal_places=2,
                required=False,
                validators=[PERCENT_TEXT],  # 0 to 100, as the pattern says
            )
            retest_vendor_funded = serializers.BooleanField(required=False)
            retest_deadline_days = serializers.IntegerField(
                required=False, min_value=1, max_value=365
            )
            retest_max_attempts = serializers.IntegerField(
                required=False, min_value=1, max_value=10
            )
            audit_rights_clause = serializers.CharField(
                required=False, allow_blank=True
            )
            dispute_window_days = serializers.IntegerField(
                required=False, min_value=1, max_value=90
            )
            update_deposit_days = serializers.IntegerField(
                required=False, min_value=1, max_value=365
            )
            drift_policy = serializers.JSONField(required=False)
            requirements = RequirementsDocumentSerializer(
                required=False,
                help_text="The whole new requirements document; the addendum "
                "shows what differs, path by path.",
            )

            def to_internal_value(self, data: Any) -> Any:
                if isinstance(data, dict):
                    unknown = sorted(set(data) - set(self.fields))
                    if unknown:
                        raise serializers.ValidationError(
                            {
                                n: ["An addendum cannot change this field."]
                                for n in unknown
                            }
                        )
                return super().to_internal_value(data)

        changes = AddendumChangesInputSerializer()
        reason = serializers.CharField(max_length=REASON_MAX_LENGTH)

    @extend_schema(
        operation_id="rfp_addendum_list",
        parameters=PAGE_PARAMETERS,
        responses={200: PageSerializer},
    )
    def get(self, request: Request, rfp_id: uuid.UUID) -> Response:
        rfp, _scope = _rfp_and_scope(request, rfp_id)
        paginator = LimitOffsetPagination()
        page = paginator.paginate_queryset(addendum_list_for(rfp=rfp), request, self)
        views = [AddendumView(a, addendum_diff_rows(a)) for a in page or []]
        data = self.OutputSerializer(views, many=True).data
        return paginator.get_paginated_response(data)

    @extend_schema(
        operation_id="rfp_addendum_issue",
        request=InputSerializer,
        responses={201: OutputSerializer},
    )
    def post(self, request: SignedInApiRequest, rfp_id: uuid.UUID) -> Response:
        rfp, _scope = _rfp_and_scope(request, rfp_id)
        if not can_manage_rfp(request.user, rfp):
            raise exceptions.PermissionDenied("Only buyers issue addenda.")
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        if "requirements" in data["changes"]:  # as sent: the library reads it
            sent = cast("dict[str, Any]", request.data)
            data["changes"]["requirements"] = sent["changes"]["requirements"]
        addendum = rfp_amend(rfp=rfp, actor=request.user, **data)
        data = self.OutputSerializer(
            AddendumView(addendum, addendum_diff_rows(addendum))
        ).data
        return Response(data, status=status.HTTP_201_CREATED)
