from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from accounts.models import Organisation, TimeStampedModel
from artifacts.models.keys import SigningKey


class Blob(models.Model):
    """Content-addressed bytes in the default storage, deduplicated by SHA-256.

    The storage key derives from the digest only (``blobs/ab/<sha256>``), never
    from a vendor-supplied name."""

    sha256 = models.CharField(max_length=64, unique=True)
    size = models.PositiveBigIntegerField()
    storage_key = models.CharField(max_length=200)
    # S3 Object Lock: the version id the bucket returned (escrow).
    version_id = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"blob {self.sha256[:12]} ({self.size} B)"

    def save(self, *args: Any, **kwargs: Any) -> None:
        """A blob's bytes never change, so neither does its row: only the
        version id the bucket returned may be filled in later (escrow)."""
        fields = kwargs.get("update_fields")
        if not self._state.adding and (not fields or set(fields) - {"version_id"}):
            raise BlobIsImmutable("A blob row cannot be changed.")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise BlobIsImmutable("A blob row cannot be deleted.")


class BlobIsImmutable(Exception):
    """Blobs are content: written once, never changed or deleted through the
    application (escrow)."""


class Bundle(TimeStampedModel):
    """One uploaded artifact bundle: accepted with its files, or rejected with
    every problem found (a rejected bundle keeps no blob)."""

    class Status(models.TextChoices):
        ACCEPTED = "accepted", "Accepted"
        REJECTED = "rejected", "Rejected"

    class SignatureKind(models.TextChoices):
        SSHSIG = "sshsig", "OpenSSH signature"
        DSSE = "dsse", "DSSE envelope"

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    rfp = models.ForeignKey(
        "procurement.Rfp", on_delete=models.PROTECT, related_name="bundles"
    )
    organisation = models.ForeignKey(
        Organisation, on_delete=models.PROTECT, related_name="bundles"
    )
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    status = models.CharField(max_length=16, choices=Status.choices)
    filename = models.CharField(max_length=200, blank=True)  # display only
    sha256 = models.CharField(max_length=64)  # of the uploaded archive
    size = models.PositiveBigIntegerField()
    archive_blob = models.ForeignKey(
        Blob, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    manifest = models.JSONField(null=True, blank=True)
    manifest_sha256 = models.CharField(max_length=64, blank=True)
    signature_kind = models.CharField(
        max_length=8, choices=SignatureKind.choices, blank=True
    )
    signing_key = models.ForeignKey(
        SigningKey, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    problems = models.JSONField(default=list, blank=True)  # [{code, message, path}]
    completeness = models.JSONField(default=dict, blank=True)
    # An update bundle (deposited after the award): the accepted bundle its
    # manifest's ``supersedes`` names. Its ``changes`` stay in ``manifest``.
    supersedes = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="updates",
    )

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["accepted", "rejected"]),
                name="artifacts_bundle_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(status="rejected") | Q(archive_blob__isnull=False),
                name="artifacts_bundle_accepted_has_blob",
            ),
        ]
        indexes = [
            # a vendor's bundles on one RFP, newest first
            models.Index(
                fields=["rfp", "organisation", "created_at"],
                name="artifacts_bundle_rfp_org_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"bundle {self.sha256[:12]} ({self.status})"


class BundleFile(models.Model):
    bundle = models.ForeignKey(Bundle, on_delete=models.CASCADE, related_name="files")
    path = models.CharField(max_length=500)
    kind = models.CharField(max_length=16)
    size = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64)
    blob = models.ForeignKey(Blob, on_delete=models.PROTECT, related_name="+")

    class Meta:
        ordering = ["path"]
        constraints = [
            models.UniqueConstraint(
                fields=["bundle", "path"], name="artifacts_bundlefile_unique_path"
            ),
        ]

    def __str__(self) -> str:
        return self.path
