"""Release of escrow to the buyer: request, objection, rejection, withdrawal.
Approval, execution and the download of released deposits are in
``artifacts.services.release_execution``.

Every step is one service call: one transaction holding the status change, a
``ReleaseStep``, its ``EscrowEvent`` (a log entry naming the release's
deposits) and one audit row in the buyer organisation's trail.

Rules (the interfaces check who may call; services check the rest again):

- a release is requested only on an **awarded** RFP, for the **awarded
  vendor's** deposits there: the contract terms, and so its escrow clause,
  exist and are frozen only from the award, and bind only the winner. The
  request cites a condition (support lapsed, breach, insolvency, or another
  with a mandatory statement) and quotes the frozen escrow clause (text and
  SHA-256); on the breach condition it may cite one of the vendor's recorded
  breaches (``artifacts.selectors.breaches``: a re-test obligation failed or
  expired), which the statement then quotes and the log entry names; an RFP
  whose contract has no escrow clause cannot be released;
- the deposits are fixed at the request (later deposits need a new request);
- the vendor is notified and may object, once, with a reason, until the
  notice period (``ESCROW_RELEASE_NOTICE_DAYS``) ends: the release becomes
  *disputed*. A disputed release is not stopped: after the notice period the
  approvals may still be given, but each must acknowledge the objection with
  a written answer; the independent auditor's approval is its ruling against
  the objection, its rejection (``release_reject``) a ruling for it."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Any, Final

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.urls import reverse

from accounts.exceptions import (
    ApplicationError,
    Problem,
    StateConflict,
)
from accounts.models import Organisation, Role
from accounts.selectors import clock
from accounts.selectors.users import user_list_in
from accounts.services.audit import audit_record
from accounts.services.notifications import notify_users
from accounts.services.transitions import transition
from artifacts.lib.evidence.layout import format_time
from artifacts.models import RELEASE_TRANSITIONS, Deposit, Release, ReleaseStep
from artifacts.permissions import can_manage, can_object, can_reject
from artifacts.selectors.breaches import CitedBreach, breach_get
from artifacts.selectors.release import (
    release_deposits,
    release_notice_days,
)
from artifacts.services.escrow import escrow_event_log
from procurement.models import Award, Rfp

MAX_TEXT: Final = 4000
MIN_REASON: Final = 10


def release_text(text: str, *, required: bool, what: str) -> str:
    text = (text or "").strip()
    if required and len(text) < MIN_REASON:
        raise ApplicationError(
            f"Write the {what} (at least {MIN_REASON} characters).",
            code="text_required",
        )
    if len(text) > MAX_TEXT:
        raise ApplicationError(
            f"The {what} is at most {MAX_TEXT} characters.", code="text_too_long"
        )
    return text


def release_transition(
    *,
    release: Release,
    to: str,
    actor: User,
    action: str,
    role: str,
    text: str = "",
    acknowledges_objection: bool = False,
    data: dict[str, Any] | None = None,
    fields: tuple[str, ...] = (),
) -> Release:
    """The one place a release's status changes: move ``release`` (locked by the
    caller) to ``to`` through ``transition`` (``RELEASE_TRANSITIONS``), saving
    ``fields`` the caller set with it, and record the step ``action`` it is
    (``release_record_step``: its log entry and the action's one audit row,
    which names the new status)."""
    transition(
        release,
        to,
        actor=actor,
        table=RELEASE_TRANSITIONS,
        entity="release",
        action=None,  # the step's row, after its log entry
        fields={name: getattr(release, name) for name in fields},
    )
    release_record_step(
        release,
        action=action,
        actor=actor,
        role=role,
        text=text,
        acknowledges_objection=acknowledges_objection,
        data=data,
    )
    return release


def release_record_step(
    release: Release,
    *,
    action: str,
    actor: User,
    role: str,
    text: str = "",
    acknowledges_objection: bool = False,
    data: dict[str, Any] | None = None,
) -> ReleaseStep:
    """Log the step (escrow event naming the deposits), keep it, audit it."""
    now = clock.now()
    facts = {
        "release": str(release.public_id),
        "rfp": release.rfp.reference,
        "vendor": release.organisation.slug,
        "status": release.status,
        "role": role,
        "text": text,
        **(data or {}),
    }
    event = escrow_event_log(
        action=f"release.{action}",
        deposits=list(release_deposits(release)),
        actor=actor,
        data=facts,
    )
    step = ReleaseStep.objects.create(
        release=release,
        action=action,
        actor=actor,
        role=role,
        text=text,
        acknowledges_objection=acknowledges_objection,
        occurred_at=now,
        event=event,
    )
    audit_record(
        actor=actor,
        action=f"release.{action}",
        target=release,
        organisation=release.rfp.buyer_organisation,
        data={**facts, "event_index": event.log_index},
    )
    return step


def release_notify(release: Release, *, template: str, vendor: bool, **extra: Any):
    """Tell the buyer's managers and auditors, and the vendor if ``vendor``."""
    buyer = release.rfp.buyer_organisation
    auditors = buyer.engages.filter(kind=Organisation.Kind.AUDIT)
    users = list(user_list_in([buyer.pk], Role.BUYER, Role.ADMIN))
    users += list(user_list_in(auditors.values_list("pk", flat=True), Role.AUDITOR))
    if vendor:
        users += list(user_list_in([release.organisation_id], Role.VENDOR, Role.ADMIN))
    notify_users(
        users=users,
        template=f"escrow_release_{template}",
        context={"release": release, "rfp": release.rfp, **extra},
        url=reverse("artifacts:release_detail", args=[release.public_id]),
    )


