"""Gate plans: one ``reprogate.gate-plan/v1`` document per (RFP, vendor, version).

A plan is a draft while the buyer edits it, then frozen: its document never
changes again (``document`` holds the canonical bytes that evaluations cite by
``sha256``). A new version starts as a draft copied from the frozen one and, once
frozen, supersedes it. At most one draft and one frozen (current) plan exist per
RFP and vendor."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any, Final

from django.conf import settings
from django.core.validators import MaxValueValidator
from django.db import models
from django.db.models import Q

from accounts.models import Organisation, TimeStampedModel


class GatePlan(TimeStampedModel):
    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        FROZEN = "frozen", "Frozen"
        SUPERSEDED = "superseded", "Superseded"

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    rfp = models.ForeignKey(
        "procurement.Rfp", on_delete=models.PROTECT, related_name="gate_plans"
    )
    vendor_organisation = models.ForeignKey(
        Organisation, on_delete=models.PROTECT, related_name="gate_plans"
    )
    # The accepted bundle whose claims the plan was generated from (empty for a
    # plan imported or written by hand).
    bundle = models.ForeignKey(
        "artifacts.Bundle",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="gate_plans",
    )
    version = models.PositiveIntegerField()
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.DRAFT
    )
    # The plan document: canonical JSON (UTF-8), byte-exact once frozen.
    document = models.TextField()
    sha256 = models.CharField(max_length=64)
    # The buyer accepts the lab's environment as the reference for this plan:
    # a blocking FAIL on runs whose environment drifts from the vendor's manifest
    # is then the vendor's to answer (a re-test obligation), not a lab deviation.
    lab_environment_accepted = models.BooleanField(default=False)
    lab_environment_note = models.TextField(blank=True)
    # Adaptive repetitions: how many extra runs per scenario may be scheduled
    # automatically when an evaluation is INCONCLUSIVE for want of runs
    # (0: the lab operator schedules them by hand).
    max_extra_runs = models.PositiveSmallIntegerField(
        default=0, validators=[MaxValueValidator(50)]
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    frozen_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    frozen_at = models.DateTimeField(null=True, blank=True)
    supersedes = models.OneToOneField(
        "self",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="superseded_by",
    )

    class Meta:
        ordering = ["rfp", "vendor_organisation", "-version"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["draft", "frozen", "superseded"]),
                name="gates_plan_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(version__gte=1), name="gates_plan_version_positive"
            ),
            models.UniqueConstraint(
                fields=["rfp", "vendor_organisation", "version"],
                name="gates_plan_version_unique",
            ),
            models.UniqueConstraint(
                fields=["rfp", "vendor_organisation"],
                condition=Q(status="draft"),
                name="gates_plan_one_draft",
            ),
            models.UniqueConstraint(
                fields=["rfp", "vendor_organisation"],
                condition=Q(status="frozen"),
                name="gates_plan_one_current",
            ),
            models.CheckConstraint(
                condition=Q(status="draft")
                | Q(frozen_at__isnull=False, frozen_by__isnull=False),
                name="gates_plan_frozen_by_someone",
            ),
        ]

    def __str__(self) -> str:
        return f"gate plan v{self.version} ({self.status})"

    @property
    def plan(self) -> dict[str, Any]:
        return json.loads(self.document)

    @property
    def gate_names(self) -> list[str]:
        return [g["name"] for g in self.plan.get("gates", [])]


P = GatePlan.Status
PLAN_TRANSITIONS: Final[Mapping[str, frozenset[str]]] = {
    P.DRAFT: frozenset({P.FROZEN}),
    P.FROZEN: frozenset({P.SUPERSEDED}),
    P.SUPERSEDED: frozenset(),
}
