"""The runner API under ``/api/v1/``: pools (lab operators), campaigns (list,
start, detail, cancel) and runs (detail with metrics, cancel). Campaigns and
runs the caller may not see answer 404 (``benchmarks.selectors.access``)."""

from __future__ import annotations

import uuid

from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.pagination import (
    PAGE_PARAMETERS,
    LimitOffsetPagination,
    page_response,
    page_serializer,
)
from accounts.api.schema import error_response
from accounts.lib.paging import PAGE_SIZE
from accounts.views.requests import SignedInApiRequest
from artifacts.storage.blobs import blob_open
from benchmarks.models import Campaign, Run
from benchmarks.selectors.access import (
    bundle_list_startable_by,
    campaign_get_visible,
    campaign_list_visible_to,
    can_operate_campaign,
    lab_organisation_list_for,
    pool_list_operated_by,
    run_get_visible,
)
from benchmarks.selectors.campaigns import (
    campaign_run_list,
    campaign_summary_of,
    run_metric_list,
)
from benchmarks.selectors.pools import host_status, pool_list_with_hosts
from benchmarks.selectors.telemetry import (
    SPANS_MEDIA_TYPE,
    run_spans_artefact,
    run_telemetry,
)
from benchmarks.services.campaigns import (
    MAX_REPETITIONS,
    campaign_cancel,
    campaign_start,
)
from benchmarks.services.runs import run_cancel


class RunSummarySerializer(serializers.Serializer):
    class Meta:
        ref_name = "RunSummary"

    id = serializers.UUIDField(source="public_id")
    scenario = serializers.CharField(source="scenario_name")
    repetition = serializers.IntegerField()
    attempt = serializers.IntegerField()
    status = serializers.CharField(source="state")  # the model's field is ``state``
    progress = serializers.FloatField()
    worker = serializers.CharField(source="worker_name")
    stop_reason = serializers.CharField()
    reason = serializers.CharField()


class CampaignSerializer(serializers.Serializer):
    class Meta:
        ref_name = "Campaign"

    id = serializers.UUIDField(source="public_id")
    rfp = serializers.CharField(source="rfp.reference")
    vendor = serializers.CharField(
        source="bundle.organisation.slug",
        help_text="The bundle's organisation (the buyer's, for a baseline).",
    )
    role = serializers.ChoiceField(
        choices=["vendor", "baseline"],
        help_text="baseline: the buyer's own harness on current infrastructure.",
    )
    bundle = serializers.UUIDField(source="bundle.public_id")
    bundle_sha256 = serializers.CharField(source="bundle.sha256")
    pool = serializers.CharField(source="pool.name")
    hosts = serializers.ListField(
        child=serializers.CharField(),
        help_text="The hosts of the pool (worker names) its runs are bound to: "
        "a gate's canary hosts, or the rest of the pool after them. Empty: "
        "any host of the pool.",
    )
    repetitions = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    cancelled_at = serializers.DateTimeField(allow_null=True)


class CampaignDetailSerializer(CampaignSerializer):
    class Meta:
        ref_name = "CampaignDetail"

    status = serializers.CharField()
    progress = serializers.FloatField()
    runs = RunSummarySerializer(
        many=True,
        help_text=f"The first {PAGE_SIZE} runs in dispatch order; runs_url pages "
        "them all.",
    )
    run_count = serializers.IntegerField()
    runs_url = serializers.CharField()


class MetricSerializer(serializers.Serializer):
    class Meta:
        ref_name = "RunMetric"

    name = serializers.CharField()
    stat = serializers.CharField()
    value = serializers.FloatField()
    unit = serializers.CharField()
    scope = serializers.CharField()
    scenario = serializers.CharField()
    method = serializers.CharField()
    source_path = serializers.CharField()
    source_key = serializers.CharField()


class RunDetailSerializer(RunSummarySerializer):
    class Meta:
        ref_name = "RunDetail"

    campaign = serializers.UUIDField(source="campaign.public_id")
    exit_code = serializers.IntegerField(allow_null=True)
    duration_s = serializers.FloatField(allow_null=True)
    environment = serializers.JSONField()
    drift = serializers.JSONField()
    isolation = serializers.JSONField()
    policy = serializers.JSONField(help_text="The pool's policy the run ran under.")
    cache_dropped = serializers.BooleanField(allow_null=True)
    seed = serializers.IntegerField(
        allow_null=True, help_text="REPROGATE_SEED: the lab's fresh seed for the run."
    )
    checks = serializers.JSONField(
        help_text="The anti-gaming checks: [{id, applicable, flagged, detail, values}]."
    )
    log_tail = serializers.CharField()
    metrics = MetricSerializer(many=True, source="metrics_list")


