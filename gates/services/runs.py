"""Campaigns run for a gate, and adaptive repetitions.

A lab operator starts a campaign for a gate (``gate_campaign_start``); a
``GateCampaign`` links it to the plan and gate, and when its last run ends the
verdict path (``gates.services.pipeline.campaign_ended_judge``) evaluates it. An
INCONCLUSIVE evaluation says how many more runs of which scenario would decide
it (``gates.selectors.runs``); a lab operator or buyer schedules exactly those
on the same campaign (``gate_schedule_more_runs``), or the plan's automatic
top-up does (``gate_top_up``, the verdict path's last step), within
``GatePlan.max_extra_runs`` extra runs per scenario of one campaign and gate."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping
from typing import Any

from django.db import transaction

from accounts.exceptions import ApplicationError, Problem
from accounts.selectors import clock
from accounts.services.actor import Actor, person
from accounts.services.audit import audit_record
from artifacts.models import Bundle
from benchmarks.models import Campaign, LabPool
from benchmarks.services.campaigns import campaign_add_runs, campaign_start
from gates.exceptions import GatesConflict, GatesError
from gates.models import Evaluation, GateCampaign, GatePlan
from gates.selectors.runs import (
    evaluation_more_runs,
    gate_choice_list_for,
    gate_hosts,
    gate_hosts_unknown,
    gate_repetitions,
    gate_scenarios,
    plan_bundle,
)
from gates.services.evaluations import gate_facts

logger = logging.getLogger(__name__)


def _latest_evaluation(evaluation: Evaluation) -> Evaluation | None:
    return (
        Evaluation.objects.filter(
            rfp_id=evaluation.rfp_id,
            vendor_organisation_id=evaluation.vendor_organisation_id,
            gate=evaluation.gate,
        )
        .order_by("-evaluated_at", "-id")
        .first()
    )


def gate_schedule_more_runs_problems(*, evaluation: Evaluation) -> list[Problem]:
    """Why the runs this evaluation needs cannot be scheduled (empty: they can)."""
    if evaluation.plan.status != GatePlan.Status.FROZEN:
        message = f"Plan v{evaluation.plan.version} was superseded by a new version."
        return [Problem("superseded", message)]
    latest = _latest_evaluation(evaluation)
    if latest is not None and latest.pk != evaluation.pk:
        message = "A later evaluation of this gate exists: schedule from that one."
        return [Problem("not_latest", message)]
    if evaluation.scheduled.exists():
        message = "The runs this evaluation needs are scheduled already."
        return [Problem("scheduled", message)]
    if not evaluation_more_runs(evaluation):
        return [Problem("decided", "No more runs are needed: the gate is decided.")]
    return []


def gate_campaign_link(
    *, plan: GatePlan, gate: str, campaign: Campaign, actor: Actor, **fields: Any
) -> GateCampaign:
    """Link ``campaign`` to the plan's gate, so that it is evaluated once its runs
    have finished (``fields``: the more-runs link's ``after``, ``extra_runs``,
    ``automatic``)."""
    return GateCampaign.objects.create(
        plan=plan,
        gate=gate,
        campaign=campaign,
        requested_by=person(actor),
        requested_at=clock.now(),
        **fields,
    )


@transaction.atomic
def gate_schedule_more_runs(
    *, evaluation: Evaluation, actor: Actor, automatic: bool = False
) -> GateCampaign:
    """Add the runs ``evaluation`` needs to its campaign (who may: see
    ``benchmarks.selectors.access.can_add_runs``; ``actor`` None with
    ``automatic``: the plan's top-up) and link them so that the campaign is
    evaluated again once they have finished."""
    evaluation = Evaluation.objects.select_for_update().get(pk=evaluation.pk)
    problems = gate_schedule_more_runs_problems(evaluation=evaluation)
    if problems:
        raise GatesConflict(
            problems[0].message, code=problems[0].code, problems=problems
        )
    needed = evaluation_more_runs(evaluation)
    runs = campaign_add_runs(
        campaign=evaluation.campaign, scenarios=needed, actor=actor
    )
    link = gate_campaign_link(
        plan=evaluation.plan,
        gate=evaluation.gate,
        campaign=evaluation.campaign,
        actor=actor,
        after=evaluation,
        extra_runs=len(runs),
        automatic=automatic,
    )
    audit_record(
        actor=actor,
        action="gate.runs_scheduled",
        target=evaluation,
        organisation=evaluation.rfp.buyer_organisation,
        data={
            "rfp": evaluation.rfp.reference,
            "vendor": evaluation.vendor_organisation.slug,
            "gate": evaluation.gate,
            "campaign": str(evaluation.campaign.public_id),
            "scenarios": needed,
            "runs": len(runs),
            "automatic": automatic,
        },
    )
    return link


def automatic_runs_used(*, campaign: Campaign, gate: str) -> Counter[str]:
    """Per scenario, the extra runs the top-up has scheduled on this campaign
    for this gate so far (what each automatic request's evaluation needed)."""
    used: Counter[str] = Counter()
    links = GateCampaign.objects.filter(
        campaign=campaign, gate=gate, automatic=True
    ).select_related("after")
    for link in links:
        if link.after is not None:
            used.update(evaluation_more_runs(link.after))
    return used


def gate_top_up(*, evaluation: Evaluation) -> GateCampaign | None:
    """Schedule what an INCONCLUSIVE evaluation needs when the plan's
    ``max_extra_runs`` allows all of it (never a part); None when it does not,
    or nothing is needed."""
    limit = evaluation.plan.max_extra_runs
    needed = evaluation_more_runs(evaluation)
    if not limit or not needed or evaluation.campaign.cancelled_at is not None:
        return None
    used = automatic_runs_used(campaign=evaluation.campaign, gate=evaluation.gate)
    if any(used[name] + n > limit for name, n in needed.items()):
        logger.info("top-up of %s stops at max_extra_runs=%s", evaluation, limit)
        return None
    try:
        return gate_schedule_more_runs(
            evaluation=evaluation, actor=None, automatic=True
        )
    except ApplicationError as error:  # e.g. the campaign's run limit
        logger.warning("top-up of %s refused: %s", evaluation, error)
        return None


def gate_campaign_hosts(
    *, plan: GatePlan, gate: str, pool: LabPool
) -> list[str] | None:
    """The hosts of ``pool`` a campaign for the gate is bound to
    (``gate_hosts``: its canary hosts, or the rest of the pool after an
    earlier gate's), None for the whole pool; ``GatesError`` when the gate
    names a host that is not one of the pool's, or no host is left."""
    unknown = gate_hosts_unknown(plan, gate, pool)
    if unknown:
        verb = "is not a host" if len(unknown) == 1 else "are not hosts"
        message = (
            f"Gate {gate} runs only on hosts its plan names, and "
            f"{', '.join(unknown)} {verb} of pool {pool.name}."
        )
        problems = [Problem("unknown_host", message, "pool")]
        raise GatesError(message, code="unknown_host", problems=problems)
    hosts = gate_hosts(plan, gate, pool)
    if hosts == []:
        message = (
            f"Every host of pool {pool.name} is a canary host of an earlier gate: "
            f"none is left for gate {gate}."
        )
        problems = [Problem("no_hosts", message, "pool")]
        raise GatesError(message, code="no_hosts", problems=problems)
    return hosts


@transaction.atomic
def gate_campaign_start(
    *,
    plan: GatePlan,
    gate: str,
    pool: LabPool,
    actor: Any,
    repetitions: int | None = None,
    bundle: Bundle | None = None,
    note: str = "",
    lab_plan: Mapping[str, Any] | None = None,
) -> GateCampaign:
    """Start a campaign of the plan's bundle (else the vendor's latest accepted
    one; ``bundle``: the one the lab chose, which must be that one) on ``pool``
    for ``gate`` (``repetitions``: the gate's largest ``min_runs`` when not
    given); it is evaluated when its runs have finished. Its runs go only to
    the gate's hosts of the pool (``gate_campaign_hosts``). ``lab_plan``: the
    lab's own scenarios, run beside the gate's, and neighbour jobs
    (``benchmarks.lib.lab.lab_plan``)."""
    plan = GatePlan.objects.select_for_update().get(pk=plan.pk)
    if plan.status != GatePlan.Status.FROZEN:
        raise GatesConflict("Only the current frozen plan runs.", code="not_frozen")
    if gate not in plan.gate_names:
        raise GatesError(f"The plan has no gate named {gate!r}.", code="no_gate")
    judged = plan_bundle(plan)
    if judged is None:
        raise GatesError("The vendor has no accepted bundle.", code="no_bundle")
    if bundle is not None and bundle.pk != judged.pk:
        message = (
            f"Gate {gate} of plan v{plan.version} runs bundle {judged.sha256[:12]}."
        )
        raise GatesError(
            message,
            code="other_bundle",
            problems=[Problem("other_bundle", message, "bundle")],
        )
    campaign = campaign_start(
        bundle=judged,
        pool=pool,
        repetitions=repetitions or gate_repetitions(plan, gate),
        actor=actor,
        note=note or f"Gate {gate} of plan v{plan.version}",
        scenarios=gate_scenarios(plan, gate, judged),
        hosts=gate_campaign_hosts(plan=plan, gate=gate, pool=pool),
        lab_plan=lab_plan,
    )
    link = gate_campaign_link(plan=plan, gate=gate, campaign=campaign, actor=actor)
    audit_record(
        actor=actor,
        action="gate.campaign_started",
        target=plan,
        organisation=plan.rfp.buyer_organisation,
        data={
            **gate_facts(plan, gate, campaign),
            "repetitions": campaign.repetitions,
            **({"hosts": campaign.hosts} if campaign.hosts else {}),
        },
    )
    return link


def gate_campaign_start_chosen(
    *,
    choice: str,
    bundle: Bundle,
    pool: LabPool,
    repetitions: int,
    note: str,
    actor: Any,
    lab_plan: Mapping[str, Any] | None = None,
) -> Campaign:
    """The lab's campaign form with a gate chosen (``gate_choice_list_for``):
    the campaign for that gate (benchmarks' gate campaign source)."""
    if choice not in {c.value for c in gate_choice_list_for(actor)}:
        message = "That gate cannot be run: choose one the form offers."
        raise GatesError(message, "no_gate", (Problem("no_gate", message, "gate"),))
    plan_id, _, gate = choice.partition(":")
    plan = GatePlan.objects.get(public_id=plan_id)
    link = gate_campaign_start(
        plan=plan,
        gate=gate,
        pool=pool,
        actor=actor,
        repetitions=repetitions,
        bundle=bundle,
        note=note,
        lab_plan=lab_plan,
    )
    return link.campaign
