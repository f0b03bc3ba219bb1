"""A campaign's runs with the metrics of each run's current attempt, for the
gates' results document: two queries whatever the number of runs."""

from __future__ import annotations

from django.db.models import F, Prefetch, QuerySet

from benchmarks.models import Campaign, Run, RunMetric


def campaign_run_results(campaign: Campaign) -> QuerySet[Run]:
    """The campaign's runs ordered by scenario, repetition and public id, each
    with ``current_metrics``: the metrics of its current attempt (a re-queued
    run keeps one set) ordered by name, stat, source file, source key. The
    run's drift list and checks come along; its log, environment and parse
    notes do not."""
    metrics = (
        RunMetric.objects.filter(attempt=F("run__attempt"))
        .only(
            "run_id",
            "name",
            "stat",
            "value",
            "unit",
            "source_path",
            "source_key",
            "scope",
            "scenario",
        )
        .order_by("name", "stat", "source_path", "source_key", "scope", "id")
    )
    return (
        Run.objects.filter(campaign=campaign)
        .only(
            "id", "public_id", "scenario_name", "repetition", "state", "drift", "checks"
        )
        .prefetch_related(
            Prefetch("metrics", queryset=metrics, to_attr="current_metrics")
        )
        .order_by("scenario_name", "repetition", "public_id")
    )


def baseline_campaign_for(rfp_id: int) -> Campaign | None:
    """The RFP's baseline campaign that gate criteria held to the baseline read:
    the newest one, not cancelled, with at least one succeeded run (None: no
    baseline measured yet)."""
    return (
        Campaign.objects.filter(
            rfp_id=rfp_id,
            role=Campaign.Role.BASELINE,
            cancelled_at__isnull=True,
            runs__state=Run.State.SUCCEEDED,
        )
        .order_by("-created_at", "-id")
        .first()
    )
