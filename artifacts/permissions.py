"""Who may do what in artifacts: pure predicates ``can_<verb>(user, obj)`` over
memberships (every ``can_*`` of the app lives here), and the steps of an escrow
release a user may take now, read from ``RELEASE_TRANSITIONS``.

Release steps:

- request: a buyer or admin of the RFP's buyer organisation;
- object: a vendor or admin of the vendor organisation, within the notice;
- approve: in the role ``buyer`` (a buyer or admin of the buyer organisation;
  the requester may give it) or ``auditor`` (an auditor the buyer engaged),
  after the notice;
- reject: an auditor the buyer engaged (its ruling against the release);
- withdraw and execute: a buyer or admin of the buyer organisation.

After execution the buyer organisation (buyers, evaluators, admins) may
download the released deposits: this access follows from the release alone,
whatever the RFP's sealing says."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Final

from django.contrib.auth.models import AnonymousUser, User

from accounts.models import Organisation, Role
from accounts.selectors.users import (
    audit_trail_organisation_ids,
    buyer_organisation_ids_served_by,
    organisation_ids_for,
)
from artifacts.models import Deposit, Release, ReleaseStep
from artifacts.models.release import RELEASE_TRANSITIONS
from artifacts.selectors.escrow import deposit_list_visible_to
from procurement.models import Rfp

AnyUser = User | AnonymousUser
BUYER_SIDE: Final = (Role.BUYER, Role.EVALUATOR, Role.ADMIN)
MANAGERS: Final = (Role.BUYER, Role.ADMIN)
VENDOR_SIDE: Final = (Role.VENDOR, Role.ADMIN)


# --- signing keys --------------------------------------------------------------------


def can_manage_keys(user: AnyUser, organisation: Organisation) -> bool:
    """Vendors and admins of a vendor organisation manage its signing keys;
    buyers and admins of a buyer organisation manage the keys its baseline
    bundles are signed with."""
    if organisation.kind == Organisation.Kind.VENDOR:
        roles = VENDOR_SIDE
    elif organisation.kind == Organisation.Kind.BUYER:
        roles = MANAGERS
    else:
        return False
    return organisation.id in organisation_ids_for(user, *roles)


# --- escrow and fixity ---------------------------------------------------------------


def can_change_hold(user: AnyUser, deposit: Deposit) -> bool:
    """Legal hold and retention: the buyer organisation's buyers and admins and
    the auditors it engaged, on deposits they see (never the vendor)."""
    buyer_id = deposit.rfp.buyer_organisation_id
    managers = organisation_ids_for(user, Role.BUYER, Role.ADMIN)
    auditors = buyer_organisation_ids_served_by(user, Role.AUDITOR)
    if buyer_id not in managers | auditors:
        return False
    return deposit_list_visible_to(user).filter(pk=deposit.pk).exists()


def can_see_all_fixity(user: AnyUser) -> bool:
    """The installation's operators (the permission to view fixity runs, which
    the admin asks too; superusers hold it) see whole runs: every finding and
    the installation-wide counts."""
    return user.is_active and user.has_perm("artifacts.view_fixityrun")


def can_see_fixity(user: AnyUser) -> bool:
    """A buyer organisation's buyers and admins and the auditors it engaged see
    the runs in their scope (``artifacts.selectors.fixity``); operators, all."""
    return bool(audit_trail_organisation_ids(user)) or can_see_all_fixity(user)


# --- escrow releases: who ------------------------------------------------------------


def _manages_buyer(user: AnyUser, rfp: Rfp) -> bool:
    return rfp.buyer_organisation_id in organisation_ids_for(user, *MANAGERS)


def _audits_buyer(user: AnyUser, rfp: Rfp) -> bool:
    served = buyer_organisation_ids_served_by(user, Role.AUDITOR)
    return rfp.buyer_organisation_id in served


def can_request_release(user: AnyUser, rfp: Rfp) -> bool:
    return user.is_authenticated and _manages_buyer(user, rfp)


def can_object(user: AnyUser, release: Release) -> bool:
    return release.organisation_id in organisation_ids_for(user, *VENDOR_SIDE)


def approval_roles(user: AnyUser, release: Release) -> list[str]:
    """The roles in which ``user`` may approve ``release``."""
    roles: list[str] = []
    if _manages_buyer(user, release.rfp):
        roles.append(ReleaseStep.Role.BUYER)
    if _audits_buyer(user, release.rfp):
        roles.append(ReleaseStep.Role.AUDITOR)
    return roles


def can_approve(user: AnyUser, release: Release) -> bool:
    return bool(approval_roles(user, release))


def can_reject(user: AnyUser, release: Release) -> bool:
    return _audits_buyer(user, release.rfp)


def can_manage(user: AnyUser, release: Release) -> bool:
    """Withdraw or execute: the buyer organisation's buyers and admins."""
    return _manages_buyer(user, release.rfp)


def can_download_released(user: AnyUser, release: Release) -> bool:
    buyer_side = organisation_ids_for(user, *BUYER_SIDE)
    return release.rfp.buyer_organisation_id in buyer_side


# --- escrow releases: which step, when -----------------------------------------------

RS = Release.Status
# The status each step moves a release towards (``RELEASE_TRANSITIONS``): a step
# is open while that move is allowed from the release's status. An approval moves
# it to approved once both roles have approved.
RELEASE_STEP_TARGETS: Final[Mapping[str, str]] = {
    "object": RS.DISPUTED,
    "approve": RS.APPROVED,
    "reject": RS.REJECTED,
    "withdraw": RS.WITHDRAWN,
    "execute": RS.RELEASED,
}
# Who may take each step (the role alone: the services refuse a step the
# release's status or the notice period does not allow, with their own code).
RELEASE_STEP_ALLOWED: Final[Mapping[str, Callable[[AnyUser, Release], bool]]] = {
    "object": can_object,
    "approve": can_approve,
    "reject": can_reject,
    "withdraw": can_manage,
    "execute": can_manage,
}


def release_step_open(release: Release, step: str, now: datetime) -> bool:
    """Whether anyone may take ``step`` on ``release`` at ``now``: the move
    ``RELEASE_TRANSITIONS`` allows from its status, objections only during the
    notice period and approvals only after it."""
    if RELEASE_STEP_TARGETS[step] not in RELEASE_TRANSITIONS[release.status]:
        return False
    notice = now < release.notice_ends_at
    if step == "object":
        return notice
    return not notice if step == "approve" else True


def _approval_left(user: AnyUser, release: Release) -> bool:
    """``user`` has a role in which no approval was given yet."""
    given = set(
        release.steps.filter(action=ReleaseStep.Action.APPROVED).values_list(
            "role", flat=True
        )
    )
    return any(role not in given for role in approval_roles(user, release))


def release_steps_for(
    user: AnyUser, release: Release, now: datetime
) -> dict[str, bool]:
    """Each step (``RELEASE_STEP_TARGETS``) and ``download``: whether ``user``
    may take it on ``release`` now (what the release page offers)."""
    steps = {
        step: release_step_open(release, step, now) and allowed(user, release)
        for step, allowed in RELEASE_STEP_ALLOWED.items()
    }
    steps["approve"] = steps["approve"] and _approval_left(user, release)
    steps["download"] = release.status == RS.RELEASED and can_download_released(
        user, release
    )
    return steps
