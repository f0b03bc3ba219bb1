"""Re-test obligations: a blocking criterion FAILed on runs whose environment
matched the vendor's manifest (or on a lab environment the buyer's plan
accepts), so the vendor owes a re-test by ``deadline`` within ``max_attempts``.

``open`` → ``scheduled`` (the vendor uploaded a revised bundle and asked for the
re-test; the lab runs it) → ``passed`` (the new evaluation passes the criteria)
or back to ``open`` (it failed and attempts remain) or ``failed`` (attempts
exhausted); ``open``/``scheduled`` → ``expired`` once the deadline passes.
Expiry is derived from the clock when read (``status_now``) and persisted by the
beat task. ``failed`` and ``expired`` are a **breach** (``breached_at``), which an
escrow release can cite as its condition.

An obligation of kind ``update_revalidation`` is raised by an update bundle the
awarded vendor deposited whose environment differs from the accepted one's: the
gate is "re-validation due" until a campaign of the update passes it. It has no
evaluation behind it; it starts ``scheduled`` with the update as its bundle, and
when the plan has a canary gate, the canary gate's re-validation runs first
(``canary_hosts``)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Final

from django.conf import settings
from django.db import models
from django.db.models import Q

from accounts.models import Organisation, TimeStampedModel


class RetestObligation(TimeStampedModel):
    class Status(models.TextChoices):
        OPEN = "open", "Open"
        SCHEDULED = "scheduled", "Re-test scheduled"
        PASSED = "passed", "Passed"
        FAILED = "failed", "Failed"
        EXPIRED = "expired", "Expired"

    class Kind(models.TextChoices):
        RETEST = "retest", "Re-test"
        UPDATE_REVALIDATION = "update_revalidation", "Update re-validation"

    class CostBearer(models.TextChoices):
        VENDOR = "vendor", "Vendor"
        BUYER = "buyer", "Buyer"

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    rfp = models.ForeignKey(
        "procurement.Rfp", on_delete=models.PROTECT, related_name="retest_obligations"
    )
    vendor_organisation = models.ForeignKey(
        Organisation, on_delete=models.PROTECT, related_name="retest_obligations"
    )
    plan = models.ForeignKey(
        "gates.GatePlan", on_delete=models.PROTECT, related_name="obligations"
    )
    gate = models.CharField(max_length=64)
    kind = models.CharField(max_length=24, choices=Kind.choices, default=Kind.RETEST)
    # The evaluation whose blocking FAILs created the obligation (none for an
    # update re-validation: the update bundle raised it).
    evaluation = models.ForeignKey(
        "gates.Evaluation",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="obligations_raised",
    )
    # An update re-validation on a plan with a canary gate: the canary hosts the
    # update is re-validated on first ([] otherwise).
    canary_hosts = models.JSONField(default=list, blank=True)
    criteria = models.JSONField(default=list)  # the failing criterion ids
    reason = models.TextField()  # quotes claim, band, estimate and CI
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.OPEN
    )
    deadline = models.DateTimeField()
    max_attempts = models.PositiveSmallIntegerField()
    attempts_used = models.PositiveSmallIntegerField(default=0)
    cost_bearer = models.CharField(
        max_length=8, choices=CostBearer.choices, default=CostBearer.VENDOR
    )
    # The revised bundle and its campaign of the current (latest) attempt.
    bundle = models.ForeignKey(
        "artifacts.Bundle",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="retest_obligations",
    )
    campaign = models.ForeignKey(
        "benchmarks.Campaign",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="retest_obligations",
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    requested_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    breached_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["deadline", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(
                    status__in=["open", "scheduled", "passed", "failed", "expired"]
                ),
                name="gates_obligation_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(kind__in=["retest", "update_revalidation"]),
                name="gates_obligation_kind_valid",
            ),
            models.CheckConstraint(
                condition=Q(kind="update_revalidation") | Q(evaluation__isnull=False),
                name="gates_obligation_retest_has_evaluation",
            ),
            models.CheckConstraint(
                condition=Q(cost_bearer__in=["vendor", "buyer"]),
                name="gates_obligation_cost_bearer_valid",
            ),
            models.CheckConstraint(
                condition=Q(max_attempts__gte=1)
                & Q(attempts_used__lte=models.F("max_attempts")),
                name="gates_obligation_attempts_bounded",
            ),
            models.CheckConstraint(
                condition=~Q(status__in=["failed", "expired"])
                | Q(breached_at__isnull=False),
                name="gates_obligation_breach_stamped",
            ),
            # one live obligation per plan and gate
            models.UniqueConstraint(
                fields=["plan", "gate"],
                condition=Q(status__in=["open", "scheduled"]),
                name="gates_obligation_one_live",
            ),
        ]
        indexes = [
            models.Index(
                fields=["status", "deadline"], name="gates_obligation_due_idx"
            ),
        ]

    def __str__(self) -> str:
        what = "re-validation" if self.is_revalidation else "re-test obligation"
        return f"{what} on {self.gate} ({self.status})"

    @property
    def is_revalidation(self) -> bool:
        return self.kind == self.Kind.UPDATE_REVALIDATION

    def status_at(self, now: datetime) -> str:
        """The status the clock gives: a live obligation past its deadline is
        expired even before the beat task writes it."""
        live = (self.Status.OPEN, self.Status.SCHEDULED)
        if self.status in live and self.deadline <= now:
            return self.Status.EXPIRED
        return self.status

    @property
    def status_now(self) -> str:
        from accounts.selectors import clock

        return self.status_at(clock.now())

    @property
    def attempts_left(self) -> int:
        return self.max_attempts - self.attempts_used


OB = RetestObligation.Status
OBLIGATION_TRANSITIONS: Final[Mapping[str, frozenset[str]]] = {
    OB.OPEN: frozenset({OB.SCHEDULED, OB.EXPIRED}),
    OB.SCHEDULED: frozenset({OB.OPEN, OB.PASSED, OB.FAILED, OB.EXPIRED}),
    OB.PASSED: frozenset(),
    OB.FAILED: frozenset(),
    OB.EXPIRED: frozenset(),
}
