"""RFP lifecycle moves: publish and the one status-changing service,
``rfp_transition`` (closing at the deadline lives in
``procurement.services.deadlines``, opening in ``procurement.services.opening``,
cancelling in ``procurement.services.cancellation``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction

from accounts.exceptions import InvalidTransition, Problem
from accounts.selectors import clock
from accounts.services.actor import Actor
from accounts.services.transitions import transition
from procurement.exceptions import ProcurementError
from procurement.models import RFP_TRANSITIONS, Rfp
from procurement.services.rfp_common import (
    clean_or_refuse,
    locked_rfp,
    notify_vendors,
)


def rfp_publish_problems(rfp: Rfp) -> list[Problem]:
    """Why the draft cannot be published yet (empty when it can). Reads the
    criteria and invitations through ``.all()``, so prefetching them helps."""
    now, problems = clock.now(), []
    weights = sum(c.weight for c in rfp.criteria.all())
    if weights != 100:
        problems.append(Problem("weights", _weights_message(weights), "criteria"))
    if rfp.submission_deadline <= now:
        message = "The submission deadline has passed; move it into the future."
        problems.append(Problem("deadline_passed", message, "submission_deadline"))
    questions = rfp.questions_deadline
    if questions is not None and questions >= rfp.submission_deadline:
        message = "The questions deadline must come before the submission deadline."
        problems.append(Problem("questions_deadline", message, "questions_deadline"))
    elif questions is not None and questions <= now:
        message = "The questions deadline has passed; move it into the future."
        problems.append(Problem("questions_deadline", message, "questions_deadline"))
    invited = len(rfp.invited_vendors.all())
    if invited == 0:
        message = "Invite at least one vendor."
        problems.append(Problem("no_vendors", message, "invited_vendors"))
    elif invited < rfp.min_bids:
        message = (
            f"At least {rfp.min_bids} bids are required but only {invited} vendor(s) "
            "are invited: invite more vendors or lower the minimum number of bids."
        )
        problems.append(Problem("min_bids", message, "min_bids"))
    return problems


def _weights_message(total: int) -> str:
    if total == 0:
        return "Add evaluation criteria whose weights add up to 100."
    return f"The criterion weights add up to {total}; they must add up to 100."


@transaction.atomic
def rfp_publish(*, rfp: Rfp, actor: Actor) -> Rfp:
    """Publish a complete draft and notify every member of each invited vendor."""
    rfp = locked_rfp(rfp)
    if rfp.status != Rfp.Status.DRAFT:
        raise InvalidTransition(
            entity="RFP", current=rfp.status, requested=Rfp.Status.PUBLISHED
        )
    clean_or_refuse(rfp)
    problems = rfp_publish_problems(rfp)
    if problems:
        raise ProcurementError(
            "The RFP is not ready to publish: " + " ".join(p.message for p in problems),
            code="not_ready",
            problems=problems,
        )
    rfp = rfp_transition(rfp=rfp, to=Rfp.Status.PUBLISHED, actor=actor)
    vendor_ids = rfp.invited_vendors.values_list("pk", flat=True)
    notify_vendors(rfp, vendor_ids, "rfp_invited")
    return rfp


@transaction.atomic
def rfp_transition(
    *,
    rfp: Rfp,
    to: str,
    actor: Actor,
    action: str = "rfp.transitioned",
    note: str = "",
    data: Mapping[str, Any] | None = None,
    fields: Mapping[str, Any] | None = None,
) -> Rfp:
    """The one place an RFP's status changes (``RFP_TRANSITIONS``, through
    ``transition``): locks the RFP, sets ``fields`` with the status (and the
    closed/opened stamp), saves, and writes the action's one audit row. Verb
    services check their own preconditions, then call it with their ``action``
    and its details in ``data``, and write no second row."""
    stamps: dict[str, str] = {
        Rfp.Status.CLOSED: "closed_at",
        Rfp.Status.OPENED: "opened_at",
    }
    stamp = stamps.get(to)
    return transition(
        locked_rfp(rfp),
        to,
        actor=actor,
        table=RFP_TRANSITIONS,
        entity="RFP",
        action=action,
        fields={**(fields or {}), **({stamp: clock.now()} if stamp else {})},
        organisation=rfp.buyer_organisation,
        data={"rfp": rfp.reference, "note": note, **(data or {})},
    )
