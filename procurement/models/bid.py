from __future__ import annotations

import uuid
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Final

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q

from accounts.models import Organisation, TimeStampedModel
from procurement.lib.tco import COST_INPUT_FIELDS
from procurement.models.rfp import Rfp


class Bid(TimeStampedModel):
    """One vendor organisation's bid on one RFP. Sealed until the RFP is opened:
    before that the buyer side sees only how many bids there are and their
    ``commitment`` hashes."""

    class Status(models.TextChoices):
        SUBMITTED = "submitted", "Submitted"
        NEEDS_RECONFIRMATION = "needs_reconfirmation", "Needs re-confirmation"
        WITHDRAWN = "withdrawn", "Withdrawn"

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    rfp = models.ForeignKey(Rfp, on_delete=models.PROTECT, related_name="bids")
    vendor_organisation = models.ForeignKey(
        Organisation, on_delete=models.PROTECT, related_name="bids"
    )
    status = models.CharField(
        max_length=24, choices=Status.choices, default=Status.SUBMITTED
    )
    cover_note = models.TextField(blank=True)
    # Key claims: the named bundle's manifest claims, with any value the vendor
    # typed instead (flagged in ``bundle_differences``), plus claims typed without
    # a bundle: [{"metric": "ttft_ms", "stat": "p99", "value": 180.0, "unit": "ms",
    #   "scenario": "cold-c32"}]
    claimed_metrics = models.JSONField(default=list, blank=True)
    # The signed bundle the bid relies on: one of the vendor organisation's
    # accepted bundles on the RFP (no foreign key: artifacts depends on
    # procurement, not the reverse). Empty when the bid names no bundle.
    bundle_public_id = models.UUIDField(null=True, blank=True)
    bundle_sha256 = models.CharField(max_length=64, blank=True)  # the archive's
    bundle_manifest_sha256 = models.CharField(max_length=64, blank=True)
    # Where what the vendor typed differs from the bundle, one sentence each:
    # {"claims": {"ttft_ms|p99|cold-c32": "differs from the signed bundle: bundle
    #   says 180.0 ms"}, "cost_inputs": {"hardware_cost": "differs …"}}
    bundle_differences = models.JSONField(default=dict, blank=True)
    # SHA-256 over the canonical JSON of the bid's current content; public before
    # opening so that a vendor can later prove what it had submitted.
    commitment = models.CharField(max_length=64)
    submitted_at = models.DateTimeField()
    version = models.PositiveIntegerField(default=1)

    class Meta:
        ordering = ["submitted_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["rfp", "vendor_organisation"],
                name="procurement_bid_one_per_vendor",
            ),
            models.CheckConstraint(
                condition=Q(
                    status__in=["submitted", "needs_reconfirmation", "withdrawn"]
                ),
                name="procurement_bid_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(bundle_public_id__isnull=True, bundle_sha256="")
                | (Q(bundle_public_id__isnull=False) & ~Q(bundle_sha256="")),
                name="procurement_bid_bundle_has_digest",
            ),
        ]

    def __str__(self) -> str:
        return f"Bid {self.commitment[:12]}"

    @property
    def claims_with_flags(self) -> list[dict[str, Any]]:
        """The claims, each with ``flag``: how it differs from the signed bundle
        ("" where it does not)."""
        flags = (self.bundle_differences or {}).get("claims") or {}
        return [
            {**claim, "flag": flags.get(claim_key(claim), "")}
            for claim in self.claimed_metrics or []
            if isinstance(claim, dict)
        ]

    @property
    def cost_flags(self) -> list[tuple[str, str]]:
        """(cost input, how it differs from the signed bundle), in field order."""
        flags = (self.bundle_differences or {}).get("cost_inputs") or {}
        order = COST_INPUT_FIELDS
        return sorted(
            flags.items(), key=lambda i: order.index(i[0]) if i[0] in order else 99
        )

    @property
    def differs_from_bundle(self) -> int:
        """How many claims and cost inputs differ from the signed bundle."""
        differences = self.bundle_differences or {}
        return sum(len(differences.get(k) or {}) for k in ("claims", "cost_inputs"))


