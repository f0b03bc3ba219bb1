from __future__ import annotations

import uuid

from django.http import Http404
from django.urls import path
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from procurement.selectors import (
    invited_vendor_scope_for,
    rfp_get_visible,
    rfp_list_visible_to,
)
from procurement.serializers import RfpOutputSerializer


class RfpListApi(APIView):
    """RFPs visible to the caller, soonest deadline first."""

    class PageSerializer(serializers.Serializer):
        class Meta:
            ref_name = "RfpPage"

        count = serializers.IntegerField()
        next = serializers.URLField(allow_null=True)
        previous = serializers.URLField(allow_null=True)
        results = RfpOutputSerializer(many=True)

    @extend_schema(
        operation_id="rfp_list",
        parameters=[
            OpenApiParameter("limit", int, description="Page size (default 50)."),
            OpenApiParameter("offset", int, description="Rows to skip."),
        ],
        responses={200: PageSerializer},
    )
    def get(self, request: Request) -> Response:
        paginator = LimitOffsetPagination()
        rfps = rfp_list_visible_to(request.user).prefetch_related("invited_vendors")
        page = paginator.paginate_queryset(rfps, request, view=self)
        context = {"invited_scope": invited_vendor_scope_for(request.user)}
        data = RfpOutputSerializer(page, many=True, context=context).data
        return paginator.get_paginated_response(data)


class RfpDetailApi(APIView):
    """One RFP; 404 when the caller may not know it exists."""

    @extend_schema(operation_id="rfp_detail", responses={200: RfpOutputSerializer})
    def get(self, request: Request, rfp_id: uuid.UUID) -> Response:
        rfp = rfp_get_visible(request.user, public_id=rfp_id)
        if rfp is None:
            raise Http404
        self.check_object_permissions(request, rfp)
        context = {"invited_scope": invited_vendor_scope_for(request.user)}
        return Response(RfpOutputSerializer(rfp, context=context).data)


urlpatterns = [
    path("rfps/", RfpListApi.as_view(), name="rfp-list"),
    path("rfps/<uuid:rfp_id>/", RfpDetailApi.as_view(), name="rfp-detail"),
]
