"""Escrow: deposits (an accepted bundle, later run outputs and signed reports) and
the escrow events logged beside them (legal hold, retention, evidence downloads).

Each row is also an entry of the transparency log (``log_index``) whose leaf is
the row's ``leaf``, the canonical JSON it was created from, kept byte-exact. No
code path changes or deletes what the leaf says: ``save()`` of an existing row is
refused (a deposit's ``legal_hold`` and ``retain_until`` excepted, which change
only through their services, each change logged as an ``EscrowEvent``), and
``delete()`` always is. Blobs a deposit names are ``PROTECT``ed."""

from __future__ import annotations

import uuid
from typing import Any, ClassVar

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from accounts.models import Organisation
from artifacts.models.bundles import Blob, Bundle


class EscrowIsImmutable(Exception):
    """A deposit, its blobs or an escrow event cannot be changed or deleted."""


class _ImmutableQuerySet(models.QuerySet[Any]):
    def update(self, **kwargs: Any) -> int:
        raise EscrowIsImmutable("Escrow records cannot be updated in bulk.")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise EscrowIsImmutable("Escrow records cannot be deleted.")


class _Immutable(models.Model):
    """``save()`` creates; an update may touch ``MUTABLE_FIELDS`` only, named in
    ``update_fields``; ``delete()`` raises."""

    MUTABLE_FIELDS: ClassVar[frozenset[str]] = frozenset()

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            fields = kwargs.get("update_fields")
            if not fields or not set(fields) <= self.MUTABLE_FIELDS:
                raise EscrowIsImmutable(
                    f"{type(self).__name__} rows cannot be changed"
                    + (
                        f" except {', '.join(sorted(self.MUTABLE_FIELDS))}"
                        if self.MUTABLE_FIELDS
                        else ""
                    )
                    + "."
                )
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise EscrowIsImmutable(f"{type(self).__name__} rows cannot be deleted.")


class Deposit(_Immutable):
    class Kind(models.TextChoices):
        BUNDLE = "bundle", "Artifact bundle"
        RUN_OUTPUT = "run_output", "Run outputs"
        REPORT = "report", "Signed report"
        EVALUATION = "evaluation", "Gate evaluation"

    MUTABLE_FIELDS: ClassVar[frozenset[str]] = frozenset({"legal_hold", "retain_until"})

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    organisation = models.ForeignKey(  # the depositor
        Organisation, on_delete=models.PROTECT, related_name="deposits"
    )
    rfp = models.ForeignKey(
        "procurement.Rfp", on_delete=models.PROTECT, related_name="deposits"
    )
    bundle = models.ForeignKey(
        Bundle,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="deposits",
    )
    deposited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    deposited_at = models.DateTimeField()  # the leaf's "time"
    leaf = models.BinaryField()  # canonical JSON, byte-exact as logged
    leaf_hash = models.CharField(max_length=64)  # hex SHA-256(0x00 || leaf)
    log_index = models.PositiveBigIntegerField(unique=True)
    retain_until = models.DateTimeField()  # only ever extended
    legal_hold = models.BooleanField(default=False)
    blobs = models.ManyToManyField(Blob, through="DepositBlob", related_name="+")

    objects: ClassVar[_ImmutableQuerySet] = _ImmutableQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        ordering = ["-log_index"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=["bundle", "run_output", "report", "evaluation"]),
                name="artifacts_deposit_kind_valid",
            ),
            models.CheckConstraint(
                condition=~Q(kind="bundle") | Q(bundle__isnull=False),
                name="artifacts_deposit_bundle_named",
            ),
            models.UniqueConstraint(
                fields=["bundle"],
                condition=Q(kind="bundle"),
                name="artifacts_deposit_one_per_bundle",
            ),
        ]
        indexes = [
            # the auditor's deposit list filtered by RFP (and kind), newest first
            models.Index(
                fields=["rfp", "kind", "log_index"], name="artifacts_deposit_rfp_idx"
            ),
            # ... and by vendor
            models.Index(
                fields=["organisation", "log_index"], name="artifacts_deposit_org_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"deposit #{self.log_index} ({self.kind})"


class DepositBlob(_Immutable):
    """One blob a deposit names, in the leaf's order (``position``)."""

    class Role(models.TextChoices):
        ARCHIVE = "archive", "Uploaded archive"
        FILE = "file", "Bundle file"
        OUTPUT = "output", "Run output"
        ARTEFACT = "artefact", "Runner artefact"
        REPORT = "report", "Report"
        DOCUMENT = "document", "Gate document"

    deposit = models.ForeignKey(Deposit, on_delete=models.PROTECT, related_name="items")
    blob = models.ForeignKey(Blob, on_delete=models.PROTECT, related_name="+")
    role = models.CharField(max_length=16, choices=Role.choices)
    path = models.CharField(max_length=500, blank=True)
    position = models.PositiveIntegerField()

    objects: ClassVar[_ImmutableQuerySet] = _ImmutableQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        ordering = ["deposit", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["deposit", "position"], name="artifacts_depositblob_position"
            ),
        ]
        indexes = [
            # legal hold on a shared blob: which deposits name it
            models.Index(fields=["blob"], name="artifacts_depositblob_blob_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.role} {self.path or self.blob.sha256[:12]}"


class EscrowEvent(_Immutable):
    """An escrow event other than a deposit, logged too: its leaf names the
    action, the deposit(s), who and when."""

    class Action(models.TextChoices):
        LEGAL_HOLD_SET = "legal_hold.set", "Legal hold placed"
        LEGAL_HOLD_RELEASED = "legal_hold.released", "Legal hold released"
        RETENTION_EXTENDED = "retention.extended", "Retention extended"
        EVIDENCE_DOWNLOADED = "evidence.downloaded", "Evidence package downloaded"
        RELEASE_REQUESTED = "release.requested", "Release requested"
        RELEASE_OBJECTED = "release.objected", "Release objected to"
        RELEASE_APPROVED = "release.approved", "Release approved"
        RELEASE_REJECTED = "release.rejected", "Release rejected"
        RELEASE_WITHDRAWN = "release.withdrawn", "Release withdrawn"
        RELEASE_EXECUTED = "release.executed", "Release executed"
        RELEASE_DOWNLOADED = "release.downloaded", "Released deposits downloaded"

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    action = models.CharField(max_length=40, choices=Action.choices)
    deposit = models.ForeignKey(
        Deposit,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="events",
    )
    bundle = models.ForeignKey(
        Bundle, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    occurred_at = models.DateTimeField()
    leaf = models.BinaryField()
    leaf_hash = models.CharField(max_length=64)
    log_index = models.PositiveBigIntegerField(unique=True)

    objects: ClassVar[_ImmutableQuerySet] = _ImmutableQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        ordering = ["-log_index"]
        constraints = [
            models.CheckConstraint(
                condition=Q(
                    action__in=[
                        "legal_hold.set",
                        "legal_hold.released",
                        "retention.extended",
                        "evidence.downloaded",
                        "release.requested",
                        "release.objected",
                        "release.approved",
                        "release.rejected",
                        "release.withdrawn",
                        "release.executed",
                        "release.downloaded",
                    ]
                ),
                name="artifacts_escrowevent_action_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"escrow event #{self.log_index} {self.action}"


class LogVisit(models.Model):
    """The checkpoint a user last saw on the log page: the next visit proves the
    log it sees now is an extension of that one (consistency proof)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="log_visit"
    )
    size = models.PositiveBigIntegerField()
    root_hash = models.CharField(max_length=64)  # hex, as shown then
    visited_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.user} saw size {self.size}"
