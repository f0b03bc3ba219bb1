from __future__ import annotations

from django.urls import path

from benchmarks.views import campaigns, pools, runs

app_name = "benchmarks"
urlpatterns = [
    path("pools/", pools.pool_list, name="pool_list"),
    path("pools/<uuid:pool_id>/join/", pools.pool_host_join, name="pool_host_join"),
    path(
        "pools/<uuid:pool_id>/policy/", pools.pool_policy_edit, name="pool_policy_edit"
    ),
    path(
        "pools/<uuid:pool_id>/tokens/<uuid:token_id>/revoke/",
        pools.pool_token_revoke,
        name="pool_token_revoke",
    ),
    path(
        "pools/<uuid:pool_id>/hosts/<uuid:host_id>/key/accept/",
        pools.pool_host_key_accept,
        name="pool_host_key_accept",
    ),
    path("campaigns/", campaigns.campaign_list, name="campaign_list"),
    path("campaigns/new/", campaigns.campaign_start_view, name="campaign_start"),
    path(
        "campaigns/<uuid:campaign_id>/",
        campaigns.campaign_detail,
        name="campaign_detail",
    ),
    path(
        "campaigns/<uuid:campaign_id>/runs/",
        campaigns.campaign_runs,
        name="campaign_runs",
    ),
    path(
        "campaigns/<uuid:campaign_id>/charts/",
        campaigns.campaign_charts_view,
        name="campaign_charts",
    ),
    path(
        "campaigns/<uuid:campaign_id>/cancel/",
        campaigns.campaign_cancel_view,
        name="campaign_cancel",
    ),
    path(
        "campaigns/<uuid:campaign_id>/metrics.csv",
        campaigns.campaign_metrics_export,
        {"fmt": "csv"},
        name="campaign_metrics_csv",
    ),
    path(
        "campaigns/<uuid:campaign_id>/metrics.json",
        campaigns.campaign_metrics_export,
        {"fmt": "json"},
        name="campaign_metrics_json",
    ),
    path("runs/<uuid:run_id>/", runs.run_detail, name="run_detail"),
    path("runs/<uuid:run_id>/live/", runs.run_live, name="run_live"),
    path("runs/<uuid:run_id>/cancel/", runs.run_cancel_view, name="run_cancel"),
    path(
        "runs/<uuid:run_id>/outputs/<int:output_id>/",
        runs.run_output_download,
        name="run_output_download",
    ),
]
