from __future__ import annotations

import uuid
from collections.abc import Mapping
from decimal import Decimal
from typing import Final

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from accounts.models import TimeStampedModel
from procurement.models.bid import Bid
from procurement.models.rfp import Criterion, Rfp


class ScoreSheet(TimeStampedModel):
    """One evaluator's scores on one RFP; others' scores stay hidden from them
    until they submit."""

    rfp = models.ForeignKey(Rfp, on_delete=models.PROTECT, related_name="score_sheets")
    evaluator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    submitted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["rfp", "evaluator"], name="procurement_sheet_one_per_evaluator"
            ),
        ]

    def __str__(self) -> str:
        return f"Scores of {self.evaluator_id} on {self.rfp_id}"


class Score(models.Model):
    sheet = models.ForeignKey(
        ScoreSheet, on_delete=models.CASCADE, related_name="scores"
    )
    bid = models.ForeignKey(Bid, on_delete=models.PROTECT, related_name="scores")
    criterion = models.ForeignKey(Criterion, on_delete=models.PROTECT, related_name="+")
    value = models.PositiveSmallIntegerField(validators=[MaxValueValidator(10)])
    justification = models.TextField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["sheet", "bid", "criterion"], name="procurement_score_unique"
            ),
            models.CheckConstraint(
                condition=Q(value__lte=10), name="procurement_score_range"
            ),
            models.CheckConstraint(
                condition=~Q(justification=""), name="procurement_score_justified"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.value}/10"


class TcoFormula(models.Model):
    """The buyer's versioned cost formula for one RFP; versions are never edited."""

    rfp = models.ForeignKey(Rfp, on_delete=models.CASCADE, related_name="tco_formulas")
    version = models.PositiveSmallIntegerField()
    pue = models.DecimalField(
        max_digits=4,
        decimal_places=2,
        default=Decimal("1.40"),
        validators=[MinValueValidator(Decimal(1))],
        help_text="Power usage effectiveness of the buyer's datacentre.",
    )
    utilisation = models.DecimalField(
        max_digits=4,
        decimal_places=3,
        default=Decimal("0.600"),
        validators=[MinValueValidator(Decimal("0.001")), MaxValueValidator(Decimal(1))],
        help_text="Share of the year the system serves at its delivered throughput.",
    )
    hours_per_year = models.PositiveIntegerField(default=8760)
    created_at = models.DateTimeField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )

    class Meta:
        ordering = ["-version"]
        constraints = [
            models.UniqueConstraint(
                fields=["rfp", "version"], name="procurement_tco_unique_version"
            ),
        ]

    def __str__(self) -> str:
        return f"TCO formula v{self.version}"


class AwardRequest(TimeStampedModel):
    """An award takes two distinct buyer-side members: one requests it (winning
    bid, rationale, and a written override when score sheets are missing), another
    confirms it; either side may cancel a pending request. Rows are kept."""

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting for confirmation"
        CONFIRMED = "confirmed", "Confirmed"
        CANCELLED = "cancelled", "Cancelled"

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    rfp = models.ForeignKey(
        Rfp, on_delete=models.PROTECT, related_name="award_requests"
    )
    bid = models.ForeignKey(Bid, on_delete=models.PROTECT, related_name="+")
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.PENDING
    )
    rationale = models.TextField()
    # Why the award goes ahead although not every evaluator submitted ("" if all did).
    override_reason = models.TextField(blank=True)
    # Why the award goes ahead although the winning vendor's lab validation has
    # not passed ("" if it has).
    gates_override_reason = models.TextField(blank=True)
    # Why the award goes ahead although the fidelity matrix shows a mandatory
    # requirement the winning vendor's bundle or lab capture contradicts ("" if none).
    fidelity_override_reason = models.TextField(blank=True)
    sheets_submitted = models.PositiveSmallIntegerField()  # at the request
    sheets_expected = models.PositiveSmallIntegerField()
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
    cancelled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    cancelled_at = models.DateTimeField(null=True, blank=True)
    cancel_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["-requested_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["pending", "confirmed", "cancelled"]),
                name="procurement_award_request_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(confirmed_by__isnull=True)
                | ~Q(confirmed_by=models.F("requested_by")),
                name="procurement_award_two_people",
            ),
            models.CheckConstraint(
                condition=~Q(status="confirmed")
                | Q(confirmed_by__isnull=False, confirmed_at__isnull=False),
                name="procurement_award_confirmed_by_someone",
            ),
            # at most one pending or confirmed request per RFP (also the lookup
            # of the pending request)
            models.UniqueConstraint(
                fields=["rfp"],
                condition=Q(status__in=["pending", "confirmed"]),
                name="procurement_award_request_one_live",
            ),
        ]

    def __str__(self) -> str:
        return f"Award request on {self.rfp_id}"

    @property
    def sheets_complete(self) -> bool:
        return self.sheets_submitted >= self.sheets_expected


A = AwardRequest.Status
AWARD_REQUEST_TRANSITIONS: Final[Mapping[str, frozenset[str]]] = {
    A.PENDING: frozenset({A.CONFIRMED, A.CANCELLED}),
    A.CONFIRMED: frozenset(),
    A.CANCELLED: frozenset(),
}


class Award(models.Model):
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    rfp = models.OneToOneField(Rfp, on_delete=models.PROTECT, related_name="award")
    bid = models.OneToOneField(Bid, on_delete=models.PROTECT, related_name="award")
    # The confirmed request behind the award (empty on awards made in one step,
    # before awards took two people). ``decided_by`` is its confirmer.
    request = models.OneToOneField(
        AwardRequest,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="award",
    )
    rationale = models.TextField()
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    decided_at = models.DateTimeField()
    standstill_ends_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"Award of {self.rfp_id}"
