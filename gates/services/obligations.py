"""Re-test obligations: raised and answered by evaluations, asked for by the
vendor, run by the lab, expired by the clock.

- ``obligations_after_evaluation`` (the verdict path's second step, in the
  evaluation's transaction: ``gates.services.pipeline``): an evaluation of a
  re-test campaign answers its scheduled obligation: every criterion of the
  obligation PASSes (and no stop-loss) → ``passed``; a criterion still
  INCONCLUSIVE → no change (more runs decide it); otherwise the attempt is used:
  back to ``open`` while attempts remain (the deadline stays), else ``failed``, a
  breach. An evaluation after the deadline answers nothing: the obligation is
  ``expired``. Any other evaluation whose verdict is FAIL with blocking FAIL
  criteria raises an obligation on the vendor when the judged runs had no major
  drift or the plan accepts the lab's environment (otherwise it is a lab
  deviation, not the vendor's to answer), and no obligation is live for the
  vendor's gate on the RFP already. A HALTED gate never raises one, nor does a
  criterion held to a baseline the lab has not measured ("baseline not
  measured": no limit, the lab's to fill).
- ``obligation_request_retest``: the vendor names a revised accepted bundle of
  its own on the RFP; one attempt is used; the lab operators are told.
- ``obligation_campaign_start``: a lab operator re-runs that bundle; the
  campaign is linked to the obligation and to the gate of the current plan, so
  it is evaluated when it finishes and the evaluation answers the obligation.
- ``obligations_expire`` (the hourly beat task): live obligations past their
  deadline become ``expired`` (reads see it earlier through ``status_now``),
  but not while a dispute of a verdict of their gate is open.
- ``obligation_for_dispute``: an upheld dispute's re-test at the buyer's cost:
  the gate's live obligation taken over (buyer-funded, a fresh deadline, an
  attempt the vendor does not spend), else a new scheduled one.

``failed`` and ``expired`` are breaches (``breached_at``) an escrow release can
cite. Every status change is ``obligation_transition``: one audit row each."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Final

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.urls import reverse

from accounts.models import Organisation, Role
from accounts.selectors import clock
from accounts.selectors.users import organisation_ids_for, user_list_in
from accounts.services.actor import Actor
from accounts.services.audit import audit_record
from accounts.services.notifications import notify_users
from accounts.services.transitions import transition
from artifacts.models import Bundle
from benchmarks.models import Campaign, LabPool
from benchmarks.services.campaigns import campaign_start
from gates.exceptions import GatesConflict, GatesError
from gates.models import (
    OBLIGATION_TRANSITIONS,
    Dispute,
    Evaluation,
    GatePlan,
    RetestObligation,
)
from gates.selectors.obligations import revalidation_canary_pending
from gates.selectors.runs import gate_repetitions, gate_scenarios
from gates.services.runs import gate_campaign_hosts, gate_campaign_link

OB = RetestObligation.Status
LIVE: Final = (OB.OPEN, OB.SCHEDULED)
BREACHES: Final = (OB.FAILED, OB.EXPIRED)
CLOSED: Final = (OB.PASSED, OB.FAILED, OB.EXPIRED)
OB_COST: Final = {  # by ``Rfp.retest_vendor_funded``
    True: RetestObligation.CostBearer.VENDOR,
    False: RetestObligation.CostBearer.BUYER,
}
ACTIONS: Final[dict[str, str]] = {
    OB.SCHEDULED: "retest.scheduled",
    OB.OPEN: "retest.reopened",
    OB.PASSED: "retest.passed",
    OB.FAILED: "retest.failed",
    OB.EXPIRED: "retest.expired",
}


def retest_url(obligation: RetestObligation) -> str:
    return reverse("gates:retest", args=[obligation.public_id])


def obligation_facts(obligation: RetestObligation) -> dict[str, Any]:
    return {
        "rfp": obligation.rfp.reference,
        "vendor": obligation.vendor_organisation.slug,
        "gate": obligation.gate,
        "obligation": str(obligation.public_id),
        "criteria": list(obligation.criteria),
        "status": obligation.status,
        "deadline": obligation.deadline.isoformat(),
        "attempts_used": obligation.attempts_used,
        "max_attempts": obligation.max_attempts,
        "cost_bearer": obligation.cost_bearer,
    }


def _vendor_members(obligation: RetestObligation) -> Any:
    return user_list_in([obligation.vendor_organisation_id], Role.VENDOR, Role.ADMIN)


def obligation_buyer_team(obligation: RetestObligation) -> Any:
    buyer = obligation.rfp.buyer_organisation_id
    return user_list_in([buyer], Role.BUYER, Role.EVALUATOR, Role.ADMIN)


def obligation_lab_operators(obligation: RetestObligation) -> Any:
    buyer = obligation.rfp.buyer_organisation
    labs = buyer.engages.filter(kind=Organisation.Kind.LAB).values_list("pk", flat=True)
    return user_list_in(labs, Role.LABOPS)


def obligation_notify(
    obligation: RetestObligation, template: str, users: list[Any], **extra: Any
) -> None:
    notify_users(
        users=users,
        template=template,
        context={"obligation": obligation, "rfp": obligation.rfp, **extra},
        url=retest_url(obligation),
    )


@transaction.atomic
def obligation_transition(
    *,
    obligation: RetestObligation,
    to: str,
    actor: Actor,
    action: str = "",
    data: dict[str, Any] | None = None,
    fields: tuple[str, ...] = (),
    note: str = "",
    at: datetime | None = None,
) -> RetestObligation:
    """Move ``obligation`` (locked by the caller) to ``to`` through ``transition``
    (``OBLIGATION_TRANSITIONS``): stamps ``closed_at`` (and ``breached_at`` for a
    breach) at ``at`` (now), saves ``fields`` set with it, one audit row."""
    at = at or clock.now()
    stamps = {name: getattr(obligation, name) for name in fields}
    if to in CLOSED:
        stamps["closed_at"] = at
    if to in BREACHES:
        stamps["breached_at"] = at
    return transition(
        obligation,
        to,
        actor=actor,
        table=OBLIGATION_TRANSITIONS,
        entity="re-test obligation",
        action=action or ACTIONS[to],
        fields=stamps,
        organisation=obligation.rfp.buyer_organisation,
        data={
            **obligation_facts(obligation),
            "status": to,
            "note": note,
            **(data or {}),
        },
    )


# --- raised and answered by an evaluation ------------------------------------------


def _blocking_fails(evaluation: Evaluation) -> list[Any]:
    return list(
        evaluation.criterion_results.filter(blocking=True, verdict="FAIL").order_by(
            "position"
        )
    )


def obligation_reason(fails: list[Any]) -> str:
    """Each failing criterion's own sentence (claim, band, estimate and CI)."""
    return "\n".join(f"{row.criterion}: {row.reason}" for row in fails)


