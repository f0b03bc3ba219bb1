"""The gates API's lists: a page of rows through the API's one paginator (limit
and offset), and the page's schema."""

from __future__ import annotations

from typing import Any, cast

from django.db.models import QuerySet
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from accounts.api.pagination import LimitOffsetPagination


def page_serializer(
    ref: str, rows: type[serializers.Serializer]
) -> type[serializers.Serializer]:
    """The schema of a page of ``rows`` (the component ``ref``)."""

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
    queryset: QuerySet[Any],
    rows: type[serializers.Serializer],
) -> Response:
    """The requested page of ``queryset``, each row written by ``rows``."""
    # the API's one paginator (api_settings imports the class the setting names,
    # accounts.api.pagination's; the stubs type the setting's text)
    paginator_class = cast(
        "type[LimitOffsetPagination]", api_settings.DEFAULT_PAGINATION_CLASS
    )
    paginator = paginator_class()
    page = paginator.paginate_queryset(queryset, request, view=view)
    return paginator.get_paginated_response(rows(page, many=True).data)
