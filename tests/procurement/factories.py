from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import cast

import factory
from django.utils import timezone
from factory.django import DjangoModelFactory

from accounts.models import Organisation
from accounts.selectors import clock
from procurement.models import Bid, Rfp
from tests.accounts.factories import OrganisationFactory


class RfpFactory(DjangoModelFactory[Rfp]):
    class Meta:
        model = Rfp
        skip_postgeneration_save = True

    reference = factory.Sequence(lambda n: f"RFP-T-{n:03d}")
    title = factory.Faker("sentence", nb_words=5)
    buyer_organisation = factory.SubFactory(
        OrganisationFactory, kind=Organisation.Kind.BUYER
    )
    submission_deadline = factory.LazyFunction(
        lambda: timezone.now() + timedelta(days=14)
    )
    status = Rfp.Status.DRAFT

    class Params:
        published = factory.Trait(status=Rfp.Status.PUBLISHED)

    @factory.post_generation
    def invited(self, create: bool, extracted: list[Organisation] | None) -> None:
        if create and extracted:
            cast(Rfp, self).invited_vendors.add(*extracted)  # the built RFP


class BidFactory(DjangoModelFactory[Bid]):
    """A submitted bid set directly (no receipt, no audit event): the RFP's first
    invited vendor unless ``vendor_organisation`` is given."""

    class Meta:
        model = Bid

    rfp = factory.SubFactory(RfpFactory, published=True)
    vendor_organisation = factory.LazyAttribute(
        lambda b: (
            b.rfp.invited_vendors.first()
            or OrganisationFactory.create(kind=Organisation.Kind.VENDOR)
        )
    )
    status = Bid.Status.SUBMITTED
    commitment: factory.declarations.BaseDeclaration = factory.Sequence(
        lambda n: hashlib.sha256(f"bid-{n}".encode()).hexdigest()
    )
    submitted_at = factory.LazyFunction(clock.now)
