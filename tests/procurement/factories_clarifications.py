from __future__ import annotations

from datetime import timedelta
from typing import Any

import factory
from factory.django import DjangoModelFactory

from accounts.models import Organisation
from accounts.selectors import clock
from procurement.models import Clarification, Rfp
from tests.accounts.factories import UserFactory
from tests.procurement import factories as base
from tests.procurement.factories import RfpFactory


def open_rfp(buyer_org: Organisation, *invited: Organisation, **fields: Any) -> Rfp:
    """A published RFP, two weeks to the deadline and one to questions, by the
    procurement clock."""
    now = clock.now()
    fields.setdefault("submission_deadline", now + timedelta(days=14))
    fields.setdefault("questions_deadline", now + timedelta(days=7))
    return RfpFactory.create(
        buyer_organisation=buyer_org, published=True, invited=list(invited), **fields
    )


class ClarificationFactory(DjangoModelFactory[Clarification]):
    class Meta:
        model = Clarification

    rfp = factory.SubFactory(RfpFactory, published=True)
    asked_by_organisation = factory.LazyAttribute(
        lambda c: c.rfp.invited_vendors.first()
    )
    asked_by = factory.SubFactory(UserFactory)
    question = factory.Faker("sentence", nb_words=10)

    class Params:
        answered = factory.Trait(
            answer=factory.Faker("sentence", nb_words=12),
            answered_at=factory.LazyFunction(clock.now),
        )


BidFactory = base.BidFactory
