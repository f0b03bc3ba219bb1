"""Bids for tests: ``BidFactory`` sets state directly; ``submit`` goes through the
service (receipts, audit events, notifications) as a vendor would."""

from __future__ import annotations

import secrets
from decimal import Decimal
from typing import Any

import factory
from django.core.files.uploadedfile import SimpleUploadedFile

from accounts.models import Organisation
from procurement.models import BidReceipt, Rfp
from procurement.services.bid_inputs import bid_documents_store
from procurement.services.bids import bid_submit
from tests.procurement import factories as base
from tests.procurement.factories import RfpFactory

COVER_NOTE = "Zephyr-9 appliance with 42 NVMe drives, tuned for KV-cache offload."
CLAIMS: list[dict[str, Any]] = [
    {"metric": "ttft_ms", "stat": "p99", "value": 181.25, "unit": "ms", "scenario": ""},
    {
        "metric": "tokens_per_s",
        "stat": "mean",
        "value": 48213.5,
        "unit": "tok/s",
        "scenario": "cold-c32",
    },
]
COST_INPUTS: dict[str, Any] = {
    "currency": "EUR",
    "hardware_cost": Decimal("987654.00"),
    "amortisation_years": Decimal("4.0"),
    "power_draw_kw": Decimal("6.250"),
    "energy_price_per_kwh": Decimal("0.1800"),
    "rack_units": 8,
    "rack_unit_cost_per_year": Decimal("350.00"),
    "support_cost_per_year": Decimal("25000.00"),
    "delivered_tokens_per_s": Decimal("48213.50"),
}
# What would give a bidder away if a sealed page showed it.
SECRETS = ("acme-flash", "Acme Flash", "vendor-a", "Zephyr-9", "181.25", "987654")


def tender(buyer_org: Organisation, *vendors: Organisation, **kwargs: Any) -> Rfp:
    """A published RFP of ``buyer_org`` that invited ``vendors`` (set directly)."""
    return RfpFactory.create(
        buyer_organisation=buyer_org, published=True, invited=list(vendors), **kwargs
    )


def upload(name: str = "report.pdf", content: bytes = b"%PDF-1.7 signed") -> Any:
    return SimpleUploadedFile(name, content, content_type="application/pdf")


def submit(
    rfp: Rfp,
    user: Any,
    organisation: Organisation,
    *,
    files: tuple[Any, ...] = (),
    **content: Any,
) -> BidReceipt:
    """Submit (or replace) a bid through the service with the default content."""
    return bid_submit(
        rfp=rfp,
        organisation=organisation,
        actor=user,
        cover_note=content.pop("cover_note", COVER_NOTE),
        claims=content.pop("claims", CLAIMS),
        cost_inputs=content.pop("cost_inputs", COST_INPUTS),
        documents=bid_documents_store(uploads=files),
        **content,
    )


class BidFactory(base.BidFactory):
    """A bid with the content the sealing tests look for (``SECRETS``)."""

    cover_note = COVER_NOTE
    claimed_metrics = factory.LazyFunction(lambda: [dict(c) for c in CLAIMS])
    commitment = factory.LazyFunction(lambda: secrets.token_hex(32))
