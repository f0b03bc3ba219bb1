"""Dashboards read across apps, through each app's selectors only."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User

from accounts import clock
from accounts.models import Role
from accounts.selectors import (
    audit_event_list_visible_to,
    membership_list_for,
    user_roles,
)
from artifacts.selectors.escrow import escrow_summary_for
from artifacts.selectors.fixity import fixity_summary_for
from artifacts.selectors.release import release_summary_for
from gates.selectors.attention import gate_attention_for
from procurement.models import Rfp
from procurement.selectors.attention import attention_for
from procurement.selectors.rfps import (
    rfp_list_taking_submissions,
    rfp_list_visible_to,
)

AnyUser = User | AnonymousUser
RECENT = 8


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
    if Role.LABOPS in roles:
        context["lab_rfps"] = list(
            rfps.filter(status__in=[Rfp.Status.OPENED, Rfp.Status.AWARDED])[:RECENT]
        )
    if roles & {Role.BUYER, Role.ADMIN, Role.AUDITOR}:
        context["recent_events"] = list(audit_event_list_visible_to(user)[:RECENT])
    if Role.AUDITOR in roles:
        context["audited_rfps"] = list(rfps[:RECENT])
    if roles & {Role.BUYER, Role.ADMIN, Role.AUDITOR, Role.VENDOR, Role.EVALUATOR}:
        context["escrow"] = escrow_summary_for(user)
        context["fixity"] = fixity_summary_for(user)  # buyers, admins, auditors
        context["releases"] = release_summary_for(user)
    return context
