"""Disputes of a gate verdict: opened by the judged vendor, upheld or rejected
by the buyer side, withdrawn by the vendor.

- ``dispute_open``: a member (vendor or admin) of the judged vendor contests an
  evaluation other than a PASS within the RFP's ``dispute_window_days`` of it,
  with a reason (at most ``REASON_MAX`` characters) and, for a re-run of
  something else, a revised accepted bundle of its own on the RFP. One open
  dispute per evaluation. The buyer's team is told.
- ``dispute_uphold``: a buyer-side member agrees; a re-test at the buyer's cost
  is scheduled (``obligation_for_dispute``: the gate's live obligation taken
  over, else a new one) and named on the dispute. The vendor is told.
- ``dispute_reject``: a buyer-side member refuses it, in writing. The vendor is
  told.
- ``dispute_withdraw``: the vendor takes it back. The buyer's team is told.

While a dispute is open, the gate is neither promoted nor rolled back
(``gates.selectors.decisions``) and its re-test obligation is no breach
(``gates.selectors.breaches``; the beat task does not expire it).

Each step is one transaction with one audit row (``dispute.opened``,
``dispute.upheld``, ``dispute.rejected``, ``dispute.withdrawn``) and one
transparency-log entry (``reprogate.gate-dispute/v1``): ``log_index`` is the
entry of the dispute's latest step."""

from __future__ import annotations

import hashlib
from typing import Any, Final

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.urls import reverse

from accounts.exceptions import InvalidTransition
from accounts.models import Role
from accounts.selectors import clock
from accounts.selectors.users import organisation_ids_for, user_list_in
from accounts.services.audit import audit_record
from accounts.services.notifications import notify_users
from accounts.services.transitions import transition
from artifacts.lib.canonical import canonical_json
from artifacts.lib.evidence.layout import format_time
from artifacts.models import Bundle
from artifacts.services.transparency import checkpoint_publish_on_commit, log_append
from gates.exceptions import GatesConflict, GatesError
from gates.models import DISPUTE_TRANSITIONS, Dispute, Evaluation
from gates.models.disputes import REASON_MAX
from gates.selectors.disputes import dispute_window_ends
from gates.services.obligations import obligation_for_dispute
from procurement.permissions import is_buyer_side

LOG_SCHEMA: Final = "reprogate.gate-dispute/v1"
DS = Dispute.Status


def dispute_url(dispute: Dispute) -> str:
    return reverse("gates:dispute", args=[dispute.public_id])


def _text(text: str, what: str, *, required: bool = True) -> str:
    text = (text or "").strip()
    if required and not text:
        raise GatesError(f"Write the {what}.", code="reason_required")
    if len(text) > REASON_MAX:
        raise GatesError(
            f"The {what} is at most {REASON_MAX} characters.", code="text_too_long"
        )
    return text


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _log(dispute: Dispute, step: str, actor: User) -> int:
    """Append the step's leaf (the dispute as the step leaves it) to the
    transparency log; its index."""
    evaluation = dispute.evaluation
    record: dict[str, Any] = {
        "schema": LOG_SCHEMA,
        "action": f"dispute.{step}",
        "dispute": str(dispute.public_id),
        "rfp": dispute.rfp.reference,
        "vendor": dispute.vendor_organisation.slug,
        "gate": dispute.gate,
        "status": dispute.status,
        "evaluation": str(evaluation.public_id),
        "evaluation_sha256": evaluation.evaluation_sha256,
        "evaluation_leaf_index": getattr(evaluation.deposit, "log_index", None),
        "verdict": evaluation.verdict,
        "reason_sha256": _digest(dispute.reason),
        "opened_by": dispute.opened_by.get_username(),
        "opened_at": format_time(dispute.opened_at),
        "actor": actor.get_username(),
        "time": format_time(clock.now()),
    }
    if dispute.bundle is not None:
        record["bundle_sha256"] = dispute.bundle.sha256
    if dispute.decision_reason:
        record["decision_reason_sha256"] = _digest(dispute.decision_reason)
    if dispute.retest is not None:
        record["retest"] = str(dispute.retest.public_id)
        record["retest_cost_bearer"] = dispute.retest.cost_bearer
    if dispute.log_index is not None:
        record["previous_log_index"] = dispute.log_index
    index = log_append(canonical_json(record)).index
    checkpoint_publish_on_commit()
    return index