def _vendors_fault(evaluation: Evaluation) -> bool:
    return evaluation.max_drift != "major" or evaluation.plan.lab_environment_accepted


def _raise(evaluation: Evaluation) -> RetestObligation | None:
    # a criterion held to a baseline the lab has not measured has no limit: the
    # lab's gap to fill, not the vendor's failure to answer
    fails = [row for row in _blocking_fails(evaluation) if row.limit is not None]
    if evaluation.verdict != "FAIL" or not fails or not _vendors_fault(evaluation):
        return None
    live = RetestObligation.objects.filter(
        rfp_id=evaluation.rfp_id,
        vendor_organisation_id=evaluation.vendor_organisation_id,
        gate=evaluation.gate,
        status__in=LIVE,
    )
    if live.exists():
        return None
    rfp = evaluation.rfp
    obligation = RetestObligation.objects.create(
        rfp=rfp,
        vendor_organisation_id=evaluation.vendor_organisation_id,
        plan=evaluation.plan,
        gate=evaluation.gate,
        evaluation=evaluation,
        criteria=[row.criterion for row in fails],
        reason=obligation_reason(fails),
        deadline=evaluation.evaluated_at + timedelta(days=rfp.retest_deadline_days),
        max_attempts=rfp.retest_max_attempts,
        cost_bearer=OB_COST[rfp.retest_vendor_funded],
    )
    facts = {**obligation_facts(obligation), "evaluation": str(evaluation.public_id)}
    audit_record(
        actor=None,
        action="retest.raised",
        target=obligation,
        organisation=rfp.buyer_organisation,
        data=facts,
    )
    obligation_notify(obligation, "gate_retest_due", list(_vendor_members(obligation)))
    return obligation


