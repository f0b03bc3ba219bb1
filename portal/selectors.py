"""Dashboards read across apps, through each app's selectors only."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Final

from django.contrib.auth.models import AnonymousUser, User
from django.urls import reverse

from accounts.models import Role
from accounts.selectors import clock
from accounts.selectors.users import (
    audit_event_list_visible_to,
    membership_list_for,
    user_roles,
)
from artifacts.selectors.escrow import escrow_summary_for
from artifacts.selectors.fixity import fixity_summary_for
from artifacts.selectors.release import release_summary_for
from artifacts.selectors.updates import update_list_own
from benchmarks.selectors.campaigns import campaign_list_needing_lab
from gates.selectors.attention import gate_attention_for
from procurement.models import Rfp
from procurement.selectors.attention import attention_for
from procurement.selectors.rfps import (
    rfp_list_taking_submissions,
    rfp_list_visible_to,
)

AnyUser = User | AnonymousUser
RECENT = 8

# What "Needs you now" lists for each role, said when nothing waits.
WAITS_FOR: Final[dict[str, str]] = {
    Role.BUYER: "questions to answer, bids to open or confirm, awards, and gate "
    "decisions to take or second",
    Role.ADMIN: "questions to answer, bids to open or confirm, awards, and gate "
    "decisions to take or second",
    Role.EVALUATOR: "scores due and gate promotions to second",
    Role.VENDOR: "invitations, deadlines, bids to re-confirm and the re-tests your "
    "organisation owes",
    Role.LABOPS: "re-tests waiting for the lab, gates ready to run and lab "
    "deviations (campaigns running or with failed runs are listed below)",
    Role.AUDITOR: "new transparency-log entries to check and escrow releases "
    "waiting for your approval",
}


@dataclass(frozen=True)
class Notice:
    """An item of "Needs you now" that belongs to no RFP."""

    kind: str
    text: str
    url: str


def waits_for(roles: Collection[str]) -> list[str]:
    """The empty state of "Needs you now": what would appear for these roles."""
    found = []
    for role, text in WAITS_FOR.items():
        if role in roles and text not in found:
            found.append(text)
    return found


def _auditor_attention(user: AnyUser, escrow: Any, releases: Any) -> list[Any]:
    """An auditor's items: the log grown since their last check, and releases
    waiting for their approval (one line each; the escrow panel has details)."""
    items: list[Any] = []
    unseen = getattr(escrow, "unseen_entries", None)
    if escrow is not None and (unseen is None or unseen > 0) and escrow.log_size:
        text = (
            "Check the transparency log: you have not checked it yet"
            if unseen is None
            else f"Check the transparency log: {unseen} new entr"
            f"{'y' if unseen == 1 else 'ies'} since your last check"
        )
        items.append(Notice("log_check", text, reverse("artifacts:escrow_log")))
    waiting = getattr(releases, "waiting_for_you", 0)
    if waiting:
        text = f"{waiting} escrow release{'s' if waiting != 1 else ''} wait for you"
        items.append(Notice("release", text, reverse("artifacts:release_list")))
    return items


def dashboard_for(user: AnyUser) -> dict[str, object]:
    """What needs this user now, one panel per role they hold."""
    roles = user_roles(user)
    rfps = rfp_list_visible_to(user)
    context: dict[str, object] = {
        "roles": roles,
        "memberships": list(membership_list_for(user)),
        "attention": attention_for(user) + gate_attention_for(user),
    }
    if roles & {Role.BUYER, Role.ADMIN}:
        context["buyer_rfps"] = list(
            rfps.exclude(status__in=[Rfp.Status.AWARDED, Rfp.Status.CANCELLED])[:RECENT]
        )
        context["bids_to_open"] = list(  # by the clock, before the sweep records it
            rfps.filter(effective_status=Rfp.Status.CLOSED)[:RECENT]
        )
    if Role.EVALUATOR in roles:
        context["rfps_in_evaluation"] = list(
            rfps.filter(status=Rfp.Status.OPENED)[:RECENT]
        )
    if Role.VENDOR in roles:
        context["invitations"] = list(
            rfp_list_taking_submissions(rfps, clock.now())[:RECENT]
        )
        context["update_deposits"] = list(update_list_own(user)[:RECENT])
    if Role.LABOPS in roles:
        context["lab_rfps"] = list(
            rfps.filter(status__in=[Rfp.Status.OPENED, Rfp.Status.AWARDED])[:RECENT]
        )
        context["lab_campaigns"] = list(campaign_list_needing_lab(user)[:RECENT])
    if roles & {Role.BUYER, Role.ADMIN, Role.AUDITOR}:
        context["recent_events"] = list(audit_event_list_visible_to(user)[:RECENT])
    if Role.AUDITOR in roles:
        context["audited_rfps"] = list(rfps[:RECENT])
    if roles & {Role.BUYER, Role.ADMIN, Role.AUDITOR, Role.VENDOR, Role.EVALUATOR}:
        context["escrow"] = escrow_summary_for(user)
        context["fixity"] = fixity_summary_for(user)  # buyers, admins, auditors
        context["releases"] = release_summary_for(user)
    if Role.AUDITOR in roles:
        context["notices"] = _auditor_attention(
            user, context.get("escrow"), context.get("releases")
        )
    context["waits_for"] = waits_for(roles)
    return context
