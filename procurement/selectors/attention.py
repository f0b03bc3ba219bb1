"""What needs a user now, across their visible RFPs: one query per kind of item."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Count, Q, QuerySet
from django.urls import reverse

from accounts.models import Role
from accounts.selectors import clock
from accounts.selectors.users import organisation_ids_for
from procurement.models import AwardRequest, Bid, BidOpening, Rfp, ScoreSheet
from procurement.selectors.rfps import (
    RfpWithStatus,
    rfp_list_taking_submissions,
    rfp_list_visible_to,
)

AnyUser = User | AnonymousUser
LIMIT = 10


@dataclass(frozen=True)
class Attention:
    kind: str  # questions, opening, award, scores, reconfirm, bid, deadline, gate_…
    rfp: Rfp
    text: str
    url: str
    # When it is due: the RFP's submission deadline unless the item says
    # otherwise (a re-test's own deadline; None for an item with no date).
    due: datetime | Literal["rfp"] | None = "rfp"

    @property
    def due_at(self) -> datetime | None:
        return self.rfp.submission_deadline if self.due == "rfp" else self.due


def _url(name: str, rfp: Rfp) -> str:
    return reverse(f"procurement:{name}", args=[rfp.public_id])


def _buyer_items(user: User, rfps: QuerySet[RfpWithStatus]) -> list[Attention]:
    managed = rfps.filter(
        buyer_organisation_id__in=organisation_ids_for(user, Role.BUYER, Role.ADMIN)
    )
    items = [
        Attention(
            "questions",
            r,
            f"{r.open_questions} unanswered question(s)",
            _url("rfp_clarifications", r),
        )
        for r in managed.filter(status=Rfp.Status.PUBLISHED)
        .annotate(
            open_questions=Count(
                "clarifications", filter=Q(clarifications__answered_at__isnull=True)
            )
        )
        .filter(open_questions__gt=0)[:LIMIT]
    ]
    items += [
        Attention(
            "opening",
            r,
            "Deadline passed: request the opening of the bids",
            _url("rfp_bids", r),
        )
        for r in managed.filter(
            effective_status=Rfp.Status.CLOSED, opening__isnull=True
        )[:LIMIT]
    ]
    return items


def _confirm_items(user: User, rfps: QuerySet[RfpWithStatus]) -> list[Attention]:
    own = organisation_ids_for(user, Role.BUYER, Role.EVALUATOR, Role.ADMIN)
    pending = (
        BidOpening.objects.filter(
            rfp__in=rfps, rfp__buyer_organisation_id__in=own, confirmed_by__isnull=True
        )
        .exclude(requested_by=user)
        .select_related("rfp", "requested_by")[:LIMIT]
    )
    return [
        Attention(
            "opening",
            o.rfp,
            f"{o.requested_by.get_username()} asks you to confirm the opening",
            _url("rfp_bids", o.rfp),
        )
        for o in pending
    ]


def _award_items(user: User, rfps: QuerySet[RfpWithStatus]) -> list[Attention]:
    """Pending award requests another member of the user's buyer side made."""
    own = organisation_ids_for(user, Role.BUYER, Role.EVALUATOR, Role.ADMIN)
    pending = (
        AwardRequest.objects.filter(
            rfp__in=rfps,
            rfp__buyer_organisation_id__in=own,
            rfp__status=Rfp.Status.OPENED,
            status=AwardRequest.Status.PENDING,
        )
        .exclude(requested_by=user)
        .select_related("rfp", "requested_by", "bid__vendor_organisation")[:LIMIT]
    )
    return [
        Attention(
            "award",
            a.rfp,
            f"{a.requested_by.get_username()} asks you to confirm the award to "
            f"{a.bid.vendor_organisation.name}",
            _url("rfp_award", a.rfp),
        )
        for a in pending
    ]


def _evaluator_items(user: User, rfps: QuerySet[RfpWithStatus]) -> list[Attention]:
    own = organisation_ids_for(user, Role.EVALUATOR)
    submitted = ScoreSheet.objects.filter(evaluator=user, submitted_at__isnull=False)
    todo = rfps.filter(status=Rfp.Status.OPENED, buyer_organisation_id__in=own).exclude(
        id__in=submitted.values("rfp_id")
    )[:LIMIT]
    return [
        Attention("scores", r, "Score the opened bids", _url("rfp_evaluation", r))
        for r in todo
    ]


def _vendor_items(user: User, rfps: QuerySet[RfpWithStatus]) -> list[Attention]:
    own = organisation_ids_for(user, Role.VENDOR, Role.ADMIN)
    bids = Bid.objects.filter(vendor_organisation_id__in=own, rfp__in=rfps)
    items = [
        Attention(
            "reconfirm",
            b.rfp,
            "An addendum changed the RFP: re-confirm your bid",
            _url("rfp_bids", b.rfp),
        )
        for b in bids.filter(status=Bid.Status.NEEDS_RECONFIRMATION).select_related(
            "rfp"
        )[:LIMIT]
    ]
    taking = rfp_list_taking_submissions(rfps, clock.now())
    live_bids = bids.exclude(status=Bid.Status.WITHDRAWN).values("rfp_id")
    no_bid = taking.filter(invited_vendors__in=own).exclude(id__in=live_bids)
    items += [
        Attention("bid", r, "Invited: no bid submitted yet", _url("rfp_bids", r))
        for r in no_bid.distinct()[:LIMIT]
    ]
    return items


def attention_for(user: AnyUser) -> list[Attention]:
    """Every item that waits for this user, soonest deadline first."""
    if not user.is_authenticated:
        return []
    rfps = rfp_list_visible_to(user)
    items = (
        _buyer_items(user, rfps)
        + _confirm_items(user, rfps)
        + _award_items(user, rfps)
        + _evaluator_items(user, rfps)
        + _vendor_items(user, rfps)
    )
    return sorted(items, key=lambda a: (a.rfp.submission_deadline, a.rfp.reference))
