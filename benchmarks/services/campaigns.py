"""Starting and cancelling campaigns. A campaign is one run per scenario of the
bundle's harness and repetition, dispatched to the pool's queue after commit in
repetition order (every scenario once, then again), so that slow drift of a
host spreads over scenarios instead of biasing one."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from accounts.audit import audit_record
from accounts.exceptions import Problem
from artifacts.models import Bundle
from benchmarks import conf
from benchmarks.models import Campaign, LabPool, Run
from benchmarks.selectors.access import UNSEALED, can_operate_pool
from benchmarks.services.common import RunnerConflict, RunnerError
from benchmarks.services.runs import FINAL, run_cancel, runs_dispatch
from procurement import clock

MAX_REPETITIONS = 100


def campaign_start_problems(
    *, bundle: Bundle, pool: LabPool, repetitions: int, actor: AbstractBaseUser
) -> list[Problem]:
    """Why this campaign may not start (empty when it may)."""
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
    if bundle.rfp.status not in UNSEALED:
        message = (
            "The RFP's bids are still sealed: campaigns start once they are opened."
        )
        found.append(Problem("sealed", message, "bundle"))
    if not 1 <= repetitions <= MAX_REPETITIONS:
        message = f"Repetitions must be between 1 and {MAX_REPETITIONS}."
        found.append(Problem("repetitions", message, "repetitions"))
    scenarios = _scenarios(bundle)
    if not scenarios:
        found.append(
            Problem(
                "no_scenarios", "The bundle's harness declares no scenario.", "bundle"
            )
        )
    elif len(scenarios) * repetitions > conf.max_runs_per_campaign():
        message = f"That is more than {conf.max_runs_per_campaign()} runs."
        found.append(Problem("too_many_runs", message, "repetitions"))
    return found


def _scenarios(bundle: Bundle) -> list[dict[str, Any]]:
    harness = (bundle.manifest or {}).get("harness") or {}
    return [s for s in harness.get("scenarios") or [] if isinstance(s, dict)]


@transaction.atomic
def campaign_start(
    *,
    bundle: Bundle,
    pool: LabPool,
    repetitions: int,
    actor: AbstractBaseUser,
    note: str = "",
) -> Campaign:
    """Create the campaign and its runs; dispatch them after commit."""
    problems = campaign_start_problems(
        bundle=bundle, pool=pool, repetitions=repetitions, actor=actor
    )
    if problems:
        error = RunnerConflict if problems[0].code == "sealed" else RunnerError
        raise error(
            " ".join(p.message for p in problems),
            code=problems[0].code,
            problems=problems,
        )
    scenarios = _scenarios(bundle)
    campaign = Campaign.objects.create(
        rfp=bundle.rfp,
        bundle=bundle,
        pool=pool,
        started_by=actor,
        repetitions=repetitions,
        scenarios=scenarios,
        note=note.strip()[:300],
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
            (r, s) for r in range(1, repetitions + 1) for s in scenarios
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
            "pool": pool.name,
            "scenarios": len(scenarios),
            "repetitions": repetitions,
            "runs": len(runs),
        },
    )
    runs_dispatch(list(campaign.runs.select_related("campaign__pool")))
    return campaign


@transaction.atomic
def campaign_cancel(*, campaign: Campaign, actor: AbstractBaseUser) -> Campaign:
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