def _campaign_detail(campaign: Campaign) -> dict[str, object]:
    summary = campaign_summary_of(campaign)
    runs = campaign_run_list(campaign)[:PAGE_SIZE]
    data = dict(CampaignSerializer(campaign).data)
    data.update(
        status=summary.status,
        progress=summary.progress,
        runs=RunSummarySerializer(runs, many=True).data,
        run_count=summary.total,
        runs_url=reverse("campaign-run-list", args=[campaign.public_id]),
    )
    return data


def _campaign(request: Request, campaign_id: uuid.UUID) -> Campaign:
    campaign = campaign_get_visible(request.user, campaign_id)
    if campaign is None:
        raise Http404
    return campaign


def _run(request: Request, run_id: uuid.UUID) -> Run:
    run = run_get_visible(request.user, run_id)
    if run is None:
        raise Http404
    return run


class PoolListApi(APIView):
    """Your lab's pools with their hosts (lab operators only)."""

    class OutputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "LabPool"

        class HostSerializer(serializers.Serializer):
            class Meta:
                ref_name = "LabHost"

            id = serializers.UUIDField(source="public_id")
            worker_name = serializers.CharField()
            hostname = serializers.CharField()
            status = serializers.SerializerMethodField()
            last_heartbeat_at = serializers.DateTimeField()

            def get_status(self, host: object) -> str:
                return host_status(host).code  # type: ignore[arg-type]

        id = serializers.UUIDField(source="public_id")
        name = serializers.CharField()
        queue = serializers.CharField()
        hardware_class = serializers.CharField()
        description = serializers.CharField()
        lab = serializers.CharField(source="lab_organisation.slug")
        hosts = HostSerializer(many=True, source="hosts.all")

    @extend_schema(
        operation_id="lab_pool_list",
        parameters=PAGE_PARAMETERS,
        responses={200: page_serializer("LabPoolPage", OutputSerializer)},
    )
    def get(self, request: Request) -> Response:
        if not lab_organisation_list_for(request.user).exists():
            raise PermissionDenied
        pools = pool_list_with_hosts(pool_list_operated_by(request.user))
        return page_response(self, request, pools, self.OutputSerializer)


class CampaignListApi(APIView):
    """Campaigns you may see, newest first (GET); start one (POST, lab operators)."""

    # Read by the OpenAPI schema (a page of the rows, ?limit and ?offset); get()
    # pages with the same paginator.
    pagination_class = LimitOffsetPagination

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "CampaignStartInput"

        bundle = serializers.UUIDField(help_text="An accepted bundle's id.")
        pool = serializers.SlugField(max_length=63, help_text="A pool of your lab.")
        repetitions = serializers.IntegerField(min_value=1, max_value=MAX_REPETITIONS)
        note = serializers.CharField(max_length=300, required=False, default="")
        lab_plan = serializers.JSONField(
            required=False,
            default=None,
            help_text="The lab's own scenarios (any kind) and neighbour jobs: "
            '{"scenarios": [...], "neighbours": {"name": {fio options}}}; '
            "problems are named by their path (lab_plan.scenarios[0].actions[0]).",
        )

    @extend_schema(
        operation_id="campaign_list", responses={200: CampaignSerializer(many=True)}
    )
    def get(self, request: Request) -> Response:
        campaigns = campaign_list_visible_to(request.user).order_by(
            "-created_at", "-id"
        )
        paginator = LimitOffsetPagination()
        page = paginator.paginate_queryset(campaigns, request, self)
        return paginator.get_paginated_response(
            CampaignSerializer(page, many=True).data
        )

    @extend_schema(
        operation_id="campaign_start",
        request=InputSerializer,
        responses={201: CampaignDetailSerializer},
    )
    def post(self, request: SignedInApiRequest) -> Response:
        if not lab_organisation_list_for(request.user).exists():
            raise PermissionDenied
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = data.validated_data
        bundle = (
            bundle_list_startable_by(request.user)
            .filter(public_id=fields["bundle"])
            .first()
        )
        pool = pool_list_operated_by(request.user).filter(name=fields["pool"]).first()
        if bundle is None or pool is None:
            raise Http404
        campaign = campaign_start(
            bundle=bundle,
            pool=pool,
            repetitions=fields["repetitions"],
            actor=request.user,
            note=fields["note"],
            lab_plan=fields["lab_plan"],
        )
        return Response(_campaign_detail(campaign), status=status.HTTP_201_CREATED)