def _outcome(obligation: RetestObligation, evaluation: Evaluation) -> str | None:
    """The status the evaluation gives the obligation (None: no change yet)."""
    if obligation.status_at(evaluation.evaluated_at) == OB.EXPIRED:
        return OB.EXPIRED
    verdicts = dict(
        evaluation.criterion_results.filter(
            criterion__in=obligation.criteria
        ).values_list("criterion", "verdict")
    )
    halted = evaluation.verdict == "HALTED" or evaluation.stop_loss_triggered
    if not halted and all(verdicts.get(c) == "PASS" for c in obligation.criteria):
        return OB.PASSED
    if not halted and "INCONCLUSIVE" in verdicts.values():
        return None
    return OB.OPEN if obligation.attempts_left > 0 else OB.FAILED


def _answer(evaluation: Evaluation, obligation: RetestObligation) -> None:
    obligation = RetestObligation.objects.select_for_update().get(pk=obligation.pk)
    if obligation.status != OB.SCHEDULED:
        return  # answered already, or closed
    to = _outcome(obligation, evaluation)
    if to is None:
        return
    at = obligation.deadline if to == OB.EXPIRED else evaluation.evaluated_at
    note = f"evaluation {evaluation.public_id}: {evaluation.verdict}"
    obligation_transition(obligation=obligation, to=to, actor=None, note=note, at=at)
    users = list(_vendor_members(obligation))
    if to in BREACHES or to == OB.PASSED:
        users += list(obligation_buyer_team(obligation))
    obligation_notify(obligation, f"gate_retest_{to}", users)


def obligations_after_evaluation(*, evaluation: Evaluation) -> None:
    """Answer the obligation the evaluation's campaign was run for, or raise one
    (see the module docstring)."""
    if evaluation.obligation is not None:
        _answer(evaluation, evaluation.obligation)
        return
    _raise(evaluation)


# --- the vendor asks for the re-test; the lab runs it --------------------------------


def _locked(obligation: RetestObligation) -> RetestObligation:
    return RetestObligation.objects.select_for_update().get(pk=obligation.pk)


def _require_open(obligation: RetestObligation) -> None:
    now_status = obligation.status_now
    if now_status == OB.OPEN:
        return
    if now_status == OB.EXPIRED:
        message = "The deadline of this re-test obligation has passed."
    else:
        message = f"This re-test obligation is {obligation.get_status_display()}."
    raise GatesConflict(message, code="obligation_not_open")


def _check_bundle(obligation: RetestObligation, bundle: Bundle) -> None:
    if bundle.rfp_id != obligation.rfp_id:
        raise GatesError("That bundle was submitted to another RFP.", code="bundle")
    if bundle.organisation_id != obligation.vendor_organisation_id:
        raise GatesError("That bundle is another organisation's.", code="bundle")
    if bundle.status != Bundle.Status.ACCEPTED:
        raise GatesError("Only an accepted bundle is re-tested.", code="bundle")
    used = {obligation.bundle_id}
    if obligation.evaluation is not None:
        used.add(obligation.evaluation.campaign.bundle_id)
    if bundle.pk in used:
        raise GatesError(
            "That bundle was tested already: upload a revised bundle.",
            code="bundle_not_revised",
        )


