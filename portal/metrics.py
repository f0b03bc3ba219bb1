"""The installation's figures for ``/metrics`` (Prometheus), read from the
database so that every web process tells the same: runs per pool and state,
queued runs per pool, hosts per pool and status, bytes of accepted bundles, and
the latest fixity run's findings. A handful of aggregate queries, whatever the
number of rows; nothing is written. The reads are not one transaction: on
SQLite (``transaction_mode`` IMMEDIATE) a transaction would take the write lock,
and a scrape's figures need not be one instant's."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, Sum

from accounts.selectors import clock
from artifacts.models import Bundle, FixityFinding, FixityRun
from benchmarks.models import LabHost, LabPool, Run
from benchmarks.selectors.pools import host_status

HOST_STATUSES = ("online", "lost", "offline")
# A fixity finding's source: the first part of its kind (blob.altered: blob).
FIXITY_SOURCES = ("blob", "row", "log")


@dataclass(frozen=True)
class FixityFigures:
    finished_at: datetime
    findings: dict[str, int]  # source -> findings of the latest run


@dataclass(frozen=True)
class Figures:
    runs: dict[tuple[str, str], int]  # (pool, state) -> runs, every state of a pool
    queue_depth: dict[str, int]  # pool -> queued runs
    hosts: dict[tuple[str, str], int]  # (pool, status) -> hosts
    ingest_bytes: int  # of accepted bundles, all time
    ingest_bundles: dict[str, int]  # status -> bundles
    fixity: FixityFigures | None  # None: escrow was never checked


def run_counts(pools: list[str]) -> dict[tuple[str, str], int]:
    """Runs per pool and state, zero for a state a pool has none in."""
    counts = {(pool, state): 0 for pool in pools for state in Run.State.values}
    rows = (
        Run.objects.values_list("campaign__pool__name", "state")
        .annotate(n=Count("id"))
        .order_by()
    )
    for pool, state, n in rows:
        counts[(pool, state)] = n
    return counts


def host_counts(pools: list[str]) -> dict[tuple[str, str], int]:
    """Hosts per pool and ``host_status``: one query, one row per host."""
    counts = {(pool, status): 0 for pool in pools for status in HOST_STATUSES}
    now = clock.now()
    hosts = LabHost.objects.select_related("pool").only(
        "pool__name", "last_heartbeat_at", "stopped_at"
    )
    for host in hosts.order_by():
        key = (host.pool.name, host_status(host, now).code)
        counts[key] = counts.get(key, 0) + 1  # a pool made since the pools' read
    return counts


def fixity_latest() -> FixityFigures | None:
    run = FixityRun.objects.order_by("-started_at", "-id").only("finished_at").first()
    if run is None:
        return None
    findings = dict.fromkeys(FIXITY_SOURCES, 0)
    kinds = Counter(
        dict(
            FixityFinding.objects.filter(run=run)
            .values_list("kind")
            .annotate(n=Count("id"))
            .order_by()
        )
    )
    for kind, n in kinds.items():
        source = kind.partition(".")[0]
        findings[source] = findings.get(source, 0) + n
    return FixityFigures(finished_at=run.finished_at, findings=findings)


def metrics_figures() -> Figures:
    pools = list(LabPool.objects.order_by("name").values_list("name", flat=True))
    runs = run_counts(pools)
    bundles = {
        status: (n, size or 0)
        for status, n, size in Bundle.objects.values_list("status")
        .annotate(n=Count("id"), size=Sum("size"))
        .order_by()
    }
    return Figures(
        runs=runs,
        queue_depth={pool: runs[(pool, Run.State.QUEUED)] for pool in pools},
        hosts=host_counts(pools),
        ingest_bytes=bundles.get(Bundle.Status.ACCEPTED, (0, 0))[1],
        ingest_bundles={s: bundles.get(s, (0, 0))[0] for s in Bundle.Status.values},
        fixity=fixity_latest(),
    )
