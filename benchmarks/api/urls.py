"""The benchmarks API's URLs, mounted under ``/api/v1/``: lab pools, campaigns and
runs, and the runner API a lab host's agent calls (under ``runner/``)."""

from __future__ import annotations

from django.urls import path

from benchmarks.api.campaigns import (
    CampaignCancelApi,
    CampaignDetailApi,
    CampaignListApi,
    CampaignRunListApi,
    PoolListApi,
    RunCancelApi,
    RunDetailApi,
    RunSpansApi,
    RunTelemetryApi,
)
from benchmarks.api.pools import PoolPolicyApi
from benchmarks.api.runner import (
    ArtefactApi,
    BundleApi,
    ByeApi,
    ClaimApi,
    FailApi,
    FinishApi,
    HeartbeatApi,
    HelloApi,
    OutputApi,
    ReportApi,
    RunningApi,
)
from benchmarks.api.signed_runs import (
    CampaignEvidenceApi,
    HostKeyApi,
    RunStatementApi,
)

urlpatterns = [
    # campaigns.py
    path("lab/pools/", PoolListApi.as_view(), name="lab-pool-list"),
    # pools.py
    path(
        "lab/pools/<slug:pool_name>/policy/",
        PoolPolicyApi.as_view(),
        name="lab-pool-policy",
    ),
    path("campaigns/", CampaignListApi.as_view(), name="campaign-list"),
    path(
        "campaigns/<uuid:campaign_id>/",
        CampaignDetailApi.as_view(),
        name="campaign-detail",
    ),
    path(
        "campaigns/<uuid:campaign_id>/runs/",
        CampaignRunListApi.as_view(),
        name="campaign-run-list",
    ),
    path(
        "campaigns/<uuid:campaign_id>/cancel/",
        CampaignCancelApi.as_view(),
        name="campaign-cancel",
    ),
    path(
        "campaigns/<uuid:campaign_id>/evidence/",
        CampaignEvidenceApi.as_view(),
        name="campaign-evidence",
    ),
    path("runs/<uuid:run_id>/", RunDetailApi.as_view(), name="run-detail"),
    # signed_runs.py
    path(
        "runs/<uuid:run_id>/statement.json",
        RunStatementApi.as_view(),
        name="run-statement",
    ),
    path("lab/hosts/<uuid:host_id>/key", HostKeyApi.as_view(), name="lab-host-key"),
    path(
        "runs/<uuid:run_id>/telemetry.json",
        RunTelemetryApi.as_view(),
        name="run-telemetry",
    ),
    path(
        "runs/<uuid:run_id>/spans.jsonl",
        RunSpansApi.as_view(),
        name="run-spans",
    ),
    path("runs/<uuid:run_id>/cancel/", RunCancelApi.as_view(), name="run-cancel"),
    # runner.py, under runner/
    path("runner/hello", HelloApi.as_view(), name="runner-hello"),
    path("runner/heartbeat", HeartbeatApi.as_view(), name="runner-heartbeat"),
    path("runner/bye", ByeApi.as_view(), name="runner-bye"),
    path("runner/runs/<int:run_id>/claim", ClaimApi.as_view(), name="runner-claim"),
    path("runner/runs/<int:run_id>/bundle", BundleApi.as_view(), name="runner-bundle"),
    path("runner/runs/<int:run_id>/report", ReportApi.as_view(), name="runner-report"),
    path(
        "runner/runs/<int:run_id>/running", RunningApi.as_view(), name="runner-running"
    ),
    path(
        "runner/runs/<int:run_id>/outputs/<path:path>",
        OutputApi.as_view(),
        name="runner-output",
    ),
    path(
        "runner/runs/<int:run_id>/artefacts/<str:name>",
        ArtefactApi.as_view(),
        name="runner-artefact",
    ),
    path("runner/runs/<int:run_id>/finish", FinishApi.as_view(), name="runner-finish"),
    path("runner/runs/<int:run_id>/fail", FailApi.as_view(), name="runner-fail"),
]
