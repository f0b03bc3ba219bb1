"""Starting and cancelling campaigns. A campaign is one run per scenario of the
bundle's harness and repetition, dispatched to the pool's queue after commit in
repetition order (every scenario once, then again), so that slow drift of a
host spreads over scenarios instead of biasing one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Max

from accounts.exceptions import Problem
from accounts.selectors import clock
from accounts.services.actor import Actor
from accounts.services.audit import audit_record
from artifacts.models import Bundle
from benchmarks import conf
from benchmarks.lib.lab.lab_plan import (
    campaign_neighbours,
    lab_plan_problems,
    lab_scenarios,
)
from benchmarks.lib.lab.scenarios.neighbour import neighbour_options_problems
from benchmarks.lib.queues import host_name_routable
from benchmarks.models import Campaign, LabPool, Run
from benchmarks.selectors.access import UNSEALED, can_add_runs, can_operate_pool
from benchmarks.selectors.pools import pool_host_names
from benchmarks.services.common import RunnerConflict, RunnerError
from benchmarks.services.runs import FINAL, run_cancel, runs_dispatch

MAX_REPETITIONS = 100
MAX_ADDED_RUNS = 50  # per scenario and request (campaign_add_runs)


def campaign_start_problems(
    *,
    bundle: Bundle,
    pool: LabPool,
    repetitions: int,
    actor: User,
    only: Sequence[str] | None = None,
    hosts: Sequence[str] | None = None,
    lab_plan: Mapping[str, Any] | None = None,
) -> list[Problem]:
    """Why this campaign may not start (empty when it may). ``lab_plan``: the
    lab's scenarios and neighbour jobs (``benchmarks.lib.lab.lab_plan``)."""
    found: list[Problem] = []
    if not can_operate_pool(actor, pool):
        found.append(
            Problem("not_lab_operator", "You do not operate this pool.", "pool")
        )
    elif not bundle.rfp.buyer_organisation.engages.filter(
        pk=pool.lab_organisation_id
    ).exists():
        message = f"{bundle.rfp.buyer_organisation.name} does not engage this lab."
        found.append(Problem("lab_not_engaged", message, "pool"))
    if bundle.status != Bundle.Status.ACCEPTED:
        found.append(
            Problem(
                "bundle_not_accepted", "Only an accepted bundle is re-run.", "bundle"
            )
        )
    if bundle.rfp.status not in UNSEALED and not is_baseline(bundle):
        message = (
            "The RFP's bids are still sealed: campaigns start once they are opened."
        )
        found.append(Problem("sealed", message, "bundle"))
    if not 1 <= repetitions <= MAX_REPETITIONS:
        message = f"Repetitions must be between 1 and {MAX_REPETITIONS}."
        found.append(Problem("repetitions", message, "repetitions"))
    scenarios = _scenarios(bundle, only)
    unknown = sorted(set(only or ()) - {str(s.get("name")) for s in scenarios})
    if unknown:
        message = "The bundle's harness has no scenario " + ", ".join(unknown) + "."
        found.append(Problem("unknown_scenario", message, "scenarios"))
    found += [
        Problem("lab_plan", message, path)
        for path, message in lab_plan_problems(
            lab_plan or {}, scenarios, options_check=neighbour_options_problems
        )
    ]
    scenarios = scenarios + lab_scenarios(lab_plan)
    if not scenarios:
        found.append(
            Problem(
                "no_scenarios", "The bundle's harness declares no scenario.", "bundle"
            )
        )
    elif len(scenarios) * repetitions > conf.max_runs_per_campaign():
        message = f"That is more than {conf.max_runs_per_campaign()} runs."
        found.append(Problem("too_many_runs", message, "repetitions"))
    return found + campaign_hosts_problems(pool=pool, hosts=hosts)


def campaign_hosts_problems(
    *, pool: LabPool, hosts: Sequence[str] | None
) -> list[Problem]:
    """Why a campaign may not be bound to ``hosts`` of ``pool`` (each must be
    a host registered on it, by worker name, that can have its own queue)."""
    if hosts is None:
        return []
    if not hosts:
        return [Problem("no_hosts", f"No host of {pool.name} is left to run.", "hosts")]
    known = set(pool_host_names(pool))
    found = []
    for index, name in enumerate(hosts):
        if name not in known or not host_name_routable(name):
            message = f"{name!r} is not a host of pool {pool.name}."
            found.append(Problem("unknown_host", message, f"hosts[{index}]"))
    return found


