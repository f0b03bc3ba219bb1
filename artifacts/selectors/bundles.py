"""Reads of signing keys (an organisation's keys, those valid at a moment, the keys
a user may see and manage) and of bundles (sealed like bids)."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from datetime import datetime
from typing import Final

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import F, OuterRef, Q, QuerySet, Subquery

from accounts.models import Organisation, Role
from accounts.selectors.users import organisation_ids_for
from artifacts.models import Bundle, BundleFile, SigningKey
from procurement.models import Rfp

AnyUser = User | AnonymousUser


def signing_key_list_for(organisation: Organisation) -> QuerySet[SigningKey]:
    """Every key the organisation registered, revoked ones included, newest first."""
    return SigningKey.objects.filter(organisation=organisation)


def signing_key_list_valid_at(
    organisation: Organisation, at: datetime
) -> QuerySet[SigningKey]:
    """Keys inside their window at ``at`` and not revoked by then."""
    return signing_key_list_for(organisation).filter(
        Q(revoked_at__isnull=True) | Q(revoked_at__gt=at),
        Q(valid_until__isnull=True) | Q(valid_until__gt=at),
        valid_from__lte=at,
    )


def signing_key_get_by_fingerprint(
    organisation: Organisation, fingerprint: str
) -> SigningKey | None:
    """The organisation's key with this fingerprint, whatever its state."""
    return signing_key_list_for(organisation).filter(fingerprint=fingerprint).first()


def signing_key_owner_id(fingerprint: str) -> int | None:
    """The id of the organisation that registered the key with this fingerprint
    (keys are never registered twice, across organisations too), else None."""
    return (
        SigningKey.objects.filter(fingerprint=fingerprint)
        .values_list("organisation_id", flat=True)
        .first()
    )


def signing_key_status_at(key: SigningKey, at: datetime) -> str:
    """``valid``, ``revoked``, ``expired`` or ``not_yet_valid`` at ``at``."""
    if key.revoked_at is not None and key.revoked_at <= at:
        return "revoked"
    if key.valid_until is not None and key.valid_until <= at:
        return "expired"
    if key.valid_from > at:
        return "not_yet_valid"
    return "valid"


def key_organisation_list_for(user: AnyUser) -> QuerySet[Organisation]:
    """Organisations whose signing keys the user manages: vendor organisations
    (vendors, admins), and buyer organisations (buyers, admins), which sign the
    bundles of their own baseline campaigns."""
    return Organisation.objects.filter(
        Q(
            kind=Organisation.Kind.VENDOR,
            id__in=organisation_ids_for(user, Role.VENDOR, Role.ADMIN),
        )
        | Q(
            kind=Organisation.Kind.BUYER,
            id__in=organisation_ids_for(user, Role.BUYER, Role.ADMIN),
        )
    )


def signing_key_list_visible_to(user: AnyUser) -> QuerySet[SigningKey]:
    """Keys of the organisations the user manages keys for."""
    return SigningKey.objects.filter(
        organisation__in=key_organisation_list_for(user)
    ).select_related("organisation")


# --- bundles --------------------------------------------------------------------------
# Sealing (the sealed-bid rule): the uploading vendor organisation sees its
# own bundles, accepted or rejected; the buyer side sees accepted bundles only once
# the RFP is opened; nobody else sees any (the APIs answer 404).

BUYER_SIDE_ROLES: Final = (Role.BUYER, Role.EVALUATOR, Role.ADMIN)
UNSEALED: Final = (Rfp.Status.OPENED, Rfp.Status.AWARDED)  # not Rfp.is_sealed


def _bundles() -> QuerySet[Bundle]:
    return Bundle.objects.select_related(
        "rfp", "organisation", "signing_key", "archive_blob", "uploaded_by"
    ).order_by("-created_at", "-id")


def bundle_list_visible_to(user: AnyUser) -> QuerySet[Bundle]:
    if not user.is_authenticated:
        return Bundle.objects.none()
    own = organisation_ids_for(user, Role.VENDOR, Role.ADMIN)
    buyer_side = organisation_ids_for(user, *BUYER_SIDE_ROLES)
    opened = Q(
        rfp__buyer_organisation_id__in=buyer_side,
        rfp__status__in=UNSEALED,
        status=Bundle.Status.ACCEPTED,
    )
    # the buyer's own baseline bundles: never sealed from the buyer side
    baseline = Q(
        organisation_id__in=buyer_side,
        organisation_id=F("rfp__buyer_organisation_id"),
    )
    return _bundles().filter(Q(organisation_id__in=own) | opened | baseline)


def bundle_get_visible(user: AnyUser, public_id: uuid.UUID) -> Bundle | None:
    return bundle_list_visible_to(user).filter(public_id=public_id).first()


def bundle_list_visible_for_rfp(user: AnyUser, rfp: Rfp) -> QuerySet[Bundle]:
    """The bundles of one RFP the user may see, newest first."""
    return bundle_list_visible_to(user).filter(rfp=rfp)


def bundle_file_list(bundle: Bundle) -> QuerySet[BundleFile]:
    """The bundle's files by path (the page shows them, not their blobs)."""
    return bundle.files.order_by("path", "id")


def bundle_list_accepted_for(rfp: Rfp, organisation: Organisation) -> QuerySet[Bundle]:
    """One vendor's accepted bundles on an RFP, newest first (the bid page;
    callers check who may see them)."""
    return _bundles().filter(
        rfp=rfp, organisation=organisation, status=Bundle.Status.ACCEPTED
    )


def bundle_latest_accepted_by_organisation(rfp: Rfp) -> dict[int, Bundle]:
    """organisation id -> its newest accepted bundle on the RFP: what the
    evaluation's completeness reads (``Bundle.completeness``)."""
    latest: dict[int, Bundle] = {}
    for bundle in _bundles().filter(rfp=rfp, status=Bundle.Status.ACCEPTED):
        latest.setdefault(bundle.organisation_id, bundle)  # newest first
    return latest


def bundle_latest_accepted_completeness(
    rfp: Rfp, organisation_ids: Collection[int] | None = None
) -> dict[int, Bundle]:
    """organisation id -> its newest accepted bundle on the RFP, as
    ``bundle_latest_accepted_by_organisation`` answers, but in one query that
    loads only the newest bundle of each organisation (``organisation_ids`` only,
    when given) and not its manifest or problems: what the procurement
    comparison reads (``Bundle.completeness``). Callers check who may see them."""
    accepted = Bundle.objects.filter(rfp=rfp, status=Bundle.Status.ACCEPTED)
    if organisation_ids is not None:
        accepted = accepted.filter(organisation_id__in=list(organisation_ids))
    newest = (
        Bundle.objects.filter(
            rfp=rfp,
            status=Bundle.Status.ACCEPTED,
            organisation_id=OuterRef("organisation_id"),
        )
        .order_by("-created_at", "-id")
        .values("pk")[:1]
    )
    rows = accepted.filter(pk=Subquery(newest)).defer("manifest", "problems")
    return {bundle.organisation_id: bundle for bundle in rows}