@transaction.atomic
def obligation_request_retest(
    *, obligation: RetestObligation, bundle: Bundle, actor: User
) -> RetestObligation:
    """The vendor asks for a re-test of its revised ``bundle`` (one attempt)."""
    obligation = _locked(obligation)
    vendor_orgs = organisation_ids_for(actor, Role.VENDOR, Role.ADMIN)
    if obligation.vendor_organisation_id not in vendor_orgs:
        raise GatesError(
            "Only the vendor's members ask for its re-test.", code="not_vendor"
        )
    _require_open(obligation)
    _check_bundle(obligation, bundle)
    obligation.bundle, obligation.campaign = bundle, None
    obligation.attempts_used += 1
    obligation.requested_by, obligation.requested_at = actor, clock.now()
    fields = ("bundle", "campaign", "attempts_used", "requested_by", "requested_at")
    obligation_transition(
        obligation=obligation, to=OB.SCHEDULED, actor=actor, fields=fields
    )
    obligation_notify(
        obligation, "gate_retest_requested", list(obligation_lab_operators(obligation))
    )
    return obligation


def _current_plan(obligation: RetestObligation) -> GatePlan:
    plan = GatePlan.objects.filter(
        rfp_id=obligation.rfp_id,
        vendor_organisation_id=obligation.vendor_organisation_id,
        status=GatePlan.Status.FROZEN,
    ).first()
    if plan is None or obligation.gate not in plan.gate_names:
        raise GatesConflict(
            f"No frozen plan has the gate {obligation.gate!r} any more.",
            code="no_current_plan",
        )
    return plan


@transaction.atomic
def obligation_campaign_start(
    *, obligation: RetestObligation, pool: LabPool, actor: User
) -> Campaign:
    """A lab operator starts the re-test campaign of the scheduled attempt."""
    obligation = _locked(obligation)
    if obligation.status_now != OB.SCHEDULED or obligation.bundle is None:
        raise GatesConflict(
            "No re-test is scheduled on this obligation.", code="not_scheduled"
        )
    if obligation.campaign_id is not None:
        raise GatesConflict(
            "The re-test campaign of this attempt has started already.",
            code="campaign_started",
        )
    if waiting := revalidation_canary_pending(obligation):
        raise GatesConflict(waiting, code="canary_first")
    plan = _current_plan(obligation)
    campaign = campaign_start(
        bundle=obligation.bundle,
        pool=pool,
        repetitions=gate_repetitions(plan, obligation.gate),
        actor=actor,
        note=f"Re-test of {obligation.gate} (attempt {obligation.attempts_used})",
        scenarios=gate_scenarios(plan, obligation.gate, obligation.bundle),
        hosts=gate_campaign_hosts(plan=plan, gate=obligation.gate, pool=pool),
    )
    obligation.campaign = campaign
    obligation.save(update_fields=["campaign", "updated_at"])
    gate_campaign_link(plan=plan, gate=obligation.gate, campaign=campaign, actor=actor)
    audit_record(
        actor=actor,
        action="retest.campaign_started",
        target=obligation,
        organisation=obligation.rfp.buyer_organisation,
        data={**obligation_facts(obligation), "campaign": str(campaign.public_id)},
    )
    return campaign


# --- the clock ---------------------------------------------------------------------


def obligations_expire(*, now: datetime | None = None) -> int:
    """Persist the expiry of every live obligation past its deadline (idempotent);
    how many expired now."""
    now = now or clock.now()
    disputed = Dispute.objects.filter(
        status=Dispute.Status.OPEN,
        rfp_id=OuterRef("rfp_id"),
        vendor_organisation_id=OuterRef("vendor_organisation_id"),
        gate=OuterRef("gate"),
    )
    due = RetestObligation.objects.filter(status__in=LIVE, deadline__lte=now).exclude(
        Exists(disputed)
    )
    expired = 0
    for pk in list(due.values_list("pk", flat=True)):
        with transaction.atomic():
            obligation = RetestObligation.objects.select_for_update().get(pk=pk)
            if obligation.status_at(now) != OB.EXPIRED or obligation.status not in LIVE:
                continue
            obligation_transition(
                obligation=obligation,
                to=OB.EXPIRED,
                actor=None,
                at=obligation.deadline,
                note="the deadline passed",
            )
            users = [*_vendor_members(obligation), *obligation_buyer_team(obligation)]
            obligation_notify(obligation, "gate_retest_expired", users)
            expired += 1
    return expired


