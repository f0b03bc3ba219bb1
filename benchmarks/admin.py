"""Read-only admin of the runner: pools, hosts, campaigns and runs are written
by their services only (a pool is created with ``manage.py pool_create`` or on
the pools page)."""

from __future__ import annotations

from django.contrib import admin

from artifacts.admin import ReadOnlyAdmin
from benchmarks.models import Campaign, LabHost, LabPool, Run, RunMetric


@admin.register(LabPool)
class LabPoolAdmin(ReadOnlyAdmin):
    list_display = ["name", "lab_organisation", "hardware_class", "created_at"]
    search_fields = ["name", "lab_organisation__slug"]
    fields = (
        "public_id",
        "name",
        "lab_organisation",
        "hardware_class",
        "description",
        "created_at",
    )
    readonly_fields = fields


@admin.register(LabHost)
class LabHostAdmin(ReadOnlyAdmin):
    list_display = [
        "worker_name",
        "pool",
        "hostname",
        "last_heartbeat_at",
        "stopped_at",
    ]
    list_filter = ["pool"]
    fields = (
        "public_id",
        "pool",
        "worker_name",
        "hostname",
        "pid",
        "registered_at",
        "last_heartbeat_at",
        "stopped_at",
        "environment",
        "sandbox",
    )
    readonly_fields = fields


@admin.register(Campaign)
class CampaignAdmin(ReadOnlyAdmin):
    list_display = ["public_id", "rfp", "bundle", "pool", "started_by", "created_at"]
    list_filter = ["pool"]
    fields = (
        "public_id",
        "rfp",
        "bundle",
        "pool",
        "started_by",
        "repetitions",
        "scenarios",
        "note",
        "cancelled_at",
        "created_at",
    )
    readonly_fields = fields


@admin.register(Run)
class RunAdmin(ReadOnlyAdmin):
    list_display = [
        "public_id",
        "campaign",
        "scenario_name",
        "repetition",
        "attempt",
        "state",
        "worker_name",
        "finished_at",
    ]
    list_filter = ["state"]
    search_fields = ["public_id", "scenario_name", "worker_name"]
    fields = (
        "public_id",
        "campaign",
        "position",
        "scenario_name",
        "scenario",
        "repetition",
        "attempt",
        "state",
        "progress",
        "host",
        "worker_name",
        "wall_limit_s",
        "claimed_at",
        "heartbeat_at",
        "started_at",
        "finished_at",
        "cancel_requested_at",
        "exit_code",
        "stop_reason",
        "reason",
        "duration_s",
        "isolation",
        "drift",
        "cache_dropped",
        "cache_note",
        "output_deposit",
        "log_tail",
    )
    readonly_fields = fields


@admin.register(RunMetric)
class RunMetricAdmin(ReadOnlyAdmin):
    list_display = ["run", "attempt", "name", "stat", "value", "unit", "method"]
    search_fields = ["name"]
    fields = (
        "run",
        "attempt",
        "name",
        "stat",
        "value",
        "unit",
        "scope",
        "scenario",
        "method",
        "source_path",
        "source_key",
    )
    readonly_fields = fields
