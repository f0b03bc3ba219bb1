"""Factories for the evaluation area: opened RFPs with criteria and bids, cost
inputs, score sheets. They set state directly; transitions are tested through the
services."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import factory
from django.utils import timezone
from factory.django import DjangoModelFactory

from accounts.models import Organisation, Role
from procurement.models import (
    Bid,
    BidDocument,
    CostModelInput,
    Criterion,
    RequiredArtifact,
    RequiredMetric,
    Rfp,
    Score,
    ScoreSheet,
    TcoFormula,
)
from tests.accounts.factories import MembershipFactory, OrganisationFactory, UserFactory
from tests.procurement import factories as base
from tests.procurement.factories import RfpFactory


class CriterionFactory(DjangoModelFactory[Criterion]):
    class Meta:
        model = Criterion

    rfp = factory.SubFactory(RfpFactory)
    name = factory.Sequence(lambda n: f"Criterion {n}")
    weight = 50
    position = factory.Sequence(lambda n: n)


class RequiredMetricFactory(DjangoModelFactory[RequiredMetric]):
    class Meta:
        model = RequiredMetric

    rfp = factory.SubFactory(RfpFactory)
    name = factory.Sequence(lambda n: f"metric_{n}_ms")
    stats = "p50,p99"
    position = factory.Sequence(lambda n: n)


class RequiredArtifactFactory(DjangoModelFactory[RequiredArtifact]):
    class Meta:
        model = RequiredArtifact

    rfp = factory.SubFactory(RfpFactory)
    kind = "workload"
    title = factory.Sequence(lambda n: f"Artifact {n}")
    mandatory = True


class BidFactory(base.BidFactory):
    rfp = factory.SubFactory(RfpFactory, status=Rfp.Status.OPENED)


class BidDocumentFactory(DjangoModelFactory[BidDocument]):
    class Meta:
        model = BidDocument

    bid = factory.SubFactory(BidFactory)
    name = factory.Sequence(lambda n: f"doc-{n}.pdf")
    sha256 = factory.Sequence(lambda n: hashlib.sha256(f"doc-{n}".encode()).hexdigest())
    size = 1024
    storage_key = factory.LazyAttribute(lambda d: f"blobs/{d.sha256}")
    uploaded_at = factory.LazyFunction(timezone.now)


class CostModelInputFactory(DjangoModelFactory[CostModelInput]):
    """The hand-computed example of test_tco.py: 384,995.00 EUR/year."""

    class Meta:
        model = CostModelInput

    bid = factory.SubFactory(BidFactory)
    currency = "EUR"
    hardware_cost = Decimal("1200000.00")
    amortisation_years = Decimal("4.0")
    power_draw_kw = Decimal("12.500")
    energy_price_per_kwh = Decimal("0.1500")
    rack_units = 10
    rack_unit_cost_per_year = Decimal("1200.00")
    support_cost_per_year = Decimal("50000.00")
    delivered_tokens_per_s = Decimal("20000.00")


class ScoreSheetFactory(DjangoModelFactory[ScoreSheet]):
    class Meta:
        model = ScoreSheet

    rfp = factory.SubFactory(RfpFactory, status=Rfp.Status.OPENED)
    evaluator = factory.SubFactory(UserFactory)
    submitted_at = None

    class Params:
        submitted = factory.Trait(submitted_at=factory.LazyFunction(timezone.now))


class ScoreFactory(DjangoModelFactory[Score]):
    class Meta:
        model = Score

    sheet = factory.SubFactory(ScoreSheetFactory)
    bid = factory.SubFactory(BidFactory)
    criterion = factory.SubFactory(CriterionFactory)
    value = 5
    justification = "Evidence reviewed in the bundle."


class TcoFormulaFactory(DjangoModelFactory[TcoFormula]):
    class Meta:
        model = TcoFormula

    rfp = factory.SubFactory(RfpFactory, status=Rfp.Status.OPENED)
    version = 1
    created_at = factory.LazyFunction(timezone.now)
    created_by = factory.SubFactory(UserFactory)


def opened_rfp(
    buyer_org: Organisation,
    vendors: Sequence[Organisation],
    *,
    criteria: Sequence[tuple[str, int]] = (("Reproducibility", 60), ("TCO", 40)),
    **fields: Any,
) -> Rfp:
    """An RFP whose bids are opened: criteria, one submitted bid per vendor."""
    rfp = RfpFactory.create(
        buyer_organisation=buyer_org,
        status=Rfp.Status.OPENED,
        opened_at=timezone.now(),
        invited=list(vendors),
        **fields,
    )
    for position, (name, weight) in enumerate(criteria):
        CriterionFactory.create(rfp=rfp, name=name, weight=weight, position=position)
    for vendor in vendors:
        BidFactory.create(rfp=rfp, vendor_organisation=vendor)
    return rfp


def evaluator_in(org: Organisation, username: str) -> Any:
    user = UserFactory.create(username=username)
    MembershipFactory.create(user=user, organisation=org, role=Role.EVALUATOR)
    return user


def vendor_orgs(count: int) -> list[Organisation]:
    return [
        OrganisationFactory.create(
            slug=f"vendor-{i:02d}", kind=Organisation.Kind.VENDOR
        )
        for i in range(count)
    ]


def score_all(
    rfp: Rfp, evaluator: Any, value: int | dict[str, int] = 5, *, submitted: bool = True
) -> ScoreSheet:
    """A sheet scoring every submitted bid on every criterion; ``value`` is one
    score for all, or a score per vendor slug."""
    sheet = ScoreSheetFactory.create(
        rfp=rfp, evaluator=evaluator, submitted_at=timezone.now() if submitted else None
    )
    for bid in rfp.bids.filter(status=Bid.Status.SUBMITTED).select_related(
        "vendor_organisation"
    ):
        v = value if isinstance(value, int) else value[bid.vendor_organisation.slug]
        for criterion in rfp.criteria.all():
            ScoreFactory.create(sheet=sheet, bid=bid, criterion=criterion, value=v)
    return sheet


def bid_of(rfp: Rfp, vendor: Organisation) -> Bid:
    return rfp.bids.get(vendor_organisation=vendor)
