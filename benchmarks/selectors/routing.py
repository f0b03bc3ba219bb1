"""Where a run of a campaign bound to hosts (``Campaign.hosts``: a gate's
canary hosts, or the rest of the pool after them) is sent: to the own queue
(``benchmarks.lib.queues.host_queue``) of the least loaded of those hosts.

The rule, in order: only the campaign's hosts that are online now
(``hosts_online``) are candidates, or all of them when none is (the runs wait
in their queues until a host comes back, and the reaper sends a run that waits
too long again, through this rule); a host's load is its runs not ended yet:
those sent to its queue and still queued, and those it has claimed; the least
loaded takes the next run, ties going to the host named first, and each run
placed counts at once, so that a campaign's runs spread over its hosts in
dispatch order (round robin when the hosts start idle)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

from benchmarks.models import Campaign, Run
from benchmarks.models.campaigns import ACTIVE_STATES
from benchmarks.selectors.pools import hosts_online


def host_loads(
    *, campaign: Campaign, hosts: Iterable[str], leave: set[int]
) -> Counter[str]:
    """Per host of ``campaign``'s pool named in ``hosts``, its runs not ended
    (queued for it or claimed by it), other than the runs ``leave``."""
    names = set(hosts)
    rows = (
        Run.objects.filter(campaign__pool_id=campaign.pool_id)
        .filter(state__in=[Run.State.QUEUED, *ACTIVE_STATES])
        .exclude(pk__in=leave)
        .values_list("state", "routed_to", "host__worker_name")
    )
    load: Counter[str] = Counter()
    for state, routed_to, claimed_by in rows:
        name = routed_to if state == Run.State.QUEUED else claimed_by
        if name in names:
            load[name] += 1
    return load


def run_routes(runs: list[Run]) -> dict[int, str]:
    """The host (worker name) each run of a campaign bound to hosts goes to,
    by run id; runs of other campaigns are not in it (the pool's queue)."""
    by_campaign: dict[int, list[Run]] = defaultdict(list)
    campaigns: dict[int, Campaign] = {}
    for run in runs:
        if run.campaign.hosts:
            by_campaign[run.campaign_id].append(run)
            campaigns[run.campaign_id] = run.campaign
    routes: dict[int, str] = {}
    leave = {r.pk for r in runs}
    for campaign_id, bound in by_campaign.items():
        campaign = campaigns[campaign_id]
        named = [str(h) for h in campaign.hosts]
        online = set(
            hosts_online()
            .filter(pool_id=campaign.pool_id, worker_name__in=named)
            .values_list("worker_name", flat=True)
        )
        candidates = [h for h in named if h in online] or named
        load = host_loads(campaign=campaign, hosts=candidates, leave=leave)
        for run in bound:
            chosen = min(candidates, key=lambda h: (load[h], candidates.index(h)))
            load[chosen] += 1
            routes[run.pk] = chosen
    return routes