def _contract(rfp: Rfp) -> Award:
    if rfp.status != Rfp.Status.AWARDED:
        raise StateConflict(
            "Escrow is released only under a contract: this RFP is not awarded.",
            code="rfp_not_awarded",
        )
    award = Award.objects.select_related("bid__vendor_organisation").get(rfp=rfp)
    if not rfp.escrow_clause.strip():
        raise ApplicationError(
            "The contract terms have no escrow clause to cite.", code="no_escrow_clause"
        )
    return award


def _cited_breach(
    rfp: Rfp, vendor: Organisation, condition: str, breach: str
) -> CitedBreach | None:
    """The breach cited (on the ``breach`` condition only), one of the vendor's."""
    if not breach:
        return None
    if condition != Release.Condition.BREACH:
        raise _breach_error(
            "A recorded breach is cited on the breach condition.", "breach_cited"
        )
    cited = breach_get(rfp, vendor.pk, breach)
    if cited is None:
        raise _breach_error(
            f"That is not a breach of {vendor.name}'s on {rfp.reference}.",
            "unknown_breach",
        )
    return cited


def _breach_error(message: str, code: str) -> ApplicationError:
    """Refused for the ``breach`` field (the API's problem path)."""
    return ApplicationError(
        message, code=code, problems=[Problem(code, message, path="breach")]
    )


def _breach_facts(cited: CitedBreach) -> dict[str, str]:
    return {
        "id": cited.id,
        "kind": cited.kind,
        "breached_at": format_time(cited.breached_at),
    }


