"""Decisions on a gate: promote, hold or roll back.

Who: buyer-side members of the RFP's buyer organisation (buyers, evaluators,
admins). Every decision names its rationale and rests on the gate's latest
evaluation (``gates.selectors.decisions``: the vendor's history on the RFP,
across plan versions). Hold and rollback are recorded at once. A promotion is
``pending`` until a second buyer-side person signs it off (never the same
person: also the ``gates_decision_two_people`` constraint); it may be
withdrawn meanwhile. Promotion needs the gate's latest ``consecutive_passes``
campaigns to PASS, no stop-loss on the latest evaluation, and the previous gate
promoted; the second sign-off checks all that again. While the vendor's dispute
of the gate's verdict is open, neither a promotion nor a rollback is recorded
(a hold is).

Each step is one transaction with one audit row (``gate.decided``,
``gate.decision_seconded``, ``gate.decision_withdrawn``) and, for ``decided``
and ``seconded``, one transparency-log entry (``reprogate.gate-decision/v1``,
canonical JSON naming the evaluation's digest and escrow leaf): ``log_index``
is the entry of the decision's latest step (a recorded promotion: its second
sign-off, whose leaf cites the first's index). The vendor's members are told of
every decision; the buyer's team is asked for a pending promotion's second
sign-off."""

from __future__ import annotations

import hashlib
from typing import Any, Final

from django.contrib.auth.models import User
from django.db import transaction
from django.urls import reverse

from accounts.exceptions import InvalidTransition
from accounts.models import Role
from accounts.selectors import clock
from accounts.selectors.users import user_list_in
from accounts.services.audit import audit_record
from accounts.services.notifications import notify_users
from accounts.services.transitions import transition
from artifacts.lib.canonical import canonical_json
from artifacts.lib.evidence.layout import format_time
from artifacts.services.transparency import checkpoint_publish_on_commit, log_append
from gates.exceptions import GatesConflict, GatesError
from gates.models import DECISION_TRANSITIONS, Decision, GatePlan
from gates.selectors.decisions import disputed_reason, gate_state
from procurement.permissions import is_buyer_side

LOG_SCHEMA: Final = "reprogate.gate-decision/v1"
RATIONALE_MAX: Final = 4000
PENDING_MESSAGE: Final = "A promotion is waiting for its second sign-off."
K, S = Decision.Kind, Decision.Status


def _require_buyer_side(actor: User, plan: GatePlan, what: str) -> None:
    if not is_buyer_side(actor, plan.rfp):
        raise GatesError(
            f"Only members of {plan.rfp.buyer_organisation.name} {what}.",
            code="not_buyer_side",
        )


def _text(text: str, what: str, *, required: bool) -> str:
    text = (text or "").strip()
    if required and not text:
        raise GatesError(f"Write the {what}.", code=f"{what}_required")
    if len(text) > RATIONALE_MAX:
        raise GatesError(
            f"The {what} is at most {RATIONALE_MAX} characters.", code="text_too_long"
        )
    return text


def _log(decision: Decision, step: str, actor: User, status: str = "") -> int:
    """Append the step's leaf (the decision as the step leaves it: ``status``)
    to the transparency log; its index."""
    evaluation, plan = decision.evaluation, decision.plan
    record: dict[str, Any] = {
        "schema": LOG_SCHEMA,
        "action": f"gate.{step}",
        "decision": str(decision.public_id),
        "rfp": plan.rfp.reference,
        "vendor": plan.vendor_organisation.slug,
        "gate": decision.gate,
        "kind": decision.kind,
        "status": status or decision.status,
        "plan_version": plan.version,
        "plan_sha256": plan.sha256,
        "evaluation": str(evaluation.public_id),
        "evaluation_sha256": evaluation.evaluation_sha256,
        "evaluation_leaf_index": getattr(evaluation.deposit, "log_index", None),
        "verdict": evaluation.verdict,
        "rationale_sha256": hashlib.sha256(decision.rationale.encode()).hexdigest(),
        "decided_by": decision.decided_by.get_username(),
        "decided_at": format_time(decision.decided_at),
        "actor": actor.get_username(),
        "time": format_time(clock.now()),
    }
    if decision.second_by is not None:
        record["second_by"] = decision.second_by.get_username()
        record["first_log_index"] = decision.log_index
    index = log_append(canonical_json(record)).index
    checkpoint_publish_on_commit()
    return index


def _facts(decision: Decision) -> dict[str, Any]:
    return {
        "rfp": decision.plan.rfp.reference,
        "vendor": decision.plan.vendor_organisation.slug,
        "gate": decision.gate,
        "kind": decision.kind,
        "status": decision.status,
        "plan_version": decision.plan.version,
        "evaluation": str(decision.evaluation.public_id),
        "verdict": decision.evaluation.verdict,
        "rationale": decision.rationale,
        "log_index": decision.log_index,
    }


def decision_url(decision: Decision) -> str:
    """The gate page, where the decision panel is."""
    plan = decision.plan
    return reverse(
        "gates:gate",
        args=[plan.rfp.public_id, plan.vendor_organisation.slug, decision.gate],
    )


