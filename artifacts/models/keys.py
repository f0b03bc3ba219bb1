from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from accounts.models import Organisation, TimeStampedModel


class SigningKey(TimeStampedModel):
    """An OpenSSH public key a vendor organisation signs its bundles with."""

    class KeyType(models.TextChoices):
        ED25519 = "ssh-ed25519", "Ed25519"
        ECDSA_P256 = "ecdsa-sha2-nistp256", "ECDSA P-256"
        ECDSA_P384 = "ecdsa-sha2-nistp384", "ECDSA P-384"
        ECDSA_P521 = "ecdsa-sha2-nistp521", "ECDSA P-521"
        RSA = "ssh-rsa", "RSA"

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    organisation = models.ForeignKey(
        Organisation, on_delete=models.PROTECT, related_name="signing_keys"
    )
    key_type = models.CharField(max_length=32, choices=KeyType.choices)
    # "<type> <base64>" without the comment: what allowed_signers and SSHSIG compare.
    public_key = models.TextField()
    comment = models.CharField(max_length=200, blank=True)
    fingerprint = models.CharField(max_length=60)  # "SHA256:<base64 without =>"
    valid_from = models.DateTimeField()
    valid_until = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    registered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # A key belongs to one organisation for good, revoked or not: never
            # registered by a second one (services.keys says why).
            models.UniqueConstraint(
                fields=["fingerprint"], name="artifacts_signingkey_fingerprint_unique"
            ),
            models.CheckConstraint(
                condition=Q(valid_until__isnull=True)
                | Q(valid_until__gt=models.F("valid_from")),
                name="artifacts_signingkey_window_valid",
            ),
        ]
        indexes = [
            # signature verification: an organisation's keys by fingerprint
            models.Index(
                fields=["organisation", "fingerprint"], name="artifacts_key_lookup_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.fingerprint} ({self.comment or self.get_key_type_display()})"
