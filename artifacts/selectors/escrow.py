"""Who sees escrow, and the reads of the deposit pages.

Deposits are sealed like the bundles they hold: the depositing vendor
organisation sees its own at any time (its receipts); the buyer side — the
buyer organisation's buyers, evaluators and admins, and the labs and auditors
it engaged — once the RFP is opened; nobody else (404)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Q, QuerySet

from accounts.models import Role
from accounts.selectors.users import (
    buyer_organisation_ids_served_by,
    organisation_ids_for,
)
from artifacts.models import Bundle, Deposit, DepositBlob, EscrowEvent, LogVisit
from artifacts.selectors.bundles import (
    BUYER_SIDE_ROLES,
    UNSEALED,
    bundle_list_visible_to,
)
from artifacts.selectors.log import log_size

AnyUser = User | AnonymousUser
SERVING_ROLES = (Role.AUDITOR, Role.LABOPS, Role.ADMIN)


def _buyer_side_ids(user: AnyUser) -> set[int]:
    """Buyer organisations whose opened RFPs' escrow the user may read."""
    return organisation_ids_for(user, *BUYER_SIDE_ROLES) | (
        buyer_organisation_ids_served_by(user, *SERVING_ROLES)
    )


def _visible(user: AnyUser, organisation_field: str, rfp_field: str) -> Q:
    own = organisation_ids_for(user, Role.VENDOR, Role.ADMIN)
    return Q(**{f"{organisation_field}__in": own}) | Q(
        **{
            f"{rfp_field}__buyer_organisation_id__in": _buyer_side_ids(user),
            f"{rfp_field}__status__in": UNSEALED,
        }
    )


def deposit_list_visible_to(user: AnyUser) -> QuerySet[Deposit]:
    if not user.is_authenticated:
        return Deposit.objects.none()
    return (
        Deposit.objects.filter(_visible(user, "organisation_id", "rfp"))
        .select_related("rfp", "organisation", "bundle__organisation", "deposited_by")
        .order_by("-log_index")
    )


@dataclass(frozen=True)
class DepositFilter:
    rfp: str = ""  # reference
    vendor: str = ""  # organisation slug
    kind: str = ""

    @property
    def query(self) -> str:
        """The filter as a query string (for pagination links)."""
        pairs = [("rfp", self.rfp), ("vendor", self.vendor), ("kind", self.kind)]
        return "&".join(f"{k}={v}" for k, v in pairs if v)


def _of_vendor(slug: str) -> Q:
    """A vendor's deposits: those naming one of its bundles (the bundle itself,
    and what the lab and the buyer deposited about it: run outputs, gate
    evaluations, signed reports), and any it made without a bundle."""
    return Q(bundle__organisation__slug=slug) | Q(
        bundle__isnull=True, organisation__slug=slug
    )


def deposit_list_filtered(user: AnyUser, where: DepositFilter) -> QuerySet[Deposit]:
    deposits = deposit_list_visible_to(user)
    if where.rfp:
        deposits = deposits.filter(rfp__reference=where.rfp)
    if where.vendor:
        deposits = deposits.filter(_of_vendor(where.vendor))
    if where.kind:
        deposits = deposits.filter(kind=where.kind)
    return deposits


def deposit_get_visible(user: AnyUser, public_id: uuid.UUID) -> Deposit | None:
    return deposit_list_visible_to(user).filter(public_id=public_id).first()


def deposit_filter_choices(user: AnyUser) -> dict[str, list[str]]:
    """RFP references and vendor slugs the user's deposits name, for the
    filters: a deposit's vendor is the one whose bundle it names."""
    deposits = deposit_list_visible_to(user).order_by()
    rfps = deposits.values_list("rfp__reference", flat=True).distinct()
    bundled = deposits.filter(bundle__isnull=False)
    unbundled = deposits.filter(bundle__isnull=True).values_list(
        "organisation__slug", flat=True
    )
    of_bundles = bundled.values_list("bundle__organisation__slug", flat=True)
    vendors = {*unbundled.distinct(), *of_bundles.distinct()} - {None}
    return {"rfps": sorted(set(rfps)), "vendors": sorted(vendors)}


def deposit_items(deposit: Deposit) -> QuerySet[DepositBlob]:
    """The blobs the deposit names, in the leaf's order."""
    return deposit.items.select_related("blob").order_by("position")


def deposit_events(deposit: Deposit) -> QuerySet[EscrowEvent]:
    return deposit.events.select_related("actor").order_by("log_index")


def evidence_bundle_get(user: AnyUser, public_id: uuid.UUID) -> Bundle | None:
    """A bundle whose evidence package the user may download: one they see
    (``bundle_list_visible_to``), or, for labs and auditors the buyer engaged,
    an accepted bundle of an opened RFP."""
    if not user.is_authenticated:
        return None
    served = buyer_organisation_ids_served_by(user, *SERVING_ROLES)
    bundles = Bundle.objects.filter(public_id=public_id)
    visible = bundles.filter(
        Q(id__in=bundle_list_visible_to(user).values("id"))
        | Q(
            rfp__buyer_organisation_id__in=served,
            rfp__status__in=UNSEALED,
            status=Bundle.Status.ACCEPTED,
        )
    )
    return visible.select_related("rfp", "organisation").first()


def bundle_deposits(bundle: Bundle) -> list[Deposit]:
    """The bundle's own deposits (kind ``bundle``; one), oldest first. Run
    outputs name the bundle they ran too, but belong to a campaign's package."""
    return list(
        Deposit.objects.filter(kind=Deposit.Kind.BUNDLE, bundle=bundle)
        .select_related("organisation", "rfp")
        .order_by("log_index")
    )


def log_visit_get(user: AnyUser) -> LogVisit | None:
    if not user.is_authenticated:
        return None
    return LogVisit.objects.filter(user=user).first()


@dataclass(frozen=True)
class EscrowSummary:
    """What a dashboard shows of escrow: the deposits the user sees, those on
    legal hold, the newest few, and how many log entries were appended since
    the user's last check on the log page (None: never checked)."""

    deposits: int
    on_hold: int
    latest: list[Deposit]
    log_size: int
    unseen_entries: int | None


def escrow_summary_for(user: AnyUser, *, latest: int = 5) -> EscrowSummary:
    deposits = deposit_list_visible_to(user)
    visit = log_visit_get(user)
    size = log_size()
    return EscrowSummary(
        deposits=deposits.count(),
        on_hold=deposits.filter(legal_hold=True).count(),
        latest=list(deposits[:latest]),
        log_size=size,
        unseen_entries=None if visit is None else max(0, size - visit.size),
    )