@transaction.atomic
def release_request(
    *,
    rfp: Rfp,
    condition: str,
    statement: str,
    actor: User,
    breach: str = "",
) -> Release:
    """Ask to release the awarded vendor's deposits on ``rfp`` (``breach``: the
    id of one of the vendor's recorded breaches the request cites)."""
    rfp = Rfp.objects.select_for_update().get(pk=rfp.pk)
    award = _contract(rfp)
    if condition not in Release.Condition.values:
        raise ApplicationError("Choose a release condition.", code="invalid_condition")
    other = condition == Release.Condition.OTHER
    statement = release_text(statement, required=other, what="condition")
    vendor = award.bid.vendor_organisation
    cited = _cited_breach(rfp, vendor, condition, breach)
    if cited is not None:
        statement = release_text(
            f"{cited.statement}\n\n{statement}", required=False, what="statement"
        )
    deposits = list(Deposit.objects.filter(rfp=rfp, organisation=vendor))
    if not deposits:
        raise ApplicationError(
            f"{vendor.name} has deposited nothing on {rfp.reference}.",
            code="nothing_deposited",
        )
    open_releases = Release.objects.filter(rfp=rfp, organisation=vendor)
    if open_releases.filter(status__in=Release.OPEN).exists():
        raise StateConflict(
            "A release of this escrow is in progress already.", code="release_open"
        )
    now = clock.now()
    release = Release.objects.create(
        rfp=rfp,
        award=award,
        organisation=vendor,
        condition=condition,
        statement=statement,
        contract_clause=rfp.escrow_clause,
        contract_clause_sha256=hashlib.sha256(rfp.escrow_clause.encode()).hexdigest(),
        requested_by=actor,
        requested_at=now,
        notice_ends_at=now + timedelta(days=release_notice_days()),
    )
    release.deposits.set(deposits)
    release_record_step(
        release,
        action=ReleaseStep.Action.REQUESTED,
        actor=actor,
        role=ReleaseStep.Role.BUYER,
        text=statement,
        data={
            "condition": condition,
            "notice_ends_at": format_time(release.notice_ends_at),
            "contract_clause_sha256": release.contract_clause_sha256,
            **({"breach": _breach_facts(cited)} if cited is not None else {}),
        },
    )
    release_notify(release, template="requested", vendor=True)
    return release


def locked_release(release: Release) -> Release:
    return Release.objects.select_for_update().get(pk=release.pk)


def require_release_step(allowed: bool, step: str) -> None:
    """The services check the actor's role themselves (the views and the API
    check it first too, to show only the steps a user may take)."""
    if not allowed:
        raise PermissionDenied(f"You may not {step} this release.")


@transaction.atomic
def release_object(*, release: Release, reason: str, actor: User) -> Release:
    """The vendor objects, within the notice period: the release is disputed."""
    require_release_step(can_object(actor, release), "object to")
    release = locked_release(release)
    reason = release_text(reason, required=True, what="objection")
    if clock.now() >= release.notice_ends_at:
        raise StateConflict(
            f"The notice period ended on {release.notice_ends_at:%Y-%m-%d %H:%M} UTC.",
            code="notice_over",
        )
    release_transition(
        release=release,
        to=Release.Status.DISPUTED,
        actor=actor,
        action=ReleaseStep.Action.OBJECTED,
        role=ReleaseStep.Role.VENDOR,
        text=reason,
    )
    release_notify(release, template="objected", vendor=False, reason=reason)
    return release


@transaction.atomic
def release_reject(*, release: Release, reason: str, actor: User) -> Release:
    """The auditor rules against the release: it ends, nothing is released."""
    require_release_step(can_reject(actor, release), "reject")
    release = locked_release(release)
    reason = release_text(reason, required=True, what="ruling")
    release_transition(
        release=release,
        to=Release.Status.REJECTED,
        actor=actor,
        action=ReleaseStep.Action.REJECTED,
        role=ReleaseStep.Role.AUDITOR,
        text=reason,
    )
    release_notify(release, template="closed", vendor=True, reason=reason)
    return release


@transaction.atomic
def release_withdraw(*, release: Release, reason: str, actor: User) -> Release:
    """The buyer withdraws the request (at any time before execution)."""
    require_release_step(can_manage(actor, release), "withdraw")
    release = locked_release(release)
    reason = release_text(reason, required=True, what="reason")
    release_transition(
        release=release,
        to=Release.Status.WITHDRAWN,
        actor=actor,
        action=ReleaseStep.Action.WITHDRAWN,
        role=ReleaseStep.Role.BUYER,
        text=reason,
    )
    release_notify(release, template="closed", vendor=True, reason=reason)
    return release
