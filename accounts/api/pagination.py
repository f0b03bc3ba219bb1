"""The API's one paginator: ``?limit`` and ``?offset`` pages whose limit is cut to
``MAX_LIMIT``, so a number beyond the database's integers never reaches a query
(an offset past the end is an empty page before any query). Either parameter,
when given, is one whole number (``limit`` at least 1, ``offset`` at least 0), as
the OpenAPI document says; anything else is a 400 that names it."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence
from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter
from rest_framework import pagination, serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.lib.paging import MAX_PAGE_SIZE, PAGE_SIZE

MAX_LIMIT = MAX_PAGE_SIZE
# For an APIView that pages with this paginator in get() and declares its query
# parameters itself (``@extend_schema(parameters=PAGE_PARAMETERS)``).
PAGE_PARAMETERS = [
    OpenApiParameter(
        "limit",
        {"type": "integer", "minimum": 1},
        description=f"Page size (default {PAGE_SIZE}, at most {MAX_LIMIT}).",
    ),
    OpenApiParameter(
        "offset", {"type": "integer", "minimum": 0}, description="Rows to skip."
    ),
]
_DIGITS = re.compile(r"[0-9]+")


def _query_int(request: Request, name: str, minimum: int) -> int | None:
    """The query parameter ``name`` as a whole number, None when absent."""
    values = request.query_params.getlist(name)
    if not values:
        return None
    if len(values) == 1 and _DIGITS.fullmatch(values[0]):
        with contextlib.suppress(ValueError):  # past Python's 4,300 digits
            value = int(values[0])
            if value >= minimum:
                return value
    raise ValidationError({name: [f"One whole number, at least {minimum}."]})


class LimitOffsetPagination(pagination.LimitOffsetPagination):
    max_limit = MAX_LIMIT

    def get_limit(self, request: Request) -> int | None:
        limit = _query_int(request, self.limit_query_param, minimum=1)
        return self.default_limit if limit is None else min(limit, MAX_LIMIT)

    def get_offset(self, request: Request) -> int:
        return _query_int(request, self.offset_query_param, minimum=0) or 0

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters: list[dict[str, Any]] = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            limit = parameter["name"] == self.limit_query_param
            parameter["schema"]["minimum"] = 1 if limit else 0
        return parameters


def page_serializer(
    ref: str, rows: type[serializers.Serializer]
) -> type[serializers.Serializer]:
    """The schema of a page of ``rows`` (the component ``ref``): the shape every
    list answers, ``{"count", "next", "previous", "results"}``."""

    class PageSerializer(serializers.Serializer):
        class Meta:
            ref_name = ref

        count = serializers.IntegerField()
        next = serializers.URLField(allow_null=True)
        previous = serializers.URLField(allow_null=True)
        results = rows(many=True)

    return PageSerializer


def page_response(
    view: APIView,
    request: Request,
    rows: Sequence[Any] | QuerySet[Any],
    serializer: type[serializers.Serializer],
    context: dict[str, Any] | None = None,
) -> Response:
    """The requested page of ``rows`` (a queryset or a list), each row written by
    ``serializer``."""
    paginator = LimitOffsetPagination()
    page = paginator.paginate_queryset(rows, request, view=view)
    data = serializer(page, many=True, context=context or {}).data
    return paginator.get_paginated_response(data)


class PagedDocumentSerializer(serializers.Serializer):
    """The page keys of a document that pages one list of rows beside its other
    fields (a matrix's header axes stay whole): ``count`` rows in all, the
    ``next`` and ``previous`` pages' links."""

    count = serializers.IntegerField(help_text="Rows in all, over every page.")
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)


def page_rows(
    view: APIView, request: Request, rows: Sequence[Any] | QuerySet[Any]
) -> tuple[list[Any], dict[str, Any]]:
    """For a document that pages one list of rows beside its other fields: the
    requested page of ``rows`` and the page's ``count``, ``next`` and
    ``previous`` (``PagedDocumentSerializer``)."""
    paginator = LimitOffsetPagination()
    page = paginator.paginate_queryset(rows, request, view=view)
    links = {
        "count": paginator.count,
        "next": paginator.get_next_link(),
        "previous": paginator.get_previous_link(),
    }
    return list(page or []), links
