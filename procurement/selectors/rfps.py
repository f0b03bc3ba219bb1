from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, TypeAlias, TypedDict

from django.contrib.auth.models import AnonymousUser, User
from django.contrib.contenttypes.models import ContentType
from django.db.models import (
    BooleanField,
    Case,
    CharField,
    Count,
    Exists,
    ExpressionWrapper,
    F,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
    prefetch_related_objects,
)
from django.db.models.functions import Coalesce
from django.db.models.lookups import GreaterThan
from django.http import Http404

from accounts.models import AuditEvent, Organisation, Role
from accounts.selectors import clock
from accounts.selectors.users import (
    buyer_organisation_ids_served_by,
    membership_list_for,
)
from procurement.models import Bid, Clarification, Rfp, RfpTemplate

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

AnyUser = User | AnonymousUser


class _EffectiveStatus(TypedDict):
    effective_status: str


# An RFP read with its status by the clock (``rfp_with_effective_status``).
RfpWithStatus: TypeAlias = "WithAnnotations[Rfp, _EffectiveStatus]"


def _organisation_ids_of_kind(user: AnyUser, kind: str) -> set[int]:
    return set(
        membership_list_for(user)
        .filter(organisation__kind=kind)
        .values_list("organisation_id", flat=True)
    )


# --- the tender's status by the clock ----------------------------------------------


def rfp_effective_status_expression(now: datetime) -> Case:
    """The status an RFP has at ``now``, in SQL: the one rule every read uses.

    A published RFP whose submission deadline has passed is closed, unless a
    clarification is still unanswered (closing waits for the last answer), and
    unsuccessful when it has fewer submitted bids than ``min_bids`` — exactly what
    ``procurement.services.deadlines.rfp_close`` records when the beat task (or a
    write) persists it. Every other RFP has its stored status."""
    unanswered = Clarification.objects.filter(
        rfp=OuterRef("pk"), answered_at__isnull=True
    )
    valid_bids = Coalesce(
        Subquery(
            Bid.objects.filter(rfp=OuterRef("pk"), status=Bid.Status.SUBMITTED)
            .values("rfp")
            .annotate(n=Count("pk"))
            .values("n"),
            output_field=IntegerField(),
        ),
        0,
    )
    due = Q(status=Rfp.Status.PUBLISHED, submission_deadline__lte=now) & ~Exists(
        unanswered
    )
    return Case(
        When(
            due,
            then=Case(
                When(
                    GreaterThan(F("min_bids"), valid_bids),
                    then=Value(Rfp.Status.UNSUCCESSFUL),
                ),
                default=Value(Rfp.Status.CLOSED),
            ),
        ),
        default=F("status"),
        output_field=CharField(),
    )


def rfp_with_effective_status(
    rfps: QuerySet[Rfp], now: datetime
) -> QuerySet[RfpWithStatus]:
    """``rfps``, each with ``effective_status`` (read it as ``Rfp.status_now``)."""
    return rfps.annotate(effective_status=rfp_effective_status_expression(now))


def rfp_effective_status(rfp: Rfp, now: datetime) -> str:
    """The status of one RFP at ``now`` (``rfp_effective_status_expression``); no
    query unless it is published and its deadline has passed."""
    if rfp.status != Rfp.Status.PUBLISHED or rfp.submission_deadline > now:
        return rfp.status
    found = rfp_with_effective_status(Rfp.objects.filter(pk=rfp.pk), now)
    return found.values_list("effective_status", flat=True).get()


# --- whether the tender takes submissions -----------------------------------------


@dataclass(frozen=True)
class SubmissionsClosed:
    """Why an RFP takes no bids and no bundles now (``Rfp.takes_submissions``)."""

    code: str  # "rfp_not_published" or "deadline_passed"
    message: str  # the one sentence every page, API and service shows


def rfp_submissions_closed(
    rfp: Rfp, now: datetime | None = None
) -> SubmissionsClosed | None:
    """None while the RFP takes bids and bundles (``Rfp.takes_submissions`` at
    ``now``, by default the clock now), else why not. The bid and bundle
    services refuse by it; the pages and APIs offer their forms by it."""
    now = clock.now() if now is None else now
    if rfp.takes_submissions(now):
        return None
    by_deadline = {Rfp.Status.PUBLISHED, Rfp.Status.CLOSED, Rfp.Status.UNSUCCESSFUL}
    if rfp.status_now in by_deadline and now >= rfp.submission_deadline:
        deadline = f"{rfp.submission_deadline:%Y-%m-%d %H:%M}"
        return SubmissionsClosed(
            "deadline_passed",
            f"The submission deadline passed at {deadline} UTC: bids and bundles "
            f"on {rfp.reference} can no longer be submitted or changed.",
        )
    status = rfp.get_status_now_display().lower()
    return SubmissionsClosed(
        "rfp_not_published",
        f"{rfp.reference} is {status}: bids and bundles can be submitted or "
        "changed only while it is published.",
    )


def rfp_list_taking_submissions(rfps: QuerySet[Rfp], now: datetime) -> QuerySet[Rfp]:
    """The RFPs among ``rfps`` that take submissions at ``now``:
    ``Rfp.takes_submissions`` in SQL (a published RFP before its deadline has
    that status by the clock too)."""
    return rfps.filter(status=Rfp.Status.PUBLISHED, submission_deadline__gt=now)


def rfp_list_due(rfps: QuerySet[Rfp], now: datetime) -> QuerySet[Rfp]:
    """The RFPs among ``rfps`` whose status by the clock is not the stored one
    yet: what the deadline sweep persists."""
    published = rfps.filter(status=Rfp.Status.PUBLISHED, submission_deadline__lte=now)
    return rfp_with_effective_status(published, now).exclude(
        effective_status=F("status")
    )


