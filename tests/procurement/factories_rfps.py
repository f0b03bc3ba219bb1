"""Helpers for the RFP authoring, lifecycle and deadline tests."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import factory
from factory.django import DjangoModelFactory

from accounts.models import Organisation
from accounts.selectors import clock
from procurement.lib.defaults import default_configuration
from procurement.models import Clarification, Rfp
from procurement.services.rfp_lifecycle import rfp_publish
from procurement.services.rfps import rfp_create, rfp_invite_vendor
from tests.accounts.factories import UserFactory
from tests.procurement import factories as base
from tests.procurement.factories import RfpFactory


def draft_rfp(
    buyer_org: Organisation,
    *invited: Organisation,
    reference: str = "RFP-T-900",
    min_bids: int = 1,
    **fields: Any,
) -> Rfp:
    """A draft made by the service, pre-filled with the defaults, two weeks to the
    deadline and one to questions by the procurement clock."""
    fields.setdefault(
        "configuration", {**default_configuration(), "min_bids": min_bids}
    )
    now = clock.now()
    fields.setdefault("submission_deadline", now + timedelta(days=14))
    fields.setdefault("questions_deadline", now + timedelta(days=7))
    rfp = rfp_create(
        reference=reference,
        title="KV-cache tiering",
        buyer_organisation=buyer_org,
        actor=None,
        **fields,
    )
    for vendor in invited:
        rfp_invite_vendor(rfp=rfp, vendor=vendor, actor=None)
    return rfp


def published_rfp(
    buyer_org: Organisation, *invited: Organisation, **fields: Any
) -> Rfp:
    return rfp_publish(rfp=draft_rfp(buyer_org, *invited, **fields), actor=None)


SubmittedBidFactory = base.BidFactory


class QuestionFactory(DjangoModelFactory[Clarification]):
    """An unanswered clarification (``answered=True`` for one with its answer)."""

    class Meta:
        model = Clarification

    rfp = factory.SubFactory(RfpFactory, published=True)
    asked_by_organisation = factory.LazyAttribute(
        lambda c: c.rfp.invited_vendors.first()
    )
    asked_by = factory.SubFactory(UserFactory)
    question = "Which NVMe-oF transport do you expect, RDMA or TCP?"

    class Params:
        answered = factory.Trait(
            answer="Either; say which you used.",
            answered_at=factory.LazyFunction(clock.now),
        )
