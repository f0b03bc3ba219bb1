from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Final

from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

from accounts.models import Organisation, TimeStampedModel


class Rfp(TimeStampedModel):
    """A request for proposals. Grows with the procurement issue."""

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        PUBLISHED = "published", "Published"  # open for questions and bids
        CLOSED = "closed", "Closed"  # deadline passed, bids still sealed
        OPENED = "opened", "Opened"  # bids unsealed, evaluation running
        AWARDED = "awarded", "Awarded"
        CANCELLED = "cancelled", "Cancelled"

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    reference = models.CharField(
        max_length=40,
        unique=True,
        validators=[
            RegexValidator(
                r"^[A-Z0-9][A-Z0-9-]{2,39}$",
                "Use capital letters, digits and dashes, e.g. RFP-2026-07.",
            )
        ],
    )
    title = models.CharField(max_length=200)
    buyer_organisation = models.ForeignKey(
        Organisation, on_delete=models.PROTECT, related_name="rfps"
    )
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.DRAFT
    )
    submission_deadline = models.DateTimeField()
    invited_vendors = models.ManyToManyField(
        Organisation, related_name="rfp_invitations", blank=True
    )

    class Meta:
        ordering = ["submission_deadline", "reference"]
        constraints = [
            models.CheckConstraint(
                condition=Q(
                    status__in=[
                        "draft",
                        "published",
                        "closed",
                        "opened",
                        "awarded",
                        "cancelled",
                    ]
                ),
                name="procurement_rfp_status_valid",
            ),
        ]
        indexes = [
            # a buyer's RFP list, by status
            models.Index(
                fields=["buyer_organisation", "status"],
                name="procurement_rfp_buyer_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.reference} · {self.title}"

    @property
    def deadline_passed(self) -> bool:
        return self.submission_deadline <= timezone.now()


S = Rfp.Status
RFP_TRANSITIONS: Final[Mapping[str, frozenset[str]]] = {
    S.DRAFT: frozenset({S.PUBLISHED, S.CANCELLED}),
    S.PUBLISHED: frozenset({S.CLOSED, S.CANCELLED}),
    S.CLOSED: frozenset({S.OPENED, S.CANCELLED}),
    S.OPENED: frozenset({S.AWARDED, S.CANCELLED}),
    S.AWARDED: frozenset(),
    S.CANCELLED: frozenset(),
}