def is_baseline(bundle: Bundle) -> bool:
    """A bundle of the RFP's buyer itself: its campaign is the baseline (the
    buyer's harness on current infrastructure), not a bid's re-run, so the
    bids' sealing does not hold it back."""
    return bundle.organisation_id == bundle.rfp.buyer_organisation_id


def _scenarios(
    bundle: Bundle, only: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """The harness's scenarios in its order (only those named in ``only``)."""
    harness = (bundle.manifest or {}).get("harness") or {}
    found = [s for s in harness.get("scenarios") or [] if isinstance(s, dict)]
    return found if only is None else [s for s in found if s.get("name") in only]


@transaction.atomic
def campaign_start(
    *,
    bundle: Bundle,
    pool: LabPool,
    repetitions: int,
    actor: User,
    note: str = "",
    scenarios: Sequence[str] | None = None,
    hosts: Sequence[str] | None = None,
    lab_plan: Mapping[str, Any] | None = None,
) -> Campaign:
    """Create the campaign and its runs; dispatch them after commit.
    ``scenarios``: only these of the harness (a gate re-runs the scenarios its
    criteria judge), else all of them; ``lab_plan``: the lab's own scenarios
    (run after the bundle's, marked ``"added_by": "lab"``) and neighbour jobs.
    ``hosts``: only these hosts of the pool run it (by worker name; each run
    goes to one of their own queues), else any host of the pool. A bundle of
    the RFP's buyer makes a ``baseline`` campaign (``is_baseline``), any other a
    ``vendor`` one."""
    only = list(scenarios) if scenarios is not None else None
    problems = campaign_start_problems(
        bundle=bundle,
        pool=pool,
        repetitions=repetitions,
        actor=actor,
        only=only,
        hosts=hosts,
        lab_plan=lab_plan,
    )
    if problems:
        error = RunnerConflict if problems[0].code == "sealed" else RunnerError
        raise error(
            " ".join(p.message for p in problems),
            code=problems[0].code,
            problems=problems,
        )
    chosen = _scenarios(bundle, only) + lab_scenarios(lab_plan)
    neighbours = campaign_neighbours(lab_plan, chosen)
    campaign = Campaign.objects.create(
        rfp=bundle.rfp,
        bundle=bundle,
        pool=pool,
        started_by=actor,
        repetitions=repetitions,
        scenarios=chosen,
        neighbours=neighbours,
        note=note.strip()[:300],
        hosts=list(hosts or []),
        role=Campaign.Role.BASELINE if is_baseline(bundle) else Campaign.Role.VENDOR,
    )
    runs = [
        Run(
            campaign=campaign,
            position=position,
            scenario_name=str(s["name"]),
            scenario=s,
            repetition=repetition,
            wall_limit_s=conf.wall_limit_seconds(float(s.get("duration_s") or 0)),
        )
        for position, (repetition, s) in enumerate(
            (r, s) for r in range(1, repetitions + 1) for s in chosen
        )
    ]
    Run.objects.bulk_create(runs)
    audit_record(
        actor=actor,
        action="campaign.started",
        target=campaign,
        organisation=bundle.rfp.buyer_organisation,
        data={
            "rfp": bundle.rfp.reference,
            "vendor": bundle.organisation.slug,
            "bundle_sha256": bundle.sha256,
            "role": campaign.role,
            "pool": pool.name,
            "scenarios": len(chosen),
            "lab_scenarios": len(chosen) - len(_scenarios(bundle, only)),
            "repetitions": repetitions,
            "runs": len(runs),
            **({"hosts": campaign.hosts} if campaign.hosts else {}),
        },
    )
    runs_dispatch(list(campaign.runs.select_related("campaign__pool")))
    return campaign


def campaign_add_runs_problems(
    *, campaign: Campaign, scenarios: dict[str, int], actor: Actor
) -> list[Problem]:
    """Why these repetitions may not be added (empty when they may). ``actor``
    None: the server itself (a gate's automatic top-up)."""
    if actor is not None and not can_add_runs(actor, campaign):
        message = "Only the pool's lab operators or the RFP's buyers add runs."
        return [Problem("not_allowed", message, None)]
    if campaign.cancelled_at is not None:
        return [Problem("cancelled", "The campaign was cancelled.", None)]
    known = {str(s.get("name")) for s in campaign.scenarios}
    found = [
        Problem("unknown_scenario", f"The campaign has no scenario {name!r}.", name)
        for name in scenarios
        if name not in known
    ]
    found += [
        Problem("runs", f"Add between 1 and {MAX_ADDED_RUNS} runs.", name)
        for name, n in scenarios.items()
        if type(n) is not int or not 1 <= n <= MAX_ADDED_RUNS
    ]
    if not scenarios:
        found.append(Problem("no_runs", "Name at least one scenario.", None))
    if found:
        return found
    top = _top_repetitions(campaign)
    if any(top.get(name, 0) + n > MAX_REPETITIONS for name, n in scenarios.items()):
        message = f"A scenario runs at most {MAX_REPETITIONS} repetitions."
        found.append(Problem("repetitions", message, None))
    if sum(scenarios.values()) + campaign.runs.count() > conf.max_runs_per_campaign():
        message = f"That is more than {conf.max_runs_per_campaign()} runs."
        found.append(Problem("too_many_runs", message, None))
    return found


def _top_repetitions(campaign: Campaign) -> dict[str, int]:
    rows = campaign.runs.values("scenario_name").annotate(top=Max("repetition"))
    return {r["scenario_name"]: r["top"] for r in rows}


@transaction.atomic
def campaign_add_runs(
    *, campaign: Campaign, scenarios: dict[str, int], actor: Actor
) -> list[Run]:
    """Append ``n`` repetitions to each named scenario after its highest one,
    queued and dispatched after commit (in repetition order, as a campaign
    starts); ``repetitions`` becomes the highest repetition of any scenario."""
    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    problems = campaign_add_runs_problems(
        campaign=campaign, scenarios=scenarios, actor=actor
    )
    if problems:
        error = RunnerConflict if problems[0].code == "cancelled" else RunnerError
        message = " ".join(p.message for p in problems)
        raise error(message, code=problems[0].code, problems=problems)
    top = _top_repetitions(campaign)
    position = campaign.runs.aggregate(p=Max("position"))["p"]
    ordered = [s for s in campaign.scenarios if str(s.get("name")) in scenarios]
    runs = []
    for k in range(1, max(scenarios.values()) + 1):
        for s in (s for s in ordered if scenarios[str(s["name"])] >= k):
            position = 0 if position is None else position + 1
            name = str(s["name"])
            runs.append(_new_run(campaign, s, position, top.get(name, 0) + k))
    Run.objects.bulk_create(runs)
    campaign.repetitions = max(campaign.repetitions, *(r.repetition for r in runs))
    campaign.save(update_fields=["repetitions", "updated_at"])
    audit_record(
        actor=actor,
        action="campaign.runs_added",
        target=campaign,
        organisation=campaign.rfp.buyer_organisation,
        data={"rfp": campaign.rfp.reference, "scenarios": scenarios, "runs": len(runs)},
    )
    added = list(
        Run.objects.filter(campaign=campaign, position__gte=runs[0].position)
        .select_related("campaign__pool")
        .order_by("position")
    )
    runs_dispatch(added)
    return added


def _new_run(
    campaign: Campaign, scenario: dict[str, Any], position: int, repetition: int
) -> Run:
    return Run(
        campaign=campaign,
        position=position,
        scenario_name=str(scenario["name"]),
        scenario=scenario,
        repetition=repetition,
        wall_limit_s=conf.wall_limit_seconds(float(scenario.get("duration_s") or 0)),
    )


@transaction.atomic
def campaign_cancel(*, campaign: Campaign, actor: User) -> Campaign:
    """Cancel every run not finished yet (each run's own audited move)."""
    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    pending = [
        run
        for run in Run.objects.filter(campaign=campaign).exclude(state__in=FINAL)
        if run.cancel_requested_at is None
    ]
    if campaign.cancelled_at is not None or not pending:
        raise RunnerConflict("Nothing left to cancel.", code="nothing_to_cancel")
    campaign.cancelled_at = clock.now()
    campaign.save(update_fields=["cancelled_at", "updated_at"])
    for run in pending:
        run_cancel(run=run, actor=actor)
    audit_record(
        actor=actor,
        action="campaign.cancelled",
        target=campaign,
        organisation=campaign.rfp.buyer_organisation,
        data={"rfp": campaign.rfp.reference, "runs": len(pending)},
    )
    return campaign