# --- visibility -----------------------------------------------------------------------


def rfp_list_visible_to(user: AnyUser) -> QuerySet[RfpWithStatus]:
    """Buyers see their organisation's RFPs; vendors the published RFPs they are
    invited to; labs and auditors the published RFPs of the buyers that engaged them."""
    if not user.is_authenticated:  # annotated too: callers filter on the status
        return rfp_with_effective_status(Rfp.objects.none(), clock.now())
    own_buyer = _organisation_ids_of_kind(user, Organisation.Kind.BUYER)
    own_vendor = _organisation_ids_of_kind(user, Organisation.Kind.VENDOR)
    served = buyer_organisation_ids_served_by(
        user, Role.LABOPS, Role.AUDITOR, Role.ADMIN
    )
    visible = (
        Q(buyer_organisation_id__in=own_buyer)
        | (Q(invited_vendors__in=own_vendor) & ~Q(status=Rfp.Status.DRAFT))
        | (Q(buyer_organisation_id__in=served) & ~Q(status=Rfp.Status.DRAFT))
    )
    ids = Rfp.objects.filter(visible).values("id")
    rfps = Rfp.objects.filter(id__in=ids).select_related("buyer_organisation")
    return rfp_with_effective_status(rfps, clock.now())  # reads never write


def rfp_get_visible(user: AnyUser, *, public_id: uuid.UUID) -> Rfp | None:
    return rfp_list_visible_to(user).filter(public_id=public_id).first()


def rfp_get_visible_or_404(user: AnyUser, *, public_id: uuid.UUID) -> Rfp:
    """The RFP if ``user`` may know it exists, else ``Http404`` (pages and APIs
    alike: DRF answers it 404). Read-only: its status by the clock is
    ``rfp.status_now``; write services apply due deadlines."""
    rfp = rfp_get_visible(user, public_id=public_id)
    if rfp is None:
        raise Http404("No such RFP.")
    return rfp


@dataclass(frozen=True)
class InvitedVendorScope:
    """Which invited vendors a user may see: all of them on RFPs of their own buyer
    organisation (or of the buyers that engaged them), otherwise only their own."""

    full_view_buyer_ids: frozenset[int]
    own_vendor_ids: frozenset[int]

    def visible(self, rfp: Rfp) -> list[Organisation]:
        invited = list(rfp.invited_vendors.all())
        if rfp.buyer_organisation_id in self.full_view_buyer_ids:
            return invited
        return [org for org in invited if org.id in self.own_vendor_ids]


def invited_vendor_scope_for(user: AnyUser) -> InvitedVendorScope:
    full = _organisation_ids_of_kind(user, Organisation.Kind.BUYER)
    full |= buyer_organisation_ids_served_by(
        user, Role.LABOPS, Role.AUDITOR, Role.ADMIN
    )
    own = _organisation_ids_of_kind(user, Organisation.Kind.VENDOR)
    return InvitedVendorScope(frozenset(full), frozenset(own))


# --- pages and APIs of the RFP area -------------------------------------------------

RFP_CONFIGURATION = ("artifacts", "metrics", "criteria", "invited_vendors")


def rfp_list_for_page(
    visible: QuerySet[RfpWithStatus], *, status: str = ""
) -> QuerySet[Rfp]:
    """The RFP list page: the visible RFPs (``rfp_list_visible_to``), optionally of
    one status (by the clock), each with ``deadline_passed`` by the procurement
    clock."""
    rfps = visible.annotate(
        deadline_passed=ExpressionWrapper(
            Q(submission_deadline__lte=clock.now()), output_field=BooleanField()
        )
    )
    return rfps.filter(effective_status=status) if status else rfps


def rfp_with_configuration(rfp: Rfp) -> Rfp:
    """Load the RFP's checklist, metrics, criteria and invitations in four queries,
    whatever their number."""
    prefetch_related_objects([rfp], *RFP_CONFIGURATION)
    return rfp


def rfp_cancellation_reason(rfp: Rfp) -> str:
    """The reason given when the RFP was cancelled (kept in its audit event)."""
    if rfp.status != Rfp.Status.CANCELLED:
        return ""
    event = (
        AuditEvent.objects.filter(
            target_type=ContentType.objects.get_for_model(Rfp),
            target_id=str(rfp.pk),
            action="rfp.transitioned",
            data__to=Rfp.Status.CANCELLED,
        )
        .order_by("-occurred_at")
        .first()
    )
    return event.data.get("note", "") if event else ""


def managed_buyer_organisations(user: AnyUser) -> QuerySet[Organisation]:
    """Buyer organisations in which the user may author RFPs (buyers, admins)."""
    memberships = membership_list_for(user).filter(role__in=[Role.BUYER, Role.ADMIN])
    return Organisation.objects.filter(
        id__in=memberships.values("organisation_id"), kind=Organisation.Kind.BUYER
    )


def vendor_organisation_list(
    *, exclude_invited_to: Rfp | None = None
) -> QuerySet[Organisation]:
    """Vendor organisations a buyer may invite (all vendors registered here)."""
    vendors = Organisation.objects.filter(kind=Organisation.Kind.VENDOR)
    if exclude_invited_to is not None:
        vendors = vendors.exclude(rfp_invitations=exclude_invited_to)
    return vendors.order_by("name")


def rfp_template_list_for(user: AnyUser) -> QuerySet[RfpTemplate]:
    """Templates of the buyer organisations the user authors RFPs for."""
    return RfpTemplate.objects.filter(
        buyer_organisation__in=managed_buyer_organisations(user)
    ).select_related("buyer_organisation")


def rfp_template_get_for(user: AnyUser, *, public_id: uuid.UUID) -> RfpTemplate | None:
    return rfp_template_list_for(user).filter(public_id=public_id).first()
