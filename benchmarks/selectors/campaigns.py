"""A campaign's runs and their summary; a run's results and its timeline."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Final

from django.contrib.contenttypes.models import ContentType
from django.db.models import Count, F, Q, QuerySet, Sum

from accounts.models import AuditEvent
from accounts.selectors import clock
from benchmarks.lib.charts import HIT_RATE
from benchmarks.models import Campaign, Run, RunMetric, RunOutput, RunSeries
from benchmarks.models.campaigns import ACTIVE_STATES
from benchmarks.selectors.access import (
    AnyUser,
    campaign_list_visible_to,
    pool_list_operated_by,
)

FINAL_STATES = frozenset(s for s in Run.State.values if s not in ACTIVE_STATES) - {
    Run.State.QUEUED
}


def campaign_run_list(campaign: Campaign) -> QuerySet[Run]:
    """The campaign's runs in dispatch order, with their hosts; the log tail,
    environment and parse details are left for the run page."""
    return (
        Run.objects.filter(campaign=campaign)
        .select_related("host")
        .defer("log_tail", "environment", "isolation", "parse_warnings")
        .order_by("position")
    )


@dataclass(frozen=True)
class CampaignSummary:
    total: int
    counts: dict[str, int] = field(default_factory=dict)
    progress: float = 0.0  # 0..1 over all runs (finished runs count as done)

    @property
    def active(self) -> bool:
        """Anything still queued or running: the page keeps polling."""
        return any(self.counts.get(s, 0) for s in (Run.State.QUEUED, *ACTIVE_STATES))

    @property
    def status(self) -> str:
        if self.active:
            started = self.total - self.counts.get(Run.State.QUEUED, 0)
            return "running" if started else "queued"
        if self.counts.get(Run.State.SUCCEEDED, 0) == self.total:
            return "succeeded"
        if self.counts.get(Run.State.CANCELLED, 0) == self.total:
            return "cancelled"
        return "finished with failures"

    @property
    def percent(self) -> int:
        return round(self.progress * 100)


def campaign_summary_of(campaign: Campaign) -> CampaignSummary:
    """The campaign's runs counted by state and its progress (finished runs
    count as done), by the database: one query, whatever the number of runs;
    counts in state order."""
    by_state = {
        row["state"]: row
        for row in Run.objects.filter(campaign=campaign)
        .order_by()
        .values("state")
        .annotate(n=Count("id"), progress_sum=Sum("progress"))
    }
    counts = {s: by_state[s]["n"] for s in Run.State.values if s in by_state}
    done = sum(
        row["n"] if state in FINAL_STATES else row["progress_sum"] or 0.0
        for state, row in by_state.items()
    )
    total = sum(counts.values())
    progress = done / total if total else 0.0
    return CampaignSummary(total=total, counts=counts, progress=progress)


def run_metric_list(run: Run) -> QuerySet[RunMetric]:
    """The metrics of the run's current attempt (a run keeps one set)."""
    return RunMetric.objects.filter(run=run, attempt=run.attempt).order_by(
        "name", "stat", "scope", "id"
    )


def campaign_hit_rate_series(campaign: Campaign) -> list[dict[str, Any]]:
    """Every run's cache-hit rate series (its current attempt), in run order:
    ``scenario_name``, ``repetition``, ``unit``, ``points`` (one query)."""
    found = (
        RunSeries.objects.filter(
            run__campaign=campaign,
            name=HIT_RATE,
            scope="",
            attempt=F("run__attempt"),
        )
        .order_by("run__position", "run__id", "id")
        .values("unit", "points", scenario_name=F("run__scenario_name"),
                repetition=F("run__repetition"))
    )  # fmt: skip
    return [dict(row) for row in found]


def run_series_list(run: Run) -> QuerySet[RunSeries]:
    return RunSeries.objects.filter(run=run, attempt=run.attempt).order_by("name", "id")


def run_output_list(run: Run) -> QuerySet[RunOutput]:
    return (
        RunOutput.objects.filter(run=run)
        .select_related("blob")
        .order_by("-attempt", "path")
    )


def run_event_list(run: Run) -> QuerySet[AuditEvent]:
    """The run's audit events, oldest first: its timeline."""
    return AuditEvent.objects.filter(
        target_type=ContentType.objects.get_for_model(Run), target_id=str(run.pk)
    ).order_by("occurred_at", "id")


def campaign_list_with_counts(campaigns: QuerySet[Campaign]) -> QuerySet[Campaign]:
    """``campaigns`` with ``run_total``, ``run_active`` (queued or running),
    ``run_succeeded`` and ``run_unsuccessful`` counted in the same query."""
    unsuccessful = [Run.State.FAILED, Run.State.CANCELLED, Run.State.TIMED_OUT]
    active = [Run.State.QUEUED, *ACTIVE_STATES]
    return campaigns.annotate(
        run_total=Count("runs"),
        run_active=Count("runs", filter=Q(runs__state__in=active)),
        run_succeeded=Count("runs", filter=Q(runs__state=Run.State.SUCCEEDED)),
        run_unsuccessful=Count("runs", filter=Q(runs__state__in=unsuccessful)),
    )


FAILING_FOR: Final = timedelta(days=7)


def campaign_list_needing_lab(user: AnyUser) -> QuerySet[Campaign]:
    """The campaigns on pools the user operates that still have runs queued or
    running, and those started in the last week with failed, cancelled or timed
    out runs: the lab operator's dashboard, newest first, with their counts."""
    since = clock.now() - FAILING_FOR
    campaigns = campaign_list_with_counts(
        campaign_list_visible_to(user).filter(pool__in=pool_list_operated_by(user))
    )
    return campaigns.filter(
        Q(run_active__gt=0) | Q(run_unsuccessful__gt=0, created_at__gte=since)
    ).order_by("-created_at", "-id")
