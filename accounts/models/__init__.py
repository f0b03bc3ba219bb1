from __future__ import annotations

import uuid
from typing import Any, ClassVar

from django.conf import settings
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import ValidationError
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.db.models import Q
from django.utils import timezone

from accounts.selectors import clock


class TimeStampedModel(models.Model):
    created_at = models.DateTimeField(
        default=timezone.now, db_index=True, editable=False
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class Organisation(TimeStampedModel):
    class Kind(models.TextChoices):
        BUYER = "buyer", "Buyer"
        VENDOR = "vendor", "Vendor"
        LAB = "lab", "Lab"
        AUDIT = "audit", "Audit"

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    # A buyer engages its lab and its auditors; they see that buyer's RFPs and trail.
    engages = models.ManyToManyField(
        "self", symmetrical=False, related_name="engaged_by", blank=True
    )

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=["buyer", "vendor", "lab", "audit"]),
                name="accounts_organisation_kind_valid",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Role(models.TextChoices):
    BUYER = "buyer", "Buyer"
    EVALUATOR = "evaluator", "Evaluator"
    VENDOR = "vendor", "Vendor"
    LABOPS = "labops", "Lab operator"
    AUDITOR = "auditor", "Auditor"
    ADMIN = "admin", "Organisation admin"


# Which roles a member of each kind of organisation may hold.
ROLES_BY_KIND: dict[str, frozenset[str]] = {
    Organisation.Kind.BUYER: frozenset({Role.BUYER, Role.EVALUATOR, Role.ADMIN}),
    Organisation.Kind.VENDOR: frozenset({Role.VENDOR, Role.ADMIN}),
    Organisation.Kind.LAB: frozenset({Role.LABOPS, Role.ADMIN}),
    Organisation.Kind.AUDIT: frozenset({Role.AUDITOR, Role.ADMIN}),
}


class Membership(TimeStampedModel):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    organisation = models.ForeignKey(
        Organisation, on_delete=models.PROTECT, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "organisation", "role"],
                name="accounts_membership_unique_role",
            ),
            models.CheckConstraint(
                condition=Q(role__in=Role.values), name="accounts_membership_role_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} · {self.get_role_display()} · {self.organisation}"

    def clean(self) -> None:
        allowed = ROLES_BY_KIND[self.organisation.kind]
        if self.role not in allowed:
            raise ValidationError(
                {
                    "role": f"A {self.organisation.get_kind_display().lower()} "
                    f"organisation has no {self.get_role_display().lower()} role."
                }
            )


class ApiToken(TimeStampedModel):
    """A bearer token for the API and CLI; only its SHA-256 digest is stored."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=12)
    digest = models.CharField(max_length=64, unique=True)  # serves authentication
    expires_at = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and self.expires_at > clock.now()


class LoginFailure(models.Model):
    """One failed password attempt (web login or API token), kept only for the
    lockout window (``accounts.services.throttle``). In the database, so every web
    process
    counts the same failures."""

    occurred_at = models.DateTimeField(default=timezone.now)
    username = models.CharField(max_length=150)  # as typed, lower-cased
    address = models.CharField(max_length=45)  # the client's IPv4 or IPv6 address

    class Meta:
        indexes = [
            # failures of one account in the window
            models.Index(
                fields=["username", "occurred_at"], name="accounts_loginfail_user_idx"
            ),
            # failures from one client address in the window
            models.Index(
                fields=["address", "occurred_at"], name="accounts_loginfail_addr_idx"
            ),
            # pruning what left the window
            models.Index(fields=["occurred_at"], name="accounts_loginfail_time_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.occurred_at:%Y-%m-%d %H:%M:%S} {self.username} {self.address}"


class AuditEventQuerySet(models.QuerySet["AuditEvent"]):
    def update(self, **kwargs: Any) -> int:
        raise AuditTrailIsAppendOnly("Audit events cannot be updated.")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise AuditTrailIsAppendOnly("Audit events cannot be deleted.")


class AuditTrailIsAppendOnly(Exception):
    pass


class AuditEvent(models.Model):
    """One append-only row per state change, written by ``audit_record`` only."""

    occurred_at = models.DateTimeField(
        default=timezone.now, editable=False, db_index=True
    )
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    actor_repr = models.CharField(max_length=200)
    # The organisation whose trail this event belongs to (scopes who may read it).
    organisation = models.ForeignKey(
        Organisation, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    action = models.CharField(max_length=100, db_index=True)
    target_type = models.ForeignKey(
        ContentType, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    target_id = models.CharField(max_length=64, blank=True)
    target_repr = models.CharField(max_length=300, blank=True)
    data = models.JSONField(default=dict, encoder=DjangoJSONEncoder)
    request_id = models.CharField(max_length=64, blank=True)
    # The RFP the event is about (its reference), whoever's trail it lies in: a
    # vendor's bid and bundle events belong to that RFP's buyer-side trail too.
    rfp_reference = models.CharField(max_length=40, blank=True, default="")

    objects: ClassVar[AuditEventQuerySet] = AuditEventQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        ordering = ["-occurred_at", "-id"]
        indexes = [
            # the trail of one object (RFP page "audit" tab)
            models.Index(
                fields=["target_type", "target_id", "occurred_at"],
                name="accounts_audit_target_idx",
            ),
            # the audit page: one organisation's trail, newest first
            models.Index(
                fields=["organisation", "occurred_at"], name="accounts_audit_org_idx"
            ),
            # one RFP's trail (the RFP filter, the RFP page's "audit" tab)
            models.Index(
                fields=["rfp_reference", "occurred_at"], name="accounts_audit_rfp_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.occurred_at:%Y-%m-%d %H:%M:%S} {self.actor_repr} {self.action}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AuditTrailIsAppendOnly("Audit events cannot be updated.")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise AuditTrailIsAppendOnly("Audit events cannot be deleted.")


class Notification(models.Model):
    """A message to one person: shown in the app and sent by e-mail (by a task)."""

    recipient = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications"
    )
    subject = models.CharField(max_length=200)
    body = models.TextField()
    url = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    read_at = models.DateTimeField(null=True, blank=True)
    emailed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # the unread badge and list of one user
            models.Index(
                fields=["recipient", "read_at"], name="accounts_notification_unread"
            ),
        ]

    def __str__(self) -> str:
        return self.subject
