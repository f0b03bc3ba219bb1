"""Reading clarifications and addenda as the caller may see them.

The buyer side (buyers, evaluators, admins of the buying organisation) sees every
question, labelled "Vendor question #N" in the order they were asked, and never who
asked it. An invited vendor sees every answered question as "Q&A N" (in the order
of the answers) and its own questions, answered or pending; another vendor's
pending question does not exist for it (404 by any URL)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from django.contrib.auth.models import AnonymousUser, User
from django.db import models
from django.db.models import F, Q, QuerySet

from accounts.models import Organisation
from procurement.lib.requirements import diff as requirement_changes
from procurement.lib.requirements import show_value
from procurement.models import Addendum, Clarification, Rfp
from procurement.permissions import bidding_organisation, is_buyer_side
from procurement.selectors.rfps import rfp_get_visible

AnyUser = User | AnonymousUser


@dataclass(frozen=True)
class ClarificationScope:
    """What one user is on one RFP's clarifications: buyer side, or the invited
    vendor organisation they act for (vendor or admin role), or neither."""

    buyer_side: bool
    organisation: Organisation | None

    @property
    def can_read(self) -> bool:
        return self.buyer_side or self.organisation is not None

    @property
    def can_ask(self) -> bool:
        return self.organisation is not None and not self.buyer_side


def clarification_scope_for(user: AnyUser, rfp: Rfp) -> ClarificationScope:
    return ClarificationScope(is_buyer_side(user, rfp), bidding_organisation(user, rfp))


def clarification_list_visible_to(
    scope: ClarificationScope, *, rfp: Rfp
) -> QuerySet[Clarification]:
    """Unanswered first (oldest first), then answered in the order of the answers."""
    clarifications = rfp.clarifications.order_by(
        F("answered_at").asc(nulls_first=True), "created_at", "id"
    )
    if scope.buyer_side:
        return clarifications
    if scope.organisation is None:
        return clarifications.none()
    return clarifications.filter(
        Q(answered_at__isnull=False) | Q(asked_by_organisation=scope.organisation)
    )


def clarification_get_visible(
    scope: ClarificationScope, *, rfp: Rfp, public_id: uuid.UUID
) -> Clarification | None:
    return (
        clarification_list_visible_to(scope, rfp=rfp)
        .filter(public_id=public_id)
        .first()
    )


def clarification_find_visible(
    user: AnyUser, *, public_id: uuid.UUID
) -> tuple[Clarification, ClarificationScope] | None:
    """A clarification by its id alone, if the user may know it exists."""
    found = Clarification.objects.filter(public_id=public_id).values_list(
        "rfp__public_id", flat=True
    )
    rfp = rfp_get_visible(user, public_id=found[0]) if found else None
    if rfp is None:
        return None
    scope = clarification_scope_for(user, rfp)
    clarification = clarification_get_visible(scope, rfp=rfp, public_id=public_id)
    return (clarification, scope) if clarification is not None else None


@dataclass(frozen=True)
class ClarificationRow:
    """One clarification as the caller sees it. ``is_own`` is true only for the
    asking organisation's members; nothing here names the asker."""

    clarification: Clarification
    label: str
    public_label: str
    is_own: bool
    show_asked_at: bool


def _numbers(rfp: Rfp, *, answered: bool) -> dict[int, int]:
    clarifications = rfp.clarifications.all()
    if answered:
        clarifications = clarifications.filter(answered_at__isnull=False)
        clarifications = clarifications.order_by("answered_at", "id")
    else:
        clarifications = clarifications.order_by("created_at", "id")
    ids = clarifications.values_list("id", flat=True)
    return {pk: number for number, pk in enumerate(ids, start=1)}


def clarification_rows(
    scope: ClarificationScope, *, rfp: Rfp, clarifications: Iterable[Clarification]
) -> list[ClarificationRow]:
    """Label the clarifications of one RFP (two queries, however many there are)."""
    asked = _numbers(rfp, answered=False) if scope.buyer_side else {}
    public = _numbers(rfp, answered=True)
    org_id = scope.organisation.id if scope.organisation is not None else None
    rows = []
    for c in clarifications:
        is_own = org_id is not None and c.asked_by_organisation_id == org_id
        public_label = f"Q&A {public[c.id]}" if c.id in public else ""
        if scope.buyer_side:
            label = f"Vendor question #{asked[c.id]}"
        else:
            label = public_label or "Your question"
        rows.append(
            ClarificationRow(c, label, public_label, is_own, scope.buyer_side or is_own)
        )
    return rows


def addendum_list_for(*, rfp: Rfp) -> QuerySet[Addendum]:
    return rfp.addenda.select_related("issued_by").order_by("number")


@dataclass(frozen=True)
class DiffRow:
    field: str
    label: str
    old: Any
    new: Any
    old_display: str
    new_display: str
    is_long_text: bool


_FIELD_ORDER = {f.name: i for i, f in enumerate(Rfp._meta.fields)}
_LABELS = {
    "min_bids": "Minimum bids",
    "retest_clause": "Re-test clause",
    "retest_tolerance_pct": "Re-test tolerance (%)",
    "retest_vendor_funded": "Re-tests are vendor-funded",
    "retest_deadline_days": "Re-test deadline (days)",
    "retest_max_attempts": "Re-test attempts",
    "drift_policy": "Drift policy",
}


def _display(field: models.Field, value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(field, models.DateTimeField):
        return f"{datetime.fromisoformat(value):%Y-%m-%d %H:%M} UTC"
    if isinstance(field, models.BooleanField):
        return "yes" if value else "no"
    if isinstance(field, models.JSONField):
        return json.dumps(value, sort_keys=True) if value else "the defaults"
    return str(value) if value != "" else "(empty)"


def _requirement_rows(old: Any, new: Any) -> list[DiffRow]:
    """One row per changed place of the requirements document."""
    return [
        DiffRow(
            field=f"requirements.{change.path}",
            label=f"Requirements: {change.path}",
            old=change.old,
            new=change.new,
            old_display="none" if change.old is None else show_value(change.old),
            new_display="none" if change.new is None else show_value(change.new),
            is_long_text=False,
        )
        for change in requirement_changes(old, new)
    ]


def addendum_diff_rows(addendum: Addendum) -> list[DiffRow]:
    """The addendum's changes, in the RFP's field order, ready to show; the
    requirements document path by path."""
    rows = []
    for name in sorted(addendum.changes, key=lambda n: _FIELD_ORDER.get(n, 999)):
        old, new = addendum.changes[name]
        if name == "requirements":
            rows.extend(_requirement_rows(old, new))
            continue
        # an addendum changes the RFP's own editable fields, never a relation
        field = cast("models.Field[Any, Any]", Rfp._meta.get_field(name))
        rows.append(
            DiffRow(
                field=name,
                label=_LABELS.get(name, str(field.verbose_name).capitalize()),
                old=old,
                new=new,
                old_display=_display(field, old),
                new_display=_display(field, new),
                is_long_text=isinstance(field, models.TextField),
            )
        )
    return rows


@dataclass(frozen=True)
class AddendumView:
    addendum: Addendum
    rows: list[DiffRow]


def addendum_views_for(*, rfp: Rfp) -> list[AddendumView]:
    return [AddendumView(a, addendum_diff_rows(a)) for a in addendum_list_for(rfp=rfp)]
