"""Fixity checks of escrow (``manage.py escrow_verify`` and the daily beat task):
one ``FixityRun`` per check with what it read, and one ``FixityFinding`` per
problem found. Both are written once, by ``artifacts.services.fixity.run``, and
never changed.

A finding names its subject (a blob digest, a log index, a storage key) and,
when it concerns a deposit, the buyer organisation of the deposit's RFP: only
that buyer's side and its auditors see it. Findings about the log itself (a
gap, a root that does not match the checkpoint) or about stored objects no
deposit names carry no organisation: every buyer side sees the log's, only
the installation's operators the others (``artifacts.selectors.fixity``)."""

from __future__ import annotations

import uuid
from typing import ClassVar

from django.db import models
from django.db.models import Q

from accounts.models import Organisation
from artifacts.models.escrow import _Immutable, _ImmutableQuerySet


class FixityRun(_Immutable):
    class Trigger(models.TextChoices):
        COMMAND = "command", "manage.py escrow_verify"
        SCHEDULE = "schedule", "Daily schedule"

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    trigger = models.CharField(max_length=16, choices=Trigger.choices)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField()
    blobs_checked = models.PositiveBigIntegerField(default=0)
    bytes_hashed = models.PositiveBigIntegerField(default=0)
    objects_listed = models.PositiveBigIntegerField(default=0)
    deposits_checked = models.PositiveBigIntegerField(default=0)
    events_checked = models.PositiveBigIntegerField(default=0)
    log_entries_checked = models.PositiveBigIntegerField(default=0)
    log_size = models.PositiveBigIntegerField(default=0)
    checkpoint_size = models.PositiveBigIntegerField(null=True, blank=True)
    findings_count = models.PositiveIntegerField(default=0)

    objects: ClassVar[_ImmutableQuerySet] = _ImmutableQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        ordering = ["-started_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(trigger__in=["command", "schedule"]),
                name="artifacts_fixityrun_trigger_valid",
            ),
        ]
        indexes = [
            # dashboards: the latest run
            models.Index(fields=["-started_at"], name="artifacts_fixityrun_latest"),
        ]

    def __str__(self) -> str:
        return f"fixity run {self.started_at:%Y-%m-%d %H:%M} ({self.findings_count})"

    @property
    def intact(self) -> bool:
        """No finding (not ``clean``: that is Model.clean, which full_clean calls)."""
        return self.findings_count == 0


class FixityFinding(_Immutable):
    class Kind(models.TextChoices):
        BLOB_ALTERED = "blob.altered", "Blob altered"
        BLOB_MISSING = "blob.missing", "Blob missing"
        BLOB_OVERWRITTEN = "blob.overwritten", "Blob's key overwritten"
        BLOB_EXTRA = "blob.extra", "Stored object with no blob row"
        BLOB_UNDEPOSITED = "blob.undeposited", "Blob no deposit names"
        ROW_ALTERED = "row.altered", "Row differs from its log entry"
        ROW_MISSING = "row.missing", "Logged record with no row"
        ROW_UNLOGGED = "row.unlogged", "Row with no log entry"
        LOG_GAP = "log.gap", "Log entries missing"
        LOG_ENTRY_ALTERED = "log.entry_altered", "Log entry altered"
        LOG_NODE_ALTERED = "log.node_altered", "Stored tree node altered"
        LOG_ROOT_MISMATCH = "log.root_mismatch", "Tree root differs"
        CHECKPOINT_INVALID = "log.checkpoint_invalid", "Checkpoint invalid"

    run = models.ForeignKey(
        FixityRun, on_delete=models.PROTECT, related_name="findings"
    )
    kind = models.CharField(max_length=32, choices=Kind.choices)
    subject = models.CharField(max_length=300)
    detail = models.TextField()
    buyer_organisation = models.ForeignKey(  # None: the log or storage as a whole
        Organisation,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    rfp_reference = models.CharField(max_length=40, blank=True)
    log_index = models.PositiveBigIntegerField(null=True, blank=True)
    sha256 = models.CharField(max_length=64, blank=True)

    objects: ClassVar[_ImmutableQuerySet] = _ImmutableQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        ordering = ["run", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(
                    kind__in=[
                        "blob.altered",
                        "blob.missing",
                        "blob.overwritten",
                        "blob.extra",
                        "blob.undeposited",
                        "row.altered",
                        "row.missing",
                        "row.unlogged",
                        "log.gap",
                        "log.entry_altered",
                        "log.node_altered",
                        "log.root_mismatch",
                        "log.checkpoint_invalid",
                    ]
                ),
                name="artifacts_fixityfinding_kind_valid",
            ),
        ]
        indexes = [
            # a dashboard: the latest run's findings a buyer side may see
            models.Index(
                fields=["run", "buyer_organisation"],
                name="artifacts_fixityfinding_scope",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind}: {self.subject}"