class CampaignDetailApi(APIView):
    """A campaign with its runs' statuses and progress."""

    @extend_schema(
        operation_id="campaign_detail", responses={200: CampaignDetailSerializer}
    )
    def get(self, request: Request, campaign_id: uuid.UUID) -> Response:
        return Response(_campaign_detail(_campaign(request, campaign_id)))


class CampaignRunListApi(APIView):
    """A page of the campaign's runs, in dispatch order."""

    @extend_schema(
        operation_id="campaign_run_list",
        parameters=PAGE_PARAMETERS,
        responses={200: page_serializer("CampaignRunPage", RunSummarySerializer)},
    )
    def get(self, request: Request, campaign_id: uuid.UUID) -> Response:
        runs = campaign_run_list(_campaign(request, campaign_id))
        return page_response(self, request, runs, RunSummarySerializer)


class CampaignCancelApi(APIView):
    """Cancel every run of the campaign not finished yet (409 if none)."""

    @extend_schema(
        operation_id="campaign_cancel",
        request=None,
        responses={200: CampaignDetailSerializer},
    )
    def post(self, request: SignedInApiRequest, campaign_id: uuid.UUID) -> Response:
        campaign = _campaign(request, campaign_id)
        if not can_operate_campaign(request.user, campaign):
            raise PermissionDenied
        campaign = campaign_cancel(campaign=campaign, actor=request.user)
        return Response(_campaign_detail(campaign))


def _run_detail(run: Run) -> dict[str, object]:
    run.metrics_list = list(run_metric_list(run))  # type: ignore[attr-defined]
    return dict(RunDetailSerializer(run).data)


class RunDetailApi(APIView):
    """A run: status, environment and drift, isolation, log tail and metrics."""

    @extend_schema(operation_id="run_detail", responses={200: RunDetailSerializer})
    def get(self, request: Request, run_id: uuid.UUID) -> Response:
        return Response(_run_detail(_run(request, run_id)))


class RunTelemetryApi(APIView):
    """The run's telemetry as ``reprogate.telemetry/v1`` (404 when it has none)."""

    @extend_schema(
        operation_id="run_telemetry",
        responses={200: OpenApiTypes.OBJECT, 404: error_response(404)},
    )
    def get(self, request: Request, run_id: uuid.UUID) -> Response:
        run = _run(request, run_id)
        recording = run_telemetry(run)
        if recording is None:
            raise Http404
        return Response(recording.document(str(run.public_id)))


class RunSpansApi(APIView):
    """The run's trace spans as the runner normalised them: one OpenTelemetry
    span a line (JSON Lines), sorted by start (404 when it has none)."""

    @extend_schema(
        operation_id="run_spans",
        responses={
            (200, SPANS_MEDIA_TYPE): OpenApiResponse(
                OpenApiTypes.STR, description="One span a line (JSON Lines)."
            ),
            404: error_response(404),
        },
    )
    def get(self, request: Request, run_id: uuid.UUID) -> FileResponse:
        artefact = run_spans_artefact(_run(request, run_id))
        if artefact is None:
            raise Http404
        return FileResponse(
            blob_open(artefact.blob),
            content_type=SPANS_MEDIA_TYPE,
            filename=f"spans-{run_id}.jsonl",
        )


class RunCancelApi(APIView):
    """Cancel a run: at once if queued, else its harness is killed (409 if over)."""

    @extend_schema(
        operation_id="run_cancel", request=None, responses={200: RunDetailSerializer}
    )
    def post(self, request: SignedInApiRequest, run_id: uuid.UUID) -> Response:
        run = _run(request, run_id)
        if not can_operate_campaign(request.user, run.campaign):
            raise PermissionDenied
        run_cancel(run=run, actor=request.user)
        return Response(_run_detail(_run(request, run_id)))