def _facts(dispute: Dispute) -> dict[str, Any]:
    return {
        "rfp": dispute.rfp.reference,
        "vendor": dispute.vendor_organisation.slug,
        "gate": dispute.gate,
        "dispute": str(dispute.public_id),
        "evaluation": str(dispute.evaluation.public_id),
        "verdict": dispute.evaluation.verdict,
        "status": dispute.status,
        "reason": dispute.reason,
        "bundle": str(dispute.bundle.public_id) if dispute.bundle else None,
        "decision_reason": dispute.decision_reason,
        "retest": str(dispute.retest.public_id) if dispute.retest else None,
        "log_index": dispute.log_index,
    }


def _notify(dispute: Dispute, template: str, *, to_vendor: bool) -> None:
    if to_vendor:
        users = user_list_in([dispute.vendor_organisation_id], Role.VENDOR, Role.ADMIN)
    else:
        buyer = dispute.rfp.buyer_organisation_id
        users = user_list_in([buyer], Role.BUYER, Role.EVALUATOR, Role.ADMIN)
    notify_users(
        users=users,
        template=template,
        context={"dispute": dispute, "rfp": dispute.rfp},
        url=dispute_url(dispute),
    )


def _check_opening(evaluation: Evaluation, bundle: Bundle | None, actor: User) -> None:
    own = organisation_ids_for(actor, Role.VENDOR, Role.ADMIN)
    if evaluation.vendor_organisation_id not in own:
        raise GatesError(
            "Only the judged vendor's members contest its verdict.", code="not_vendor"
        )
    if evaluation.verdict == "PASS":
        raise GatesError("A PASS has nothing to contest.", code="nothing_to_contest")
    ends = dispute_window_ends(evaluation)
    if clock.now() > ends:
        raise GatesConflict(
            f"The dispute window of this verdict closed on {format_time(ends)} "
            f"({evaluation.rfp.dispute_window_days} days after the evaluation).",
            code="dispute_window_closed",
        )
    if bundle is None:
        return
    if bundle.rfp_id != evaluation.rfp_id:
        raise GatesError("That bundle was submitted to another RFP.", code="bundle")
    if bundle.organisation_id != evaluation.vendor_organisation_id:
        raise GatesError("That bundle is another organisation's.", code="bundle")
    if bundle.status != Bundle.Status.ACCEPTED:
        raise GatesError("Only an accepted bundle is re-run.", code="bundle")


@transaction.atomic
def dispute_open(
    *, evaluation: Evaluation, reason: str, actor: User, bundle: Bundle | None = None
) -> Dispute:
    """The judged vendor contests ``evaluation`` (see the module docstring)."""
    evaluation = Evaluation.objects.select_for_update().get(pk=evaluation.pk)
    reason = _text(reason, "reason for the dispute")
    _check_opening(evaluation, bundle, actor)
    if Dispute.objects.filter(evaluation=evaluation, status=DS.OPEN).exists():
        raise GatesConflict(
            "A dispute of this verdict is open already.", code="dispute_open"
        )
    try:
        with transaction.atomic():
            dispute = Dispute.objects.create(
                evaluation=evaluation,
                rfp=evaluation.rfp,
                plan=evaluation.plan,
                gate=evaluation.gate,
                vendor_organisation=evaluation.vendor_organisation,
                reason=reason,
                bundle=bundle,
                opened_by=actor,
                opened_at=clock.now(),
            )
    except IntegrityError as exc:  # a concurrent dispute won (PostgreSQL)
        raise GatesConflict(
            "A dispute of this verdict is open already.", code="dispute_open"
        ) from exc
    dispute.log_index = _log(dispute, "opened", actor)
    dispute.save(update_fields=["log_index", "updated_at"])
    audit_record(
        actor=actor, action="dispute.opened", target=dispute, data=_facts(dispute)
    )
    _notify(dispute, "gate_dispute_opened", to_vendor=False)
    return dispute


