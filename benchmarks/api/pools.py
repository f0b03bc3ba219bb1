"""A lab pool's device and endpoint policy (``reprogate.lab-policy/v1``): read
and set by the pool's lab operators. Anyone who operates no lab gets 403; an
operator of another lab 404 (the pool's existence is not revealed)."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.views.requests import SignedInApiRequest
from benchmarks.models import LabPool
from benchmarks.selectors.access import lab_organisation_list_for, pool_list_operated_by
from benchmarks.services.pools import pool_policy_set


def _operated_pool(request: Request, pool_name: str) -> LabPool:
    if not lab_organisation_list_for(request.user).exists():
        raise PermissionDenied
    pool = pool_list_operated_by(request.user).filter(name=pool_name).first()
    if pool is None:
        raise Http404
    return pool


class PoolPolicyApi(APIView):
    """The pool's policy (GET); replace it (PUT, the whole document; ``{}``
    clears it: no devices, no network)."""

    class OutputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "LabPoolPolicy"

        pool = serializers.CharField(source="name")
        policy = serializers.JSONField()
        updated_at = serializers.DateTimeField()

    @extend_schema(operation_id="lab_pool_policy", responses={200: OutputSerializer})
    def get(self, request: Request, pool_name: str) -> Response:
        pool = _operated_pool(request, pool_name)
        return Response(self.OutputSerializer(pool).data)

    @extend_schema(
        operation_id="lab_pool_policy_set",
        request={"application/json": {"type": "object"}},
        responses={200: OutputSerializer},
    )
    def put(self, request: SignedInApiRequest, pool_name: str) -> Response:
        pool = _operated_pool(request, pool_name)
        pool = pool_policy_set(pool=pool, policy=request.data, actor=request.user)
        return Response(self.OutputSerializer(pool).data)
