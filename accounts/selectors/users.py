from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser, User
from django.core.paginator import Page, Paginator
from django.db.models import (
    BooleanField,
    Case,
    CharField,
    F,
    IntegerField,
    Q,
    QuerySet,
    Value,
    When,
    Window,
)
from django.db.models.fields.json import KT
from django.db.models.functions import Lag

from accounts.models import (
    ApiToken,
    AuditEvent,
    Membership,
    Notification,
    Organisation,
    Role,
)
from accounts.selectors.audit_scope import rfp_scope, shared_events

AnyUser = User | AnonymousUser


def membership_list_for(user: AnyUser) -> QuerySet[Membership]:
    if not user.is_authenticated:
        return Membership.objects.none()
    return Membership.objects.filter(user=user).select_related("organisation")


Memberships = tuple[tuple[str, int], ...]  # (role, organisation id) pairs
# The request under way: a token set when a request starts and dropped when it
# ends (``memberships_cache_start``/``_end``, connected in accounts.apps). A user
# object keeps its memberships with the token they were read under, so that a page
# asking who may see what fifty times reads them once, and a user object that
# outlives its request (a test client's forced user) reads them again in the next
# one. Outside a request (tasks, commands, tests calling selectors) nothing is kept.
_REQUEST: ContextVar[object | None] = ContextVar("reprogate_request", default=None)
_KEPT = "_reprogate_memberships"


def memberships_cache_start(**kwargs: Any) -> None:
    """``request_started``: a new request, a new token."""
    _REQUEST.set(object())


def memberships_cache_end(**kwargs: Any) -> None:
    """``request_finished``: nothing kept outlives its request."""
    _REQUEST.set(None)


def memberships_forget(user: AnyUser) -> None:
    """Drop the memberships kept on ``user`` (they changed in this request)."""
    user.__dict__.pop(_KEPT, None)


def _memberships(user: AnyUser) -> Memberships:
    if not user.is_authenticated:
        return ()
    token = _REQUEST.get()
    kept: tuple[object, Memberships] | None = user.__dict__.get(_KEPT)
    if token is not None and kept is not None and kept[0] is token:
        return kept[1]
    rows = Membership.objects.filter(user=user).values_list("role", "organisation_id")
    found = tuple(rows)
    if token is not None:
        user.__dict__[_KEPT] = (token, found)
    return found


def user_roles(user: AnyUser) -> frozenset[str]:
    """Every role the user holds in any organisation."""
    return frozenset(role for role, _ in _memberships(user))


def organisation_ids_for(user: AnyUser, *roles: str) -> set[int]:
    """Organisations in which the user holds one of ``roles`` (any role if none)."""
    return {org for role, org in _memberships(user) if not roles or role in roles}


def buyer_organisation_ids_served_by(user: AnyUser, *roles: str) -> set[int]:
    """Buyer organisations that engaged one where the user holds ``roles``."""
    own = organisation_ids_for(user, *roles)
    if not own:
        return set()
    return set(
        Organisation.objects.filter(
            kind=Organisation.Kind.BUYER, engages__in=own
        ).values_list("id", flat=True)
    )


def audit_trail_organisation_ids(user: AnyUser) -> set[int]:
    """Whose trail the user may read: their own buyer organisation (buyers, admins)
    and the buyers that engaged the user's audit organisation (auditors)."""
    buyer_side = organisation_ids_for(user, Role.BUYER, Role.ADMIN)
    return buyer_side | buyer_organisation_ids_served_by(user, Role.AUDITOR)


def audit_event_list_visible_to(
    user: AnyUser,
    *,
    action: str = "",
    actor: str = "",
    target_type: str = "",
    since: date | None = None,
    until: date | None = None,
    rfp: str = "",
    vendor_events: bool = False,
) -> QuerySet[AuditEvent]:
    """The user's trail (``audit_trail_organisation_ids``), newest first; with
    ``vendor_events``, also the vendors' events on the buyers' RFPs
    (``accounts.selectors.audit_scope``), each row annotated ``sealed``: a caller that
    asks for them shows them through ``accounts.selectors.audit_rows``, which seals."""
    own_ids = audit_trail_organisation_ids(user)
    own = Q(organisation_id__in=own_ids)
    scope = rfp_scope.get()
    visible, sealed = own, Q(pk__in=[])
    if vendor_events and scope is not None and own_ids:
        shared, sealed = shared_events(scope, own_ids, rfp)
        visible = own | shared
        sealed &= ~own
    events = AuditEvent.objects.filter(visible).annotate(
        sealed=_flag(sealed), outside=_flag(~own)
    )
    if rfp:
        events = events.filter(
            Q(rfp_reference=rfp) | Q(action__startswith="signing_key.") & ~own
        )
    if action:
        events = events.filter(Q(action=action) | Q(action__startswith=f"{action}."))
    if actor:  # never finds a sealed row: that would name its actor
        events = events.filter(actor_repr=actor, sealed=False)
    if target_type:
        events = events.filter(target_type__model=target_type)
    if since is not None:
        events = events.filter(occurred_at__date__gte=since)
    if until is not None:
        events = events.filter(occurred_at__date__lte=until)
    return events.select_related("target_type", "organisation")


