"""The verdict path: what follows when a gate's campaign ends, in order.

benchmarks' ``campaign_finished`` signal reaches ``gates.tasks``' receiver, which
queues ``campaign_ended_judge_task`` (by the campaign's id) when the campaign
serves a gate not judged yet; the task calls ``campaign_ended_judge``, once per
campaign end, in one transaction. For each gate the campaign serves, with the
RFP and vendor's current frozen plan:

1. ``gate_evaluate`` (``gates.services.evaluations``): judge the gate on the
   campaign's runs and record the evaluation (its documents, criterion rows and
   escrow deposit);
2. ``obligations_after_evaluation`` (``gates.services.obligations``): answer the
   re-test obligation the campaign was run for, or raise one on the vendor;
3. ``report_request`` (``gates.services.reports``): the signed benchmark report,
   rendered by its task after commit;
4. ``gate_top_up`` (``gates.services.runs``): an INCONCLUSIVE gate's missing
   runs, within the plan's ``max_extra_runs`` (when they end, the path runs
   again).

Steps 1 to 3 are ``gate_judge``, which a buyer's own evaluation of a campaign
(the API) runs too. Each step writes its own audit row (``docs/architecture.md``,
"Audit rows per action"). The steps never import this module: evaluations ←
runs ← obligations, reports ← pipeline ← tasks."""

from __future__ import annotations

import logging

from django.db import transaction

from accounts.exceptions import ApplicationError
from accounts.services.actor import Actor
from benchmarks.models import Campaign
from benchmarks.services.receivers import FINAL
from gates.models import Evaluation, GateCampaign, GatePlan, RetestObligation
from gates.services.evaluations import gate_evaluate
from gates.services.obligations import obligations_after_evaluation
from gates.services.reports import report_request
from gates.services.runs import gate_top_up

logger = logging.getLogger(__name__)


@transaction.atomic
def gate_judge(
    *,
    plan: GatePlan,
    gate: str,
    campaign: Campaign,
    actor: Actor,
    obligation: RetestObligation | None = None,
) -> Evaluation:
    """Steps 1 to 3: evaluate ``gate`` of ``plan`` on ``campaign`` (see
    ``gate_evaluate``), then answer or raise its re-test obligation and request
    its signed report, in one transaction."""
    evaluation = gate_evaluate(
        plan=plan, gate=gate, campaign=campaign, actor=actor, obligation=obligation
    )
    obligations_after_evaluation(evaluation=evaluation)
    report_request(evaluation=evaluation, actor=None)  # automatic: no requester
    return evaluation


def _current_plan(link: GateCampaign) -> GatePlan | None:
    return GatePlan.objects.filter(
        rfp_id=link.plan.rfp_id,
        vendor_organisation_id=link.plan.vendor_organisation_id,
        status=GatePlan.Status.FROZEN,
    ).first()


@transaction.atomic
def campaign_ended_judge(*, campaign: Campaign) -> list[Evaluation]:
    """Judge each gate the ended campaign was run for, with the RFP and vendor's
    current frozen plan (``gate_judge``), then top up an INCONCLUSIVE one.
    Idempotent: a link evaluated already, or a campaign with runs still to end,
    is left. A cancelled campaign is not judged (its unmeasured criteria would
    FAIL and owe the vendor a re-test for the lab's decision to stop)."""
    links = list(
        GateCampaign.objects.select_for_update(of=("self",))
        .filter(campaign=campaign, evaluation__isnull=True)
        .select_related("plan")
        .order_by("id")
    )
    if campaign.runs.exclude(state__in=FINAL).exists():
        return []
    if Campaign.objects.filter(pk=campaign.pk, cancelled_at__isnull=False).exists():
        logger.info("%s was cancelled: its gates are not evaluated", campaign)
        return []
    evaluations = []
    for link in links:
        plan = _current_plan(link)
        if plan is None or link.gate not in plan.gate_names:
            logger.warning("%s: no current plan with that gate", link)
            continue
        try:
            evaluation = gate_judge(
                plan=plan, gate=link.gate, campaign=campaign, actor=None
            )
        except ApplicationError as error:
            logger.warning("%s not evaluated: %s", link, error)
            continue
        link.evaluation = evaluation
        link.save(update_fields=["evaluation"])
        evaluations.append(evaluation)
        gate_top_up(evaluation=evaluation)
    return evaluations
