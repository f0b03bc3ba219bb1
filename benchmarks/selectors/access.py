"""Who may see and operate runner objects.

- Lab operators (``labops`` or ``admin`` of a lab organisation) see and operate
  their lab's pools and every campaign run on them; they start campaigns only for
  RFPs whose buyer engages their lab, once the bids are opened (sealing holds),
  or, at any time, of the buyer's own baseline bundle (a ``baseline`` campaign).
- The buyer side (buyer, evaluator, admin of the RFP's buyer) and the auditors the
  buyer engaged see the campaigns of the buyer's RFPs, read-only.
- A vendor sees the campaigns of its own bundles, read-only (its own results,
  the roles in the README), never another vendor's, nor the buyer's baseline
  campaigns (a gate's evaluation shows the limit the baseline gave).
- Anyone else: nothing (the pages answer 404).
"""

from __future__ import annotations

import uuid
from typing import Final

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import F, Q, QuerySet

from accounts.models import Organisation, Role
from accounts.selectors.users import (
    buyer_organisation_ids_served_by,
    organisation_ids_for,
)
from artifacts.models import Bundle
from benchmarks.models import Campaign, LabHost, LabPool, Run
from procurement.models import Rfp

AnyUser = User | AnonymousUser

LAB_ROLES: Final = (Role.LABOPS, Role.ADMIN)
BUYER_SIDE_ROLES: Final = (Role.BUYER, Role.EVALUATOR, Role.ADMIN)
UNSEALED: Final = (Rfp.Status.OPENED, Rfp.Status.AWARDED)


def _ids_of_kind(user: AnyUser, kind: str, *roles: str) -> set[int]:
    ids = organisation_ids_for(user, *roles)
    if not ids:
        return set()
    return set(
        Organisation.objects.filter(kind=kind, id__in=ids).values_list("id", flat=True)
    )


def lab_organisation_list_for(user: AnyUser) -> QuerySet[Organisation]:
    """The lab organisations the user operates."""
    ids = _ids_of_kind(user, Organisation.Kind.LAB, *LAB_ROLES)
    return Organisation.objects.filter(id__in=ids)


def pool_list_operated_by(user: AnyUser) -> QuerySet[LabPool]:
    ids = _ids_of_kind(user, Organisation.Kind.LAB, *LAB_ROLES)
    return LabPool.objects.filter(lab_organisation_id__in=ids).select_related(
        "lab_organisation"
    )


def can_operate_pool(user: AnyUser, pool: LabPool) -> bool:
    return pool.lab_organisation_id in _ids_of_kind(
        user, Organisation.Kind.LAB, *LAB_ROLES
    )


def can_operate_campaign(user: AnyUser, campaign: Campaign) -> bool:
    """Cancel runs, download nothing more than others: the pool's lab only."""
    return can_operate_pool(user, campaign.pool)


def can_add_runs(user: AnyUser, campaign: Campaign) -> bool:
    """Add repetitions to a campaign: the pool's lab operators, and the buyers
    (buyer or admin) of the campaign's RFP."""
    if can_operate_campaign(user, campaign):
        return True
    buyers = organisation_ids_for(user, Role.BUYER, Role.ADMIN)
    return campaign.rfp.buyer_organisation_id in buyers


def bundle_list_startable_by(user: AnyUser) -> QuerySet[Bundle]:
    """Accepted bundles of opened or awarded RFPs, and the buyer's own baseline
    bundles whatever the RFP's status, whose buyer engages a lab the user
    operates: what the campaign form offers, newest first."""
    labs = _ids_of_kind(user, Organisation.Kind.LAB, *LAB_ROLES)
    baseline = Q(organisation_id=F("rfp__buyer_organisation_id"))
    return (
        Bundle.objects.filter(
            Q(rfp__status__in=UNSEALED) | baseline,
            status=Bundle.Status.ACCEPTED,
            rfp__buyer_organisation__engages__in=labs,
        )
        .distinct()
        .select_related("rfp", "organisation")
        .defer("problems", "completeness")
        .order_by("-created_at", "-id")
    )


# The longest thing a bundle search can match: an organisation's name.
SEARCH_MAX_CHARS: Final = Organisation._meta.get_field("name").max_length or 200


def bundle_list_matching(bundles: QuerySet[Bundle], search: str) -> QuerySet[Bundle]:
    """``bundles`` whose RFP reference or vendor name contains ``search``, or
    whose SHA-256 starts with it (all of them for an empty search). ``%`` and
    ``_`` are themselves; a search longer than any name, or holding a character
    no name holds (NUL, which PostgreSQL refuses in a query), matches nothing."""
    search = search.strip()
    if not search:
        return bundles
    if len(search) > SEARCH_MAX_CHARS or "\x00" in search:
        return bundles.none()
    return bundles.filter(
        Q(rfp__reference__icontains=search)
        | Q(organisation__name__icontains=search)
        | Q(sha256__startswith=search.lower())
    )


def campaign_list_visible_to(user: AnyUser) -> QuerySet[Campaign]:
    if not user.is_authenticated:
        return Campaign.objects.none()
    labs = _ids_of_kind(user, Organisation.Kind.LAB, *LAB_ROLES)
    buyers = _ids_of_kind(user, Organisation.Kind.BUYER, *BUYER_SIDE_ROLES)
    buyers |= buyer_organisation_ids_served_by(user, Role.AUDITOR)
    vendors = _ids_of_kind(user, Organisation.Kind.VENDOR, Role.VENDOR, Role.ADMIN)
    visible = (
        Q(pool__lab_organisation_id__in=labs)
        | Q(rfp__buyer_organisation_id__in=buyers)
        | Q(bundle__organisation_id__in=vendors)
    )
    return Campaign.objects.filter(visible).select_related(
        "rfp", "pool", "pool__lab_organisation", "bundle__organisation", "started_by"
    )


def campaign_get_visible(user: AnyUser, public_id: uuid.UUID) -> Campaign | None:
    return campaign_list_visible_to(user).filter(public_id=public_id).first()


def run_get_visible(user: AnyUser, public_id: uuid.UUID) -> Run | None:
    """The run if its campaign is visible to the user."""
    return (
        Run.objects.filter(
            public_id=public_id, campaign__in=campaign_list_visible_to(user)
        )
        .select_related(
            "campaign",
            "campaign__rfp",
            "campaign__pool",
            "campaign__bundle__organisation",
            "host",
            "output_deposit",
        )
        .first()
    )


def host_get_visible(user: AnyUser, public_id: uuid.UUID) -> LabHost | None:
    """The lab host if the user operates its pool or may see a run it ran
    (whoever may check a run's statement may have the key it verifies with)."""
    if not user.is_authenticated:
        return None
    host = LabHost.objects.select_related("pool").filter(public_id=public_id).first()
    if host is None:
        return None
    if can_operate_pool(user, host.pool):
        return host
    runs = Run.objects.filter(host=host, campaign__in=campaign_list_visible_to(user))
    return host if runs.exists() else None
