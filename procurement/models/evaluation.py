from __future__ import annotations

import uuid
from decimal import Decimal

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


class Award(models.Model):
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    rfp = models.OneToOneField(Rfp, on_delete=models.PROTECT, related_name="award")
    bid = models.OneToOneField(Bid, on_delete=models.PROTECT, related_name="award")
    rationale = models.TextField()
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    decided_at = models.DateTimeField()
    standstill_ends_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"Award of {self.rfp_id}"