def _refused(dispute: Dispute, to: str) -> InvalidTransition:
    refused = InvalidTransition(entity="dispute", current=dispute.status, requested=to)
    refused.message = (
        f"Only an open dispute is upheld, rejected or withdrawn; this one is "
        f"{dispute.get_status_display().lower()}."
    )
    return refused


@transaction.atomic
def dispute_transition(
    *, dispute: Dispute, to: str, actor: User, fields: tuple[str, ...] = ()
) -> Dispute:
    """Move ``dispute`` to ``to`` through ``transition`` (``DISPUTE_TRANSITIONS``),
    stamping who decided and when with ``fields`` the caller set; then the
    step's transparency-log entry and its one audit row (``dispute.<to>``)."""
    before = dispute.status
    dispute.decided_by, dispute.decided_at = actor, clock.now()
    names = ("decided_by", "decided_at", *fields)
    dispute = transition(
        dispute,
        to,
        actor=actor,
        table=DISPUTE_TRANSITIONS,
        entity="dispute",
        action=None,  # the row is written below, with the log entry's index
        fields={name: getattr(dispute, name) for name in names},
        refused=lambda: _refused(dispute, to),
    )
    dispute.log_index = _log(dispute, to, actor)
    dispute.save(update_fields=["log_index", "updated_at"])
    audit_record(
        actor=actor,
        action=f"dispute.{to}",
        target=dispute,
        data={"from": before, "to": to, **_facts(dispute)},
    )
    return dispute


def _locked(dispute: Dispute) -> Dispute:
    return (
        Dispute.objects.select_for_update()
        .select_related("rfp", "evaluation", "vendor_organisation")
        .get(pk=dispute.pk)
    )


def _require_open(dispute: Dispute, to: str) -> None:
    if dispute.status != DS.OPEN:
        raise _refused(dispute, to)


def _require_buyer_side(dispute: Dispute, actor: User, what: str) -> None:
    if not is_buyer_side(actor, dispute.rfp):
        raise GatesError(
            f"Only members of {dispute.rfp.buyer_organisation.name} {what}.",
            code="not_buyer_side",
        )


@transaction.atomic
def dispute_uphold(*, dispute: Dispute, actor: User, reason: str = "") -> Dispute:
    """The buyer side agrees: a re-test at the buyer's cost is scheduled."""
    dispute = _locked(dispute)
    _require_buyer_side(dispute, actor, "uphold a dispute")
    _require_open(dispute, DS.UPHELD)
    dispute.decision_reason = _text(reason, "answer", required=False)
    dispute.retest = obligation_for_dispute(dispute=dispute, actor=actor)
    dispute = dispute_transition(
        dispute=dispute, to=DS.UPHELD, actor=actor,
        fields=("decision_reason", "retest"),
    )  # fmt: skip
    _notify(dispute, "gate_dispute_decided", to_vendor=True)
    return dispute


@transaction.atomic
def dispute_reject(*, dispute: Dispute, actor: User, reason: str) -> Dispute:
    """The buyer side refuses the dispute, with its written reason."""
    dispute = _locked(dispute)
    _require_buyer_side(dispute, actor, "reject a dispute")
    _require_open(dispute, DS.REJECTED)
    dispute.decision_reason = _text(reason, "reason for the rejection")
    dispute = dispute_transition(
        dispute=dispute, to=DS.REJECTED, actor=actor, fields=("decision_reason",)
    )
    _notify(dispute, "gate_dispute_decided", to_vendor=True)
    return dispute


@transaction.atomic
def dispute_withdraw(*, dispute: Dispute, actor: User) -> Dispute:
    """The vendor takes its dispute back."""
    dispute = _locked(dispute)
    own = organisation_ids_for(actor, Role.VENDOR, Role.ADMIN)
    if dispute.vendor_organisation_id not in own:
        raise GatesError(
            "Only the vendor's members withdraw its dispute.", code="not_vendor"
        )
    _require_open(dispute, DS.WITHDRAWN)
    dispute = dispute_transition(dispute=dispute, to=DS.WITHDRAWN, actor=actor)
    _notify(dispute, "gate_dispute_withdrawn", to_vendor=False)
    return dispute
