"""Release of escrow, second half: the two approvals, the execution that issues
the release certificate, and the logged download of the released deposits.

Approvals open when the notice period ends. Release needs one approval in
each role of ``APPROVAL_ROLES`` (buyer and auditor), so two different people
in two different roles: a second approval in a role that approved already,
or a second approval by the same person, is refused (the database's unique
constraints say so too). The requester may give the buyer approval: the
request and the approval are two acts at two times, the second after the
vendor had its say, and the auditor's approval is the independent one. On a
disputed release each approval must acknowledge the objection and answer it.

Execution (by the buyer organisation's buyers or admins, once approved) fixes
the certificate (``artifacts.services.release_certificate``), logs its SHA-256 in
the ``release.executed`` event and opens the released deposits to the buyer
organisation (``release_package_get``)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from accounts.exceptions import ApplicationError, InvalidTransition, StateConflict
from accounts.selectors import clock
from accounts.services.audit import audit_record
from artifacts.models import EscrowEvent, Release, ReleaseStep
from artifacts.permissions import approval_roles, can_manage
from artifacts.selectors.release import (
    APPROVAL_ROLES,
    release_approvals,
    release_deposits,
    release_steps,
)
from artifacts.services.escrow import escrow_event_log
from artifacts.services.release import (
    locked_release,
    release_notify,
    release_record_step,
    release_text,
    release_transition,
    require_release_step,
)
from artifacts.services.release_certificate import certificate_bytes, certificate_record

APPROVABLE = (Release.Status.PENDING, Release.Status.DISPUTED)


def _approval_role(release: Release, actor: User) -> str:
    """The role ``actor`` approves in, or why they may not."""
    approvals = release_approvals(release)
    if any(step.actor_id == actor.pk for step in approvals):
        raise StateConflict(
            "You approved this release already; the second approval must come "
            "from someone else.",
            code="already_approved",
        )
    roles = approval_roles(actor, release)
    if not roles:
        raise ApplicationError(
            "Only the buyer's buyers and admins and its auditors approve a release.",
            code="not_an_approver",
        )
    given = {step.role for step in approvals}
    free = [role for role in roles if role not in given]
    if not free:
        raise StateConflict(
            f"The {roles[0]} approval was given already; the second approval must "
            "come from a different role.",
            code="role_already_approved",
        )
    return free[0]


def _check_approvable(release: Release) -> None:
    if release.status not in APPROVABLE:
        raise InvalidTransition(
            entity="release", current=release.status, requested="approved"
        )
    if clock.now() < release.notice_ends_at:
        raise StateConflict(
            "Approvals open when the vendor's notice period ends, on "
            f"{release.notice_ends_at:%Y-%m-%d %H:%M} UTC.",
            code="notice_running",
        )


@transaction.atomic
def release_approve(
    *,
    release: Release,
    actor: User,
    note: str = "",
    acknowledge_objection: bool = False,
) -> Release:
    """Approve in the actor's role; the last missing role approves the release."""
    release = locked_release(release)
    _check_approvable(release)
    disputed = release.status == Release.Status.DISPUTED
    note = release_text(
        note, required=disputed, what="answer to the vendor's objection"
    )
    if disputed and not acknowledge_objection:
        raise ApplicationError(
            "The vendor objected: acknowledge the objection to approve.",
            code="objection_not_acknowledged",
        )
    role = _approval_role(release, actor)
    given = {step.role for step in release_approvals(release)} | {role}
    complete = given >= set(APPROVAL_ROLES)
    step: dict[str, Any] = {
        "action": ReleaseStep.Action.APPROVED,
        "actor": actor,
        "role": role,
        "text": note,
        "acknowledges_objection": disputed,
        "data": {"approvals": sorted(given)},
    }
    if complete:  # the last approval moves the release: one step, one row
        release_transition(release=release, to=Release.Status.APPROVED, **step)
    else:
        release_record_step(release, **step)
    if complete:
        release_notify(release, template="approved", vendor=False)
    return release


def _check_executable(release: Release) -> None:
    if release.status in APPROVABLE:
        given = {step.role for step in release_approvals(release)}
        missing = [role for role in APPROVAL_ROLES if role not in given]
        raise StateConflict(
            "A release needs an approval from each of "
            f"{' and '.join(APPROVAL_ROLES)}; missing: {', '.join(missing)}.",
            code="approvals_missing",
        )


@transaction.atomic
def release_execute(*, release: Release, actor: User) -> Release:
    """Release the deposits to the buyer organisation and issue the certificate."""
    require_release_step(can_manage(actor, release), "execute")
    release = locked_release(release)
    _check_executable(release)
    now = clock.now()
    record = certificate_record(
        release,
        list(release_steps(release)),
        list(release_deposits(release)),
        executed_by=actor.get_username(),
        executed_at=now,
    )
    release.certificate, release.certificate_sha256 = certificate_bytes(record)
    release.executed_at = now
    release_transition(
        release=release,
        to=Release.Status.RELEASED,
        actor=actor,
        action=ReleaseStep.Action.EXECUTED,
        role=ReleaseStep.Role.BUYER,
        fields=("certificate", "certificate_sha256", "executed_at"),
        data={
            "certificate_sha256": release.certificate_sha256,
            "blobs": record["totals"]["blobs"],
            "bytes": record["totals"]["bytes"],
        },
    )
    release_notify(release, template="executed", vendor=True)
    return release


@transaction.atomic
def release_download_record(*, release: Release, actor: User) -> EscrowEvent:
    """Log and audit a download of the released deposits (the caller checked
    that ``actor`` may have them)."""
    if release.status != Release.Status.RELEASED:
        raise StateConflict("Nothing was released yet.", code="not_released")
    event = escrow_event_log(
        action=EscrowEvent.Action.RELEASE_DOWNLOADED,
        deposits=list(release_deposits(release)),
        actor=actor,
        data={
            "release": str(release.public_id),
            "certificate_sha256": release.certificate_sha256,
        },
    )
    audit_record(
        actor=actor,
        action="release.downloaded",
        target=release,
        organisation=release.rfp.buyer_organisation,
        data={"rfp": release.rfp.reference, "event_index": event.log_index},
    )
    return event
