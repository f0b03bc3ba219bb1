"""What every page of one RFP shares: fetching it for the user, and its tabs."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.urls import reverse

from accounts.exceptions import ApplicationError
from accounts.permissions import can_view_audit_trail
from procurement.models import Rfp
from procurement.permissions import (
    bidding_organisation,
    can_evaluate,
    can_manage_rfp,
    is_buyer_side,
)
from procurement.selectors.rfps import rfp_get_visible_or_404


def rfp_to_manage(request: HttpRequest, rfp_id: uuid.UUID) -> Rfp:
    """404 for an RFP the user may not know; 403 unless they author for its buyer."""
    rfp = rfp_get_visible_or_404(request.user, public_id=rfp_id)
    if not can_manage_rfp(request.user, rfp):
        raise PermissionDenied
    return rfp


def show_refusal(request: HttpRequest, exc: ApplicationError) -> None:
    """A refused action as error messages: one per problem, else the message."""
    for message in [p.message for p in exc.problems] or [exc.message]:
        messages.error(request, message)


@dataclass(frozen=True)
class Tab:
    key: str
    label: str
    url: str


def rfp_tabs(request: HttpRequest, rfp: Rfp) -> list[Tab]:
    """The tabs of the RFP page this user may open."""
    user, rid = request.user, rfp.public_id
    buyer_side = is_buyer_side(user, rfp)
    opened = not rfp.is_sealed
    tabs = [Tab("overview", "Overview", reverse("procurement:rfp_detail", args=[rid]))]
    if buyer_side or bidding_organisation(user, rfp) is not None:
        tabs.append(
            Tab(
                "clarifications",
                "Clarifications",
                reverse("procurement:rfp_clarifications", args=[rid]),
            )
        )
    # Everyone who sees the RFP sees the bids tab: sealed, it shows counts only.
    tabs.append(Tab("bids", "Bids", reverse("procurement:rfp_bids", args=[rid])))
    if opened and (can_evaluate(user, rfp) or can_manage_rfp(user, rfp)):
        tabs.append(
            Tab(
                "evaluation",
                "Evaluation",
                reverse("procurement:rfp_evaluation", args=[rid]),
            )
        )
    if opened and buyer_side:
        tabs.append(
            Tab(
                "comparison",
                "Comparison",
                reverse("procurement:rfp_comparison", args=[rid]),
            )
        )
    if opened and buyer_side:  # evaluators confirm awards there
        tabs.append(Tab("award", "Award", reverse("procurement:rfp_award", args=[rid])))
    if opened:  # the gates app shows a vendor only its own gates
        tabs.append(Tab("gates", "Gates", reverse("gates:board", args=[rid])))
    if can_view_audit_trail(user) and not bidding_organisation(user, rfp):
        tabs.append(
            Tab("audit", "Audit trail", reverse("procurement:rfp_audit", args=[rid]))
        )
    return tabs


def rfp_page_context(request: HttpRequest, rfp: Rfp, active: str, **extra: object):
    return {
        "rfp": rfp,
        "tabs": rfp_tabs(request, rfp),
        "active_tab": active,
        "can_manage": can_manage_rfp(request.user, rfp),
        **extra,
    }
