"""Disputes of a gate verdict: the judged vendor contests an evaluation within
the RFP's ``dispute_window_days``, with its reason and, when it wants a re-run
of something else, a revised accepted bundle of its own on the RFP.

``open`` → ``upheld`` (the buyer side agrees: a re-test at the buyer's cost is
scheduled, ``retest``) | ``rejected`` (the buyer side answers in writing) |
``withdrawn`` (by the vendor). One open dispute per evaluation (the database
refuses a second). While one is open on a gate, the gate is neither promoted
nor rolled back, and its re-test obligation is no breach."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Final

from django.conf import settings
from django.db import models
from django.db.models import Q

from accounts.models import Organisation, TimeStampedModel

REASON_MAX: Final = 4000


class Dispute(TimeStampedModel):
    class Status(models.TextChoices):
        OPEN = "open", "Open"
        UPHELD = "upheld", "Upheld"
        REJECTED = "rejected", "Rejected"
        WITHDRAWN = "withdrawn", "Withdrawn"

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    evaluation = models.ForeignKey(
        "gates.Evaluation", on_delete=models.PROTECT, related_name="disputes"
    )
    # Denormalised from the evaluation for the visibility rules and the lists.
    rfp = models.ForeignKey(
        "procurement.Rfp", on_delete=models.PROTECT, related_name="gate_disputes"
    )
    plan = models.ForeignKey(
        "gates.GatePlan", on_delete=models.PROTECT, related_name="disputes"
    )
    gate = models.CharField(max_length=64)
    vendor_organisation = models.ForeignKey(
        Organisation, on_delete=models.PROTECT, related_name="gate_disputes"
    )
    reason = models.TextField()
    # The revised bundle the vendor wants re-run (empty: re-run the judged one).
    bundle = models.ForeignKey(
        "artifacts.Bundle",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="disputes",
    )
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.OPEN
    )
    opened_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    opened_at = models.DateTimeField()
    decided_by = models.ForeignKey(  # the buyer-side person, or the vendor withdrawing
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_reason = models.TextField(blank=True)
    # The buyer-funded re-test an upheld dispute scheduled.
    retest = models.ForeignKey(
        "gates.RetestObligation",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="disputes",
    )
    # The transparency-log index of the dispute's latest step.
    log_index = models.PositiveBigIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["-opened_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["open", "upheld", "rejected", "withdrawn"]),
                name="gates_dispute_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(status="open")
                | Q(decided_by__isnull=False, decided_at__isnull=False),
                name="gates_dispute_decision_stamped",
            ),
            models.CheckConstraint(
                condition=~Q(status="upheld") | Q(retest__isnull=False),
                name="gates_dispute_upheld_retest",
            ),
            # one open dispute per evaluation
            models.UniqueConstraint(
                fields=["evaluation"],
                condition=Q(status="open"),
                name="gates_dispute_one_open",
            ),
        ]
        indexes = [
            # the open disputes of a vendor's gate (decisions, breaches)
            models.Index(
                fields=["rfp", "vendor_organisation", "gate", "status"],
                name="gates_dispute_gate_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"dispute of {self.gate} ({self.status})"

    @property
    def is_open(self) -> bool:
        return self.status == self.Status.OPEN


DS = Dispute.Status
DISPUTE_TRANSITIONS: Final[Mapping[str, frozenset[str]]] = {
    DS.OPEN: frozenset({DS.UPHELD, DS.REJECTED, DS.WITHDRAWN}),
    DS.UPHELD: frozenset(),
    DS.REJECTED: frozenset(),
    DS.WITHDRAWN: frozenset(),
}
