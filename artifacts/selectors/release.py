"""Who sees escrow releases and who may take which step; reads of the release
pages and dashboards.

A release is seen by the buyer organisation's buyers, evaluators and admins,
by the auditors it engaged, and by the vendor organisation whose escrow it is
(its vendors and admins, who are told and may object); nobody else (404: labs,
other vendors, other buyers).

Steps:

- request: a buyer or admin of the RFP's buyer organisation;
- object: a vendor or admin of the vendor organisation, within the notice;
- approve: in the role ``buyer`` (a buyer or admin of the buyer organisation;
  the requester may give it) or ``auditor`` (an auditor the buyer engaged);
- reject: an auditor the buyer engaged (its ruling against the release);
- withdraw and execute: a buyer or admin of the buyer organisation.

After execution the buyer organisation (buyers, evaluators, admins) may
download the released deposits (``release_package_get``): this access follows
from the release alone, whatever the RFP's sealing says."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Final

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q, QuerySet

from accounts import clock
from accounts.models import Role
from accounts.selectors import buyer_organisation_ids_served_by, organisation_ids_for
from artifacts.conf import escrow_release_notice_days
from artifacts.models import Deposit, DepositBlob, Release, ReleaseStep
from procurement.models import Award, Rfp

AnyUser = AbstractBaseUser | AnonymousUser
BUYER_SIDE: Final = (Role.BUYER, Role.EVALUATOR, Role.ADMIN)
MANAGERS: Final = (Role.BUYER, Role.ADMIN)
VENDOR_SIDE: Final = (Role.VENDOR, Role.ADMIN)
# Release needs one approval in each of these roles (two different people).
APPROVAL_ROLES: Final = (ReleaseStep.Role.BUYER, ReleaseStep.Role.AUDITOR)


def release_notice_days() -> int:
    """Days the vendor may object to a release request (the setting)."""
    return escrow_release_notice_days()


def _releases() -> QuerySet[Release]:
    return Release.objects.select_related(
        "rfp", "rfp__buyer_organisation", "organisation", "requested_by"
    )


def release_list_visible_to(user: AnyUser) -> QuerySet[Release]:
    if not user.is_authenticated:
        return Release.objects.none()
    buyer_side = organisation_ids_for(user, *BUYER_SIDE) | (
        buyer_organisation_ids_served_by(user, Role.AUDITOR)
    )
    vendor_side = organisation_ids_for(user, *VENDOR_SIDE)
    return _releases().filter(
        Q(rfp__buyer_organisation_id__in=buyer_side)
        | Q(organisation_id__in=vendor_side)
    )


def release_get_visible(user: AnyUser, public_id: uuid.UUID) -> Release | None:
    return release_list_visible_to(user).filter(public_id=public_id).first()


def release_steps(release: Release) -> QuerySet[ReleaseStep]:
    return release.steps.select_related("actor", "event").order_by("occurred_at", "id")


def release_deposits(release: Release) -> QuerySet[Deposit]:
    return release.deposits.select_related("organisation", "rfp", "bundle").order_by(
        "log_index"
    )


def release_items(release: Release) -> QuerySet[DepositBlob]:
    """Every blob the release names, deposit by deposit in the leaves' order."""
    return (
        DepositBlob.objects.filter(deposit__in=release.deposits.all())
        .select_related("blob", "deposit")
        .order_by("deposit__log_index", "position")
    )


def release_approvals(release: Release) -> list[ReleaseStep]:
    return list(release_steps(release).filter(action=ReleaseStep.Action.APPROVED))


# --- who may do what -----------------------------------------------------------------


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
    roles = []
    if _manages_buyer(user, release.rfp):
        roles.append(ReleaseStep.Role.BUYER)
    if _audits_buyer(user, release.rfp):
        roles.append(ReleaseStep.Role.AUDITOR)
    return roles


def can_reject(user: AnyUser, release: Release) -> bool:
    return _audits_buyer(user, release.rfp)


def can_manage(user: AnyUser, release: Release) -> bool:
    """Withdraw or execute: the buyer organisation's buyers and admins."""
    return _manages_buyer(user, release.rfp)


def can_download_released(user: AnyUser, release: Release) -> bool:
    buyer_side = organisation_ids_for(user, *BUYER_SIDE)
    return release.rfp.buyer_organisation_id in buyer_side


def release_package_get(user: AnyUser, public_id: uuid.UUID) -> Release | None:
    """An executed release whose deposits ``user`` may download."""
    release = release_get_visible(user, public_id)
    if release is None or release.status != Release.Status.RELEASED:
        return None
    return release if can_download_released(user, release) else None


# --- what can be requested -----------------------------------------------------------


@dataclass(frozen=True)
class Releasable:
    """An awarded RFP whose contractor's escrow the user may ask to release."""

    rfp: Rfp
    award: Award
    deposits: int
    open_release: Release | None


def releasable_for(user: AnyUser) -> list[Releasable]:
    """Awarded RFPs of the user's buyer organisations, with the awarded
    vendor's deposits on them."""
    managed = organisation_ids_for(user, *MANAGERS)
    awards = Award.objects.filter(
        rfp__buyer_organisation_id__in=managed, rfp__status=Rfp.Status.AWARDED
    ).select_related("rfp", "bid__vendor_organisation")
    rows = []
    for award in awards.order_by("-decided_at"):
        vendor = award.bid.vendor_organisation_id
        deposits = Deposit.objects.filter(rfp=award.rfp, organisation_id=vendor)
        open_release = Release.objects.filter(
            rfp=award.rfp, organisation_id=vendor, status__in=Release.OPEN
        ).first()
        rows.append(Releasable(award.rfp, award, deposits.count(), open_release))
    return rows


@dataclass(frozen=True)
class ReleaseSummary:
    """A dashboard's releases: open ones, and whether any waits for this user."""

    open: list[Release]
    waiting_for_you: int


def release_summary_for(user: AnyUser, *, latest: int = 5) -> ReleaseSummary:
    open_releases = list(
        release_list_visible_to(user).filter(status__in=Release.OPEN)[:latest]
    )
    waiting = sum(1 for release in open_releases if _waits_for(user, release))
    return ReleaseSummary(open_releases, waiting)


def _waits_for(user: AnyUser, release: Release) -> bool:
    """The vendor during the notice (it may object); an approver whose role
    has not approved after it; the buyer once approved (to execute)."""
    if release.status == Release.Status.APPROVED:
        return can_manage(user, release)
    if clock.now() < release.notice_ends_at:
        return release.status == Release.Status.PENDING and can_object(user, release)
    approved = {step.role for step in release_approvals(release)}
    return any(role not in approved for role in approval_roles(user, release))
