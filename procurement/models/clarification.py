from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from accounts.models import Organisation, TimeStampedModel
from procurement.models.rfp import Rfp


class Clarification(TimeStampedModel):
    """A vendor's private question; the buyer's answer is public to every invited
    vendor, and the asker is never named to the others."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    rfp = models.ForeignKey(
        Rfp, on_delete=models.CASCADE, related_name="clarifications"
    )
    asked_by_organisation = models.ForeignKey(
        Organisation, on_delete=models.PROTECT, related_name="+"
    )
    asked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    question = models.TextField()
    answer = models.TextField(blank=True)
    answered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    answered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(answered_at__isnull=True) | ~Q(answer=""),
                name="procurement_clarification_answered_has_text",
            ),
        ]
        indexes = [
            # unanswered questions of an RFP (deadline sweep, buyer dashboard)
            models.Index(
                fields=["rfp", "answered_at"], name="procurement_clar_open_idx"
            ),
        ]

    def __str__(self) -> str:
        return self.question[:60]

    @property
    def is_answered(self) -> bool:
        return self.answered_at is not None


class Addendum(models.Model):
    """A change to an RFP's conditions after publication, with its visible diff."""

    rfp = models.ForeignKey(Rfp, on_delete=models.CASCADE, related_name="addenda")
    number = models.PositiveSmallIntegerField()
    reason = models.TextField()
    changes = models.JSONField(default=dict, help_text="{field: [old, new]}")
    issued_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    issued_at = models.DateTimeField()
    deadline_extended_to = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["number"]
        constraints = [
            models.UniqueConstraint(
                fields=["rfp", "number"], name="procurement_addendum_unique_number"
            ),
        ]

    def __str__(self) -> str:
        return f"Addendum {self.number}"
