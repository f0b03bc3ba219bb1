"""Release test helpers: an RFP awarded to a vendor (state set directly, as
factories do: the award service is procurement's and tested there), and the
workflow's steps driven through the services."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from accounts.models import Organisation
from accounts.selectors import clock
from artifacts.models import Release
from artifacts.selectors.release import release_notice_days
from artifacts.services.release import release_request
from artifacts.services.release_execution import release_approve
from procurement.lib.defaults import DEFAULT_TERMS
from procurement.models import Award, Rfp
from tests.procurement.factories import BidFactory

ESCROW_CLAUSE = str(DEFAULT_TERMS["escrow_clause"])
BREACH = "The vendor stopped answering support tickets on 2026-03-01."


def award_to(rfp: Rfp, vendor: Organisation, buyer: Any) -> Award:
    """``rfp`` awarded to ``vendor``, its contract terms frozen now."""
    now = clock.now()
    Rfp.objects.filter(pk=rfp.pk).update(
        status=Rfp.Status.AWARDED, terms_frozen_at=now, escrow_clause=ESCROW_CLAUSE
    )
    rfp.refresh_from_db()
    bid = BidFactory.create(rfp=rfp, vendor_organisation=vendor)
    return Award.objects.create(
        rfp=rfp,
        bid=bid,
        rationale="Best reproduced numbers and the lowest TCO of the field.",
        decided_by=buyer,
        decided_at=now,
        standstill_ends_at=now + timedelta(days=10),
    )


def request_breach(rfp: Rfp, buyer: Any) -> Release:
    return release_request(
        rfp=rfp, condition=Release.Condition.BREACH, statement=BREACH, actor=buyer
    )


def after_notice(clock_fixture: Any) -> None:
    clock_fixture.advance(days=release_notice_days(), seconds=1)


def approve_both(release: Release, buyer: Any, auditor: Any, **extra: Any) -> Release:
    release_approve(release=release, actor=buyer, **extra)
    return release_approve(release=release, actor=auditor, **extra)