# --- an upheld dispute: a re-test at the buyer's cost --------------------------------


def _disputed_criteria(evaluation: Evaluation) -> list[str]:
    """The blocking criteria the evaluation did not pass (all of the gate's
    criteria when none: a halt is re-run whole)."""
    rows = evaluation.criterion_results.order_by("position")
    failing = [r.criterion for r in rows if r.blocking and r.verdict != "PASS"]
    return failing or [r.criterion for r in rows]


def _buyer_funded(obligation: RetestObligation, dispute: Any, actor: User) -> None:
    """Take over the gate's live obligation: the buyer pays, the deadline runs
    afresh, and the re-run is an attempt the vendor does not spend."""
    rfp = obligation.rfp
    obligation.cost_bearer = RetestObligation.CostBearer.BUYER
    fresh = clock.now() + timedelta(days=rfp.retest_deadline_days)
    obligation.deadline = max(obligation.deadline, fresh)
    fields = ["cost_bearer", "deadline"]
    if obligation.status == OB.OPEN:
        obligation.bundle = dispute.bundle or dispute.evaluation.campaign.bundle
        obligation.campaign = None
        obligation.max_attempts += 1
        obligation.attempts_used += 1
        obligation.requested_by, obligation.requested_at = actor, clock.now()
        fields += ["bundle", "campaign", "max_attempts", "attempts_used"]
        fields += ["requested_by", "requested_at"]
        note = f"dispute {dispute.public_id} upheld: a re-test at the buyer's cost"
        obligation_transition(
            obligation=obligation, to=OB.SCHEDULED, actor=actor,
            fields=tuple(fields), note=note, data={"dispute": str(dispute.public_id)},
        )  # fmt: skip
        return
    obligation.save(update_fields=[*fields, "updated_at"])


@transaction.atomic
def obligation_for_dispute(*, dispute: Any, actor: User) -> RetestObligation:
    """The scheduled, buyer-funded re-test of an upheld ``dispute``: the gate's
    live obligation taken over, else a new one; the revised bundle if the
    vendor named one, else the judged bundle again. The lab is told."""
    evaluation = dispute.evaluation
    live = (
        RetestObligation.objects.select_for_update()
        .filter(
            rfp_id=dispute.rfp_id,
            vendor_organisation_id=dispute.vendor_organisation_id,
            gate=dispute.gate,
            status__in=LIVE,
        )
        .first()
    )
    if live is not None:
        _buyer_funded(live, dispute, actor)
        obligation = live
    else:
        rfp = evaluation.rfp
        obligation = RetestObligation.objects.create(
            rfp=rfp,
            vendor_organisation_id=evaluation.vendor_organisation_id,
            plan=dispute.plan,
            gate=dispute.gate,
            evaluation=evaluation,
            criteria=_disputed_criteria(evaluation),
            reason=f"Dispute upheld by {actor.get_username()}: {dispute.reason}",
            status=OB.SCHEDULED,
            deadline=clock.now() + timedelta(days=rfp.retest_deadline_days),
            max_attempts=rfp.retest_max_attempts + 1,
            attempts_used=1,
            cost_bearer=RetestObligation.CostBearer.BUYER,
            bundle=dispute.bundle or evaluation.campaign.bundle,
            requested_by=actor,
            requested_at=clock.now(),
        )
        facts = {**obligation_facts(obligation), "dispute": str(dispute.public_id)}
        audit_record(
            actor=actor,
            action="retest.raised",
            target=obligation,
            organisation=rfp.buyer_organisation,
            data={**facts, "evaluation": str(evaluation.public_id)},
        )
    if obligation.campaign_id is None:
        lab = list(obligation_lab_operators(obligation))
        obligation_notify(obligation, "gate_retest_requested", lab, dispute=dispute)
    return obligation