def _flag(condition: Q) -> Case:
    return Case(
        When(condition, then=Value(True)),
        default=Value(False),
        output_field=BooleanField(),
    )


# Runner noise: consecutive rows of these actions with one ``data["campaign"]``
# are one line of the trail page (every row stays in the exports).
GROUPED_ACTIONS = ("run.transitioned",)
NEWEST_FIRST = (F("occurred_at").desc(), F("id").desc())


@dataclass(frozen=True)
class AuditPage:
    page: Page[AuditEvent]
    # the first (newest) event of every line, and the events of grouped lines
    heads: Sequence[AuditEvent]
    groups: dict[int, list[AuditEvent]]


def audit_event_page(
    events: QuerySet[AuditEvent], *, number: str | int | None, size: int
) -> AuditPage:
    """Page ``number`` of ``events`` counted in lines: a run of consecutive
    grouped events of one campaign is one line. Three queries, whatever the
    number of rows (the count, the page's heads, the grouped lines' events)."""
    group = Case(
        When(action__in=GROUPED_ACTIONS, then=KT("data__campaign")),
        default=Value(None),
        output_field=CharField(),
    )
    marked = events.annotate(line_group=group).annotate(
        line_head=Case(
            When(line_group__isnull=True, then=Value(1)),
            When(line_group=Window(Lag("line_group"), order_by=NEWEST_FIRST), then=0),
            default=Value(1),
            output_field=IntegerField(),
        )
    )
    heads_qs = marked.filter(line_head=1).order_by(*NEWEST_FIRST)
    paginator: Paginator[AuditEvent] = Paginator(heads_qs, size)
    page = paginator.get_page(number)
    start = (page.number - 1) * size
    window = list(heads_qs[start : start + size + 1])  # and the next line's head
    heads = window[:size]
    spans = [  # (head, the next line's head) of every grouped line
        (head, window[n + 1] if n + 1 < len(window) else None)
        for n, head in enumerate(heads)
        if head.line_group is not None
    ]
    groups: dict[int, list[AuditEvent]] = {head.pk: [] for head, _ in spans}
    if spans:
        within = Q()
        for head, after in spans:
            span = _not_after(head)
            within |= span & ~_not_after(after) if after is not None else span
        for event in events.filter(within).order_by(*NEWEST_FIRST):
            for head, after in spans:
                if _key(after) < _key(event) <= _key(head):
                    groups[head.pk].append(event)
                    break
    return AuditPage(page, heads, groups)


def _key(event: AuditEvent | None) -> tuple[Any, int]:
    if event is None:
        return (datetime.min.replace(tzinfo=UTC), 0)
    return (event.occurred_at, event.pk)


def _not_after(event: AuditEvent) -> Q:
    """Events at or before ``event`` in the trail's order (older, or it)."""
    return Q(occurred_at__lt=event.occurred_at) | Q(
        occurred_at=event.occurred_at, id__lte=event.pk
    )


def audit_rfp_references(user: AnyUser) -> list[str]:
    """The RFPs whose trail the user may filter by (the RFP filter's choices)."""
    scope, own_ids = rfp_scope.get(), audit_trail_organisation_ids(user)
    if scope is None or not own_ids:
        return []
    return sorted(scope.references(own_ids))


def api_token_list_for(user: AnyUser) -> QuerySet[ApiToken]:
    if not user.is_authenticated:
        return ApiToken.objects.none()
    return ApiToken.objects.filter(user=user)


def notification_list_for(user: AnyUser) -> QuerySet[Notification]:
    if not user.is_authenticated:
        return Notification.objects.none()
    return Notification.objects.filter(recipient=user)


def user_list_in(organisation_ids: Iterable[int], *roles: str) -> QuerySet[Any]:
    """Active members of these organisations (holding one of ``roles``, if given)."""
    memberships = Membership.objects.filter(organisation_id__in=list(organisation_ids))
    if roles:
        memberships = memberships.filter(role__in=roles)
    return get_user_model().objects.filter(
        is_active=True, id__in=memberships.values("user_id")
    )
