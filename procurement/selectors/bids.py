"""Reading bids, sealed or not.

Before opening (``rfp.is_sealed``) the only reads for anyone but the bidder are
``bid_count_live`` and ``bid_commitments`` (sorted by hash, so that the order does
not tell who came first). A vendor reads its own bid; the buyer side reads every
live bid once the RFP is opened."""

from __future__ import annotations

import uuid

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Prefetch, QuerySet

from accounts.models import Organisation, Role
from accounts.selectors.users import organisation_ids_for
from procurement.models import Bid, BidDocument, BidOpening, BidReceipt, Rfp
from procurement.permissions import is_buyer_side

AnyUser = User | AnonymousUser
LIVE_STATUSES = (Bid.Status.SUBMITTED, Bid.Status.NEEDS_RECONFIRMATION)


def _current_documents() -> Prefetch:
    return Prefetch(
        "documents",
        queryset=BidDocument.objects.filter(superseded_at__isnull=True).order_by(
            "name"
        ),
        to_attr="current_documents",
    )


def bid_count_live(*, rfp: Rfp) -> int:
    """Bids that count: submitted or waiting for re-confirmation (not withdrawn)."""
    return rfp.bids.filter(status__in=LIVE_STATUSES).count()


def bid_commitments(*, rfp: Rfp) -> list[str]:
    """The live bids' commitment hashes, sorted by hash: safe while sealed."""
    return list(
        rfp.bids.filter(status__in=LIVE_STATUSES)
        .order_by("commitment")
        .values_list("commitment", flat=True)
    )


def bid_list_opened(*, rfp: Rfp) -> QuerySet[Bid]:
    """Every live bid with its vendor, cost inputs and current documents; empty
    while the RFP is sealed."""
    if rfp.is_sealed:
        return Bid.objects.none()
    return (
        rfp.bids.filter(status__in=LIVE_STATUSES)
        .select_related("vendor_organisation", "cost_inputs")
        .prefetch_related(_current_documents())
        .order_by("vendor_organisation__name", "pk")
    )


def bid_get_own(*, rfp: Rfp, organisation: Organisation) -> Bid | None:
    return (
        rfp.bids.filter(vendor_organisation=organisation)
        .select_related("cost_inputs")
        .prefetch_related(_current_documents())
        .first()
    )


def _may_read(user: AnyUser, bid: Bid) -> bool:
    """Members of the bidding vendor always; the buyer side once it is opened."""
    if bid.vendor_organisation_id in organisation_ids_for(
        user, Role.VENDOR, Role.ADMIN
    ):
        return True
    rfp = bid.rfp
    return (
        not rfp.is_sealed and bid.status in LIVE_STATUSES and is_buyer_side(user, rfp)
    )


def bid_get_visible(
    user: AnyUser, *, public_id: uuid.UUID, rfp: Rfp | None = None
) -> Bid | None:
    """One bid if the user may read it (else None: answer 404)."""
    bids = Bid.objects.filter(public_id=public_id)
    if rfp is not None:
        bids = bids.filter(rfp=rfp)
    bid = (
        bids.select_related("rfp", "vendor_organisation", "cost_inputs")
        .prefetch_related(_current_documents())
        .first()
    )
    return bid if bid is not None and _may_read(user, bid) else None


def bid_is_own(user: AnyUser, bid: Bid) -> bool:
    own = organisation_ids_for(user, Role.VENDOR, Role.ADMIN)
    return bid.vendor_organisation_id in own


def bid_document_get(*, bid: Bid, sha256: str, own: bool) -> BidDocument | None:
    """A document of the bid by hash: the bidder may fetch superseded ones too,
    the buyer only the current version's."""
    documents = bid.documents.filter(sha256=sha256)
    if not own:
        documents = documents.filter(superseded_at__isnull=True)
    return documents.order_by("-uploaded_at", "-id").first()


def bid_document_history(*, bid: Bid) -> QuerySet[BidDocument]:
    return bid.documents.exclude(superseded_at=None).order_by("-superseded_at", "name")


def bid_receipt_list(*, bid: Bid) -> QuerySet[BidReceipt]:
    """Newest first."""
    return bid.receipts.select_related("issued_to").order_by("-issued_at", "-id")


def bid_receipt_get_visible(
    user: AnyUser, *, public_id: uuid.UUID, rfp: Rfp
) -> BidReceipt | None:
    """A receipt is the bidder's own: nobody else reads it (404)."""
    own = organisation_ids_for(user, Role.VENDOR, Role.ADMIN)
    return (
        BidReceipt.objects.filter(
            public_id=public_id, bid__rfp=rfp, bid__vendor_organisation_id__in=own
        )
        .select_related("bid", "bid__rfp", "issued_to")
        .first()
    )


def bid_opening_get(*, rfp: Rfp) -> BidOpening | None:
    return (
        BidOpening.objects.filter(rfp=rfp)
        .select_related("requested_by", "confirmed_by")
        .first()
    )
