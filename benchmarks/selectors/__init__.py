"""Reads of the benchmark runner: who may see and operate what (``access``),
pools and hosts, campaigns and runs, metric exports."""

from __future__ import annotations

from benchmarks.selectors.access import (
    bundle_list_startable_by,
    campaign_get_visible,
    campaign_list_visible_to,
    can_operate_campaign,
    can_operate_pool,
    lab_organisation_list_for,
    pool_list_operated_by,
    run_get_visible,
)
from benchmarks.selectors.campaigns import (
    CampaignSummary,
    campaign_list_with_counts,
    campaign_run_list,
    campaign_summary,
    run_event_list,
    run_metric_list,
    run_output_list,
    run_series_list,
)
from benchmarks.selectors.exports import (
    campaign_metric_rows,
    campaign_metrics_csv,
    campaign_metrics_json,
)
from benchmarks.selectors.pools import (
    HostStatus,
    host_status,
    pool_list_with_hosts,
)
from benchmarks.selectors.results import campaign_run_results

__all__ = [
    "CampaignSummary",
    "HostStatus",
    "bundle_list_startable_by",
    "campaign_get_visible",
    "campaign_list_visible_to",
    "campaign_list_with_counts",
    "campaign_metric_rows",
    "campaign_metrics_csv",
    "campaign_metrics_json",
    "campaign_run_list",
    "campaign_run_results",
    "campaign_summary",
    "can_operate_campaign",
    "can_operate_pool",
    "host_status",
    "lab_organisation_list_for",
    "pool_list_operated_by",
    "pool_list_with_hosts",
    "run_event_list",
    "run_get_visible",
    "run_metric_list",
    "run_output_list",
    "run_series_list",
]
