"""Reads of the escrow release pages and dashboards.

A release is seen by the buyer organisation's buyers, evaluators and admins,
by the auditors it engaged, and by the vendor organisation whose escrow it is
(its vendors and admins, who are told and may object); nobody else (404: labs,
other vendors, other buyers). Who may take which step: ``artifacts.permissions``."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Final

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Q, QuerySet

from accounts.models import Role
from accounts.selectors import clock
from accounts.selectors.users import (
    buyer_organisation_ids_served_by,
    organisation_ids_for,
)
from artifacts.conf import escrow_release_notice_days
from artifacts.models import Deposit, DepositBlob, Release, ReleaseStep
from artifacts.permissions import (
    BUYER_SIDE,
    MANAGERS,
    VENDOR_SIDE,
    can_download_released,
    release_steps_for,
)
from procurement.models import Award, Rfp

AnyUser = User | AnonymousUser
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
    steps = release_steps_for(user, release, clock.now())
    return steps["object"] or steps["approve"] or steps["execute"]
