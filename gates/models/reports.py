"""Signed reports: a benchmark report per evaluation, an acceptance certificate
per recorded promotion. Each is rendered to PDF in a Celery task, PAdES-signed
(with an RFC 3161 timestamp when a TSA is configured), described by an in-toto
statement signed with the installation's key (DSSE), and deposited in escrow
(the PDF and the statement as blobs, one log entry).

``queued`` → ``rendering`` → ``ready`` | ``failed``; a failed report may be
queued again, and a rendering one whose worker was lost (``claimed_at`` older
than the render lease) is queued again by the reaper, or failed after its
attempts. ``progress_pct``/``progress_step`` say how far the task is."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Final

from django.conf import settings
from django.db import models
from django.db.models import Q

from accounts.models import Organisation


class Report(models.Model):
    class Kind(models.TextChoices):
        EVALUATION = "evaluation", "Benchmark report"
        CERTIFICATE = "certificate", "Acceptance certificate"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RENDERING = "rendering", "Rendering"
        READY = "ready", "Ready"
        FAILED = "failed", "Failed"

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    evaluation = models.ForeignKey(
        "gates.Evaluation", on_delete=models.PROTECT, related_name="reports"
    )
    # The recorded promotion a certificate is of (empty for a benchmark report).
    decision = models.ForeignKey(
        "gates.Decision",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="reports",
    )
    # Denormalised from the evaluation for the permission checks.
    rfp = models.ForeignKey(
        "procurement.Rfp", on_delete=models.PROTECT, related_name="gate_reports"
    )
    vendor_organisation = models.ForeignKey(
        Organisation, on_delete=models.PROTECT, related_name="gate_reports"
    )
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.QUEUED
    )
    progress_pct = models.PositiveSmallIntegerField(default=0)
    progress_step = models.CharField(max_length=120, blank=True)
    error = models.TextField(blank=True)  # why it failed, for the page
    attempts = models.PositiveSmallIntegerField(default=0)
    # When the current attempt's worker claimed it (the reaper's lease).
    claimed_at = models.DateTimeField(null=True, blank=True)
    # What was produced (empty until ready).
    pdf_blob = models.ForeignKey(
        "artifacts.Blob",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    statement_blob = models.ForeignKey(
        "artifacts.Blob",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    pdf_sha256 = models.CharField(max_length=64, blank=True)
    statement_sha256 = models.CharField(max_length=64, blank=True)
    pages = models.PositiveIntegerField(default=0)
    timestamped = models.BooleanField(default=False)
    # SHA-256 of the signing certificate (DER), as the report cites it.
    signer_fingerprint = models.CharField(max_length=64, blank=True)
    deposit = models.OneToOneField(
        "artifacts.Deposit",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="report",
    )
    requested_by = models.ForeignKey(  # empty: requested automatically
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    requested_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-requested_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=["evaluation", "certificate"]),
                name="gates_report_kind_valid",
            ),
            models.CheckConstraint(
                condition=Q(status__in=["queued", "rendering", "ready", "failed"]),
                name="gates_report_status_valid",
            ),
            # a certificate is of a decision, a benchmark report of none
            models.CheckConstraint(
                condition=Q(kind="evaluation", decision__isnull=True)
                | Q(kind="certificate", decision__isnull=False),
                name="gates_report_decision_matches_kind",
            ),
            models.CheckConstraint(
                condition=~Q(status="ready")
                | (
                    Q(pdf_blob__isnull=False, statement_blob__isnull=False)
                    & Q(deposit__isnull=False)
                    & ~Q(pdf_sha256="")
                    & ~Q(statement_sha256="")
                ),
                name="gates_report_ready_complete",
            ),
            # one live (not failed) report per evaluation, one certificate per
            # decision
            models.UniqueConstraint(
                fields=["evaluation"],
                condition=Q(kind="evaluation") & ~Q(status="failed"),
                name="gates_report_one_per_evaluation",
            ),
            models.UniqueConstraint(
                fields=["decision"],
                condition=Q(kind="certificate") & ~Q(status="failed"),
                name="gates_report_one_per_decision",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} ({self.status})"


S = Report.Status
REPORT_TRANSITIONS: Final[Mapping[str, frozenset[str]]] = {
    S.QUEUED: frozenset({S.RENDERING, S.FAILED}),
    S.RENDERING: frozenset({S.READY, S.FAILED, S.QUEUED}),  # queued: worker lost
    S.READY: frozenset(),
    S.FAILED: frozenset({S.QUEUED}),
}
