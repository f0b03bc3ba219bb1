"""Reads of re-test obligations: the ones a user may see (a vendor: its own),
with their status by the clock (reads never write: the beat task persists
expiry)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from accounts.selectors import clock
from accounts.selectors.users import organisation_ids_for
from gates.models import RetestObligation
from gates.permissions import VENDOR_ROLES, AnyUser, gate_rows_visible_q

LIVE = (RetestObligation.Status.OPEN, RetestObligation.Status.SCHEDULED)


def obligation_list_visible_to(user: AnyUser) -> QuerySet[RetestObligation]:
    return RetestObligation.objects.filter(gate_rows_visible_q(user)).select_related(
        "rfp", "vendor_organisation"
    )


def obligation_list_due_for(
    user: AnyUser, now: datetime | None = None
) -> list[RetestObligation]:
    """The live obligations of the user's own vendor organisations whose
    deadline has not passed, soonest deadline first: the re-tests they owe."""
    now = now or clock.now()
    own = organisation_ids_for(user, *VENDOR_ROLES)
    if not own:
        return []
    found = obligation_list_visible_to(user).filter(
        vendor_organisation_id__in=own, status__in=LIVE, deadline__gt=now
    )
    return [o for o in found.order_by("deadline", "id") if o.status_at(now) in LIVE]


def retest_upload_window(rfp: Any, organisation: Any) -> str:
    """The sentence naming ``organisation``'s open re-test obligation on ``rfp``
    ("" if none is open by the clock now): while one is open the vendor may
    upload the revised bundle the re-test will run."""
    now = clock.now()
    live = RetestObligation.objects.filter(
        rfp=rfp,
        vendor_organisation=organisation,
        status=RetestObligation.Status.OPEN,
        deadline__gt=now,
    ).order_by("deadline")
    obligation = live.first()
    if obligation is None:
        return ""
    return (
        f"A re-test of {obligation.gate} is owed by "
        f"{obligation.deadline:%Y-%m-%d %H:%M} UTC: upload the revised bundle "
        "it will run"
    )


def revalidation_canary_pending(obligation: RetestObligation) -> str:
    """Why the re-validation campaign of ``obligation`` must wait: the canary
    gate of its plan is still being re-validated on the canary hosts ("" when
    it need not wait)."""
    if not obligation.is_revalidation or not obligation.canary_hosts:
        return ""
    canary = [
        g["name"] for g in obligation.plan.plan.get("gates", [])
        if g.get("stage") == "canary"
    ]  # fmt: skip
    if obligation.gate in canary:
        return ""
    waiting = RetestObligation.objects.filter(
        plan_id=obligation.plan_id,
        gate__in=canary,
        kind=RetestObligation.Kind.UPDATE_REVALIDATION,
        status__in=LIVE,
    ).first()
    if waiting is None:
        return ""
    return (
        f"Re-validate the update on the canary hosts first: the gate "
        f"{waiting.gate} ({', '.join(obligation.canary_hosts)}) has not passed yet."
    )