def claim_key(claim: Mapping[str, Any]) -> str:
    """A claim's identity: metric, stat and scenario (``ttft_ms|p99|cold-c32``)."""
    return "|".join(str(claim.get(k) or "") for k in ("metric", "stat", "scenario"))


B = Bid.Status
BID_TRANSITIONS: Final[Mapping[str, frozenset[str]]] = {
    B.SUBMITTED: frozenset({B.SUBMITTED, B.NEEDS_RECONFIRMATION, B.WITHDRAWN}),
    B.NEEDS_RECONFIRMATION: frozenset({B.SUBMITTED, B.WITHDRAWN}),
    B.WITHDRAWN: frozenset({B.SUBMITTED}),
}


class BidDocument(models.Model):
    """A file in a bid, content-addressed. Replacing one keeps the old row."""

    bid = models.ForeignKey(Bid, on_delete=models.CASCADE, related_name="documents")
    name = models.CharField(max_length=200)
    sha256 = models.CharField(max_length=64)
    size = models.PositiveBigIntegerField()
    content_type = models.CharField(max_length=100, blank=True)
    storage_key = models.CharField(max_length=200)
    uploaded_at = models.DateTimeField()
    superseded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["uploaded_at", "id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.sha256[:12]})"


class BidReceipt(models.Model):
    """What the vendor did and when, with the commitment at that moment."""

    class Action(models.TextChoices):
        SUBMITTED = "submitted", "Submitted"
        REPLACED = "replaced", "Replaced"
        RECONFIRMED = "reconfirmed", "Re-confirmed"
        WITHDRAWN = "withdrawn", "Withdrawn"

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    bid = models.ForeignKey(Bid, on_delete=models.PROTECT, related_name="receipts")
    action = models.CharField(max_length=16, choices=Action.choices)
    commitment = models.CharField(max_length=64)
    issued_at = models.DateTimeField()
    issued_to = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    contents = models.JSONField(default=dict)

    class Meta:
        ordering = ["issued_at", "id"]

    def __str__(self) -> str:
        return f"{self.action} {self.commitment[:12]}"


class CostModelInput(models.Model):
    """A vendor's TCO inputs; the buyer's formula turns them into costs."""

    bid = models.OneToOneField(
        Bid, on_delete=models.CASCADE, related_name="cost_inputs"
    )
    currency = models.CharField(max_length=3, default="EUR")
    hardware_cost = models.DecimalField(
        max_digits=14, decimal_places=2, validators=[MinValueValidator(Decimal(0))]
    )
    amortisation_years = models.DecimalField(
        max_digits=4, decimal_places=1, validators=[MinValueValidator(Decimal("0.5"))]
    )
    power_draw_kw = models.DecimalField(
        max_digits=8, decimal_places=3, validators=[MinValueValidator(Decimal(0))]
    )
    energy_price_per_kwh = models.DecimalField(
        max_digits=8, decimal_places=4, validators=[MinValueValidator(Decimal(0))]
    )
    rack_units = models.PositiveSmallIntegerField()
    rack_unit_cost_per_year = models.DecimalField(
        max_digits=10, decimal_places=2, validators=[MinValueValidator(Decimal(0))]
    )
    support_cost_per_year = models.DecimalField(
        max_digits=12, decimal_places=2, validators=[MinValueValidator(Decimal(0))]
    )
    delivered_tokens_per_s = models.DecimalField(
        max_digits=14,
        decimal_places=2,
        validators=[MinValueValidator(Decimal("0.01"))],
        help_text="Output tokens per second the offered system sustains.",
    )

    def __str__(self) -> str:
        return f"Cost inputs of {self.bid}"


class BidOpening(models.Model):
    """Opening needs two distinct buyer-side members: one requests, one confirms."""

    rfp = models.OneToOneField(Rfp, on_delete=models.PROTECT, related_name="opening")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    requested_at = models.DateTimeField()
    confirmed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    confirmed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(confirmed_by__isnull=True)
                | ~Q(confirmed_by=models.F("requested_by")),
                name="procurement_opening_two_people",
            ),
        ]

    def __str__(self) -> str:
        return f"Opening of {self.rfp_id}"
