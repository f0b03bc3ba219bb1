"""A gate's campaign: a lab operator of a lab the RFP's buyer engages starts a
campaign of the plan's bundle on one of its pools for one gate of the current
frozen plan; the gate is evaluated when the campaign's runs end (the same path
as the gate page's "Run this gate")."""

from __future__ import annotations

import uuid
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.exceptions import Problem
from accounts.views.requests import SignedInApiRequest
from benchmarks.models import LabPool
from benchmarks.selectors.access import pool_list_operated_by
from benchmarks.services.campaigns import MAX_REPETITIONS
from gates.api.access import one
from gates.api.serializers import WRITE_ERRORS
from gates.exceptions import GatesError
from gates.models import GateCampaign
from gates.permissions import gate_scope
from gates.selectors.plans import plan_list_visible_to
from gates.services.runs import gate_campaign_start


class GateCampaignStartApi(APIView):
    """Run one gate of a frozen plan: a campaign of the plan's bundle (the scenarios
    the gate judges, ``repetitions`` each, by default the gate's largest
    ``min_runs``) on one of your lab's pools; the gate is evaluated when its runs
    end. Lab operators of a lab the RFP's buyer engages (others who see the plan:
    403); 409 when the plan is not the current frozen one or the bids are sealed.
    The runs go only to the gate's hosts of the pool (its canary hosts, or the
    rest of the pool after an earlier gate's); 400 when the gate names a host the
    pool lacks, or none is left."""

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "GateCampaignStartInput"

        pool = serializers.SlugField(help_text="The name of a pool of your lab.")
        repetitions = serializers.IntegerField(
            min_value=1, max_value=MAX_REPETITIONS, required=False
        )
        hosts = serializers.ListField(
            child=serializers.CharField(),
            required=False,
            help_text="Refused (400): the gate plan names a gate's hosts (its "
            "canary hosts, and the rest of the pool for a later gate), not the "
            "request. See the output's hosts.",
        )

        lab_plan = serializers.JSONField(
            required=False,
            help_text="The lab's own scenarios, run beside the ones the gate "
            'judges, and neighbour jobs: {"scenarios": [...], "neighbours": '
            "{...}}; every problem is named by its path (lab_plan.…).",
        )

        def validate_hosts(self, value: list[str]) -> list[str]:
            raise serializers.ValidationError(
                "The hosts are not chosen here: the gate plan names a gate's "
                "canary hosts ('hosts'), and a later gate runs on the rest of the "
                "pool. Leave 'hosts' out."
            )

    class OutputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "GateCampaignStarted"

        campaign = serializers.UUIDField(source="campaign.public_id")
        plan = serializers.UUIDField(source="plan.public_id")
        plan_version = serializers.IntegerField(source="plan.version")
        gate = serializers.CharField()
        pool = serializers.CharField(source="campaign.pool.name")
        hosts = serializers.ListField(
            source="campaign.hosts",
            child=serializers.CharField(),
            help_text="The hosts of the pool its runs are bound to (the gate's "
            "canary hosts, or the rest of the pool after them); empty: any host.",
        )
        bundle_sha256 = serializers.CharField(source="campaign.bundle.sha256")
        repetitions = serializers.IntegerField(source="campaign.repetitions")
        runs = serializers.SerializerMethodField()
        url = serializers.SerializerMethodField(
            help_text="The campaign's page; the gate's board shows the evaluation "
            "once its runs have ended."
        )

        def get_runs(self, link: GateCampaign) -> int:
            return link.campaign.runs.count()

        def get_url(self, link: GateCampaign) -> str:
            args = (link.campaign.public_id,)
            return reverse("benchmarks:campaign_detail", args=args)

    @extend_schema(
        operation_id="gate_campaign_start",
        request=InputSerializer,
        responses={
            201: OpenApiResponse(
                OutputSerializer, description="The campaign started for the gate."
            ),
            **WRITE_ERRORS,
        },
    )
    def post(
        self, request: SignedInApiRequest, plan_id: uuid.UUID, gate: str
    ) -> Response:
        plan = one(plan_list_visible_to(request.user), plan_id)
        if gate not in plan.gate_names:
            raise Http404
        if not gate_scope(request.user, plan.rfp).lab:
            raise PermissionDenied
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        link = gate_campaign_start(
            plan=plan,
            gate=gate,
            pool=_pool(request, data.validated_data["pool"]),
            actor=request.user,
            repetitions=data.validated_data.get("repetitions"),
            lab_plan=data.validated_data.get("lab_plan"),
        )
        body: Any = self.OutputSerializer(link).data
        return Response(body, status=status.HTTP_201_CREATED)


def _pool(request: Request, name: str) -> LabPool:
    pool = pool_list_operated_by(request.user).filter(name=name).first()
    if pool is None:
        message = f"{name!r} is not a pool of your lab."
        raise GatesError(message, "no_pool", (Problem("no_pool", message, "pool"),))
    return pool
