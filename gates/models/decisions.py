"""Decisions on a gate: promote, hold or rollback, each with its rationale and
the evaluation it rests on. A promotion takes two sign-offs by different
buyer-side people (``pending`` until the second; the database refuses the same
person twice); hold and rollback take effect when recorded. A gate's decision
state is its latest decision that is not withdrawn."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Final

from django.conf import settings
from django.db import models
from django.db.models import Q


class Decision(models.Model):
    class Kind(models.TextChoices):
        PROMOTE = "promote", "Promote"
        HOLD = "hold", "Hold"
        ROLLBACK = "rollback", "Roll back"

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting for a second sign-off"
        RECORDED = "recorded", "Recorded"
        WITHDRAWN = "withdrawn", "Withdrawn"

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    plan = models.ForeignKey(
        "gates.GatePlan", on_delete=models.PROTECT, related_name="decisions"
    )
    gate = models.CharField(max_length=64)
    evaluation = models.ForeignKey(
        "gates.Evaluation", on_delete=models.PROTECT, related_name="decisions"
    )
    kind = models.CharField(max_length=16, choices=Kind.choices)
    status = models.CharField(max_length=16, choices=Status.choices)
    rationale = models.TextField()
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    decided_at = models.DateTimeField()
    second_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    second_at = models.DateTimeField(null=True, blank=True)
    second_note = models.TextField(blank=True)
    withdrawn_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    withdrawn_at = models.DateTimeField(null=True, blank=True)
    # The transparency-log index of the decision's log entry.
    log_index = models.PositiveBigIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["-decided_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=["promote", "hold", "rollback"]),
                name="gates_decision_kind_valid",
            ),
            models.CheckConstraint(
                condition=Q(status__in=["pending", "recorded", "withdrawn"]),
                name="gates_decision_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(second_by__isnull=True)
                | ~Q(second_by=models.F("decided_by")),
                name="gates_decision_two_people",
            ),
            models.CheckConstraint(
                condition=~Q(kind="promote", status="recorded")
                | Q(second_by__isnull=False, second_at__isnull=False),
                name="gates_decision_promotion_seconded",
            ),
            # one pending promotion per plan and gate
            models.UniqueConstraint(
                fields=["plan", "gate"],
                condition=Q(status="pending"),
                name="gates_decision_one_pending",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.gate} ({self.status})"


S = Decision.Status
DECISION_TRANSITIONS: Final[Mapping[str, frozenset[str]]] = {
    S.PENDING: frozenset({S.RECORDED, S.WITHDRAWN}),
    S.RECORDED: frozenset(),
    S.WITHDRAWN: frozenset(),
}