def _notify(decision: Decision, actor: User) -> None:
    plan = decision.plan
    context = {"decision": decision, "rfp": plan.rfp, "plan": plan}
    notify_users(
        users=user_list_in([plan.vendor_organisation_id], Role.VENDOR, Role.ADMIN),
        template="gate_decided",
        context=context,
        url=decision_url(decision),
    )
    if decision.status == S.PENDING:
        team = user_list_in(
            [plan.rfp.buyer_organisation_id], Role.BUYER, Role.EVALUATOR, Role.ADMIN
        ).exclude(pk=actor.pk)
        notify_users(
            users=team,
            template="gate_decision_pending",
            context=context,
            url=decision_url(decision),
        )


def _refuse_promotion(reasons: list[str]) -> None:
    if reasons:
        raise GatesConflict(" ".join(reasons), code="not_promotable")


@transaction.atomic
def decision_record(
    *, plan: GatePlan, gate: str, kind: str, rationale: str, actor: User
) -> Decision:
    """Record ``kind`` on ``gate`` (a promotion: pending its second sign-off)."""
    plan = GatePlan.objects.select_for_update().get(pk=plan.pk)
    _require_buyer_side(actor, plan, "decide on a gate")
    if kind not in K.values:
        raise GatesError("Choose promote, hold or roll back.", code="invalid_kind")
    rationale = _text(rationale, "rationale", required=True)
    if gate not in plan.gate_names:
        raise GatesError(f"The plan has no gate named {gate!r}.", code="no_such_gate")
    state = gate_state(plan, gate)
    if plan.status != GatePlan.Status.FROZEN or state.latest is None:
        raise GatesConflict(" ".join(state.why_not[:2]), code="not_decidable")
    if kind == K.PROMOTE:
        _refuse_promotion(state.why_not)
    if kind == K.ROLLBACK and state.dispute is not None:
        raise GatesConflict(disputed_reason(state.dispute), code="disputed")
    decision = Decision.objects.create(
        plan=plan,
        gate=gate,
        evaluation=state.latest,
        kind=kind,
        status=S.PENDING if kind == K.PROMOTE else S.RECORDED,
        rationale=rationale,
        decided_by=actor,
        decided_at=clock.now(),
    )
    decision.log_index = _log(decision, "decided", actor)
    decision.save(update_fields=["log_index"])
    audit_record(
        actor=actor, action="gate.decided", target=decision, data=_facts(decision)
    )
    _notify(decision, actor)
    return decision


def _refused(decision: Decision, to: str) -> InvalidTransition:
    refused = InvalidTransition(
        entity="decision", current=decision.status, requested=to
    )
    refused.message = (
        "Only a promotion waiting for its second sign-off can be signed off or "
        f"withdrawn; this decision is {decision.get_status_display().lower()}."
    )
    return refused


@transaction.atomic
def decision_transition(
    *,
    decision: Decision,
    to: str,
    actor: User,
    action: str,
    data: dict[str, Any] | None = None,
    fields: tuple[str, ...] = (),
    note: str = "",
) -> Decision:
    """Move ``decision`` (locked by the caller) to ``to`` through ``transition``
    (``DECISION_TRANSITIONS``), saving ``fields`` set with it; one audit row."""
    return transition(
        decision,
        to,
        actor=actor,
        table=DECISION_TRANSITIONS,
        entity="decision",
        action=action,
        fields={name: getattr(decision, name) for name in fields},
        data={**_facts(decision), "status": to, "note": note, **(data or {})},
        refused=lambda: _refused(decision, to),
    )


def _locked(decision: Decision) -> Decision:
    return Decision.objects.select_for_update().get(pk=decision.pk)


@transaction.atomic
def decision_second(*, decision: Decision, actor: User, note: str = "") -> Decision:
    """The second sign-off of a pending promotion: it is recorded."""
    decision = _locked(decision)
    _require_buyer_side(actor, decision.plan, "sign off a promotion")
    if decision.status != S.PENDING:
        raise _refused(decision, S.RECORDED)
    if actor.pk == decision.decided_by_id:
        raise GatesError(
            "You proposed this promotion: another member of your team signs it off.",
            code="same_person",
        )
    note = _text(note, "note", required=False)
    state = gate_state(decision.plan, decision.gate)
    _refuse_promotion([r for r in state.why_not if r != PENDING_MESSAGE])
    decision.second_by, decision.second_at = actor, clock.now()
    decision.second_note = note
    decision.log_index = _log(decision, "decision_seconded", actor, S.RECORDED)
    fields = ("second_by", "second_at", "second_note", "log_index")
    decision = decision_transition(
        decision=decision, to=S.RECORDED, actor=actor,
        action="gate.decision_seconded", fields=fields, note=note,
    )  # fmt: skip
    from gates.services.reports import report_request

    report_request(evaluation=decision.evaluation, actor=None, decision=decision)
    _notify(decision, actor)
    return decision


@transaction.atomic
def decision_withdraw(*, decision: Decision, actor: User) -> Decision:
    """Withdraw a pending promotion (any buyer-side member)."""
    decision = _locked(decision)
    _require_buyer_side(actor, decision.plan, "withdraw a promotion")
    decision.withdrawn_by, decision.withdrawn_at = actor, clock.now()
    return decision_transition(
        decision=decision,
        to=S.WITHDRAWN,
        actor=actor,
        action="gate.decision_withdrawn",
        fields=("withdrawn_by", "withdrawn_at"),
    )
