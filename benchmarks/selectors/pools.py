"""Pools and their hosts, each host with its status derived from its heartbeat:
``online`` (beat within ``RUNNER_LOST_AFTER_SECONDS``), ``lost`` (silent for
longer: crashed, killed or cut off) or ``offline`` (shut down cleanly); and the
pools' host tokens (what a lab host's agent presents to the runner API)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import (
    Count,
    F,
    IntegerField,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
)
from django.db.models.functions import Coalesce

from accounts.selectors import clock
from benchmarks import conf
from benchmarks.models import HostToken, LabHost, LabPool


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


def host_retired(host: LabHost) -> bool:
    """A one-shot runner that stopped for good (``host_stop(retire=True)``) and
    has not registered again since."""
    return (
        host.retired_at is not None
        and host.stopped_at is not None
        and host.stopped_at >= host.last_heartbeat_at
    )


def host_online_cutoff(now: datetime | None = None) -> datetime:
    return (now or clock.now()) - timedelta(seconds=conf.lost_after_seconds())


def hosts_online(now: datetime | None = None) -> QuerySet[LabHost]:
    """The hosts ``host_status`` calls online, as a query: not shut down since
    their last heartbeat, which came within ``RUNNER_LOST_AFTER_SECONDS``."""
    return LabHost.objects.filter(
        Q(stopped_at__isnull=True) | Q(stopped_at__lt=F("last_heartbeat_at")),
        last_heartbeat_at__gte=host_online_cutoff(now),
    )


def pool_host_names(pool: LabPool) -> list[str]:
    """The worker names of the hosts registered on ``pool``, in name order,
    but for retired one-shot runners (``host_retired``): the hosts a campaign
    may be bound to (a gate's canary hosts and the rest of the pool)."""
    hosts = LabHost.objects.filter(pool=pool).order_by("worker_name")
    return [h.worker_name for h in hosts if not host_retired(h)]


def host_token_list(pool: LabPool | None = None) -> QuerySet[HostToken]:
    """Host tokens (of ``pool``, if given): active ones first, then by name,
    newest first; with who issued and revoked them."""
    tokens = HostToken.objects.select_related("created_by", "revoked_by").order_by(
        F("revoked_at").desc(nulls_first=True), "name", "-created_at", "-id"
    )
    return tokens if pool is None else tokens.filter(pool=pool)


def pool_get_in(pools: QuerySet[LabPool], public_id: uuid.UUID) -> LabPool | None:
    """The pool ``public_id`` if it is among ``pools`` (those the user operates)."""
    return pools.filter(public_id=public_id).first()


def host_token_get(pool: LabPool, public_id: uuid.UUID) -> HostToken | None:
    return host_token_list(pool).filter(public_id=public_id).first()


def pool_list_with_hosts(pools: QuerySet[LabPool]) -> list[LabPool]:
    """``pools`` with ``hosts`` (each with its token) and ``host_tokens``
    (``host_token_list``'s order) prefetched, each host with its ``.health``
    (a ``HostStatus``) and each pool with ``online_count`` and
    ``active_token_count``; ``shown_hosts`` and ``retired_hosts`` split them
    (``host_retired``)."""
    hosts = LabHost.objects.select_related("token").order_by("worker_name")
    rows = list(
        pools.prefetch_related(
            Prefetch("hosts", queryset=hosts),
            Prefetch("host_tokens", queryset=host_token_list()),
        )
    )
    now = clock.now()
    for pool in rows:
        for host in pool.hosts.all():
            host.health = host_status(host, now)  # type: ignore[attr-defined]
        pool.shown_hosts = [h for h in pool.hosts.all() if not host_retired(h)]  # type: ignore[attr-defined]
        pool.retired_hosts = [h for h in pool.hosts.all() if host_retired(h)]  # type: ignore[attr-defined]
        online = [h for h in pool.hosts.all() if h.health.code == "online"]  # type: ignore[attr-defined]
        pool.online_count = len(online)  # type: ignore[attr-defined]
        active = [t for t in pool.host_tokens.all() if t.revoked_at is None]
        pool.active_token_count = len(active)  # type: ignore[attr-defined]
    return rows


def pool_list_with_online_hosts(
    pools: QuerySet[LabPool], now: datetime | None = None
) -> QuerySet[LabPool]:
    """``pools`` with ``online_hosts`` (``hosts_online``'s rule, at read time),
    the pools with the most online hosts first, then by name: a form's first
    choice is a pool whose runs will start."""
    online = (
        hosts_online(now)
        .filter(pool=OuterRef("pk"))
        .order_by()
        .values("pool")
        .annotate(n=Count("id"))
        .values("n")
    )
    return pools.annotate(
        online_hosts=Coalesce(Subquery(online, output_field=IntegerField()), 0)
    ).order_by("-online_hosts", "name")


def pool_choice_label(pool: LabPool) -> str:
    """A pool in a form: its name, hardware and whether a host is online to run
    (``pool_list_with_online_hosts``'s count)."""
    n = getattr(pool, "online_hosts", 0)
    hosts = f"{n} host{'s' if n != 1 else ''} online" if n else "no host online"
    hardware = f" · {pool.hardware_class}" if pool.hardware_class else ""
    return f"{pool.name}{hardware} · {hosts}"
