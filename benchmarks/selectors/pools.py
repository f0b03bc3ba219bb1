"""Pools and their hosts, each host with its status derived from its heartbeat:
``online`` (beat within ``RUNNER_LOST_AFTER_SECONDS``), ``lost`` (silent for
longer: crashed, killed or cut off) or ``offline`` (shut down cleanly)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import F, Prefetch, Q, QuerySet

from accounts import clock
from benchmarks import conf
from benchmarks.models import LabHost, LabPool


@dataclass(frozen=True)
class HostStatus:
    code: str  # online | lost | offline
    label: str
    silent_s: float  # seconds since the last heartbeat


def host_status(host: LabHost, now: datetime | None = None) -> HostStatus:
    now = now or clock.now()
    silent = max(0.0, (now - host.last_heartbeat_at).total_seconds())
    if host.stopped_at is not None and host.stopped_at >= host.last_heartbeat_at:
        return HostStatus("offline", "offline", silent)
    if silent > conf.lost_after_seconds():
        return HostStatus("lost", "lost", silent)
    return HostStatus("online", "online", silent)


def host_online_cutoff(now: datetime | None = None) -> datetime:
    return (now or clock.now()) - timedelta(seconds=conf.lost_after_seconds())


def hosts_online(now: datetime | None = None) -> QuerySet[LabHost]:
    """The hosts ``host_status`` calls online, as a query: not shut down since
    their last heartbeat, which came within ``RUNNER_LOST_AFTER_SECONDS``."""
    return LabHost.objects.filter(
        Q(stopped_at__isnull=True) | Q(stopped_at__lt=F("last_heartbeat_at")),
        last_heartbeat_at__gte=host_online_cutoff(now),
    )


def pool_list_with_hosts(pools: QuerySet[LabPool]) -> list[LabPool]:
    """``pools`` with ``hosts`` prefetched, each host with its ``.health``
    (a ``HostStatus``) and each pool with ``online_count``."""
    hosts = LabHost.objects.order_by("worker_name")
    rows = list(pools.prefetch_related(Prefetch("hosts", queryset=hosts)))
    now = clock.now()
    for pool in rows:
        for host in pool.hosts.all():
            host.health = host_status(host, now)  # type: ignore[attr-defined]
        online = [h for h in pool.hosts.all() if h.health.code == "online"]  # type: ignore[attr-defined]
        pool.online_count = len(online)  # type: ignore[attr-defined]
    return rows
