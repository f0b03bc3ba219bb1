"""Release of a vendor's escrow to the buyer.

A ``Release`` is the buyer's request to release the deposits the awarded
vendor made on an RFP, citing a condition of the contract's escrow clause; its
``status`` moves only as ``RELEASE_TRANSITIONS`` allows, and only through
``artifacts.services.release``. Each step (request, objection, approval,
rejection, withdrawal, execution) is a ``ReleaseStep`` row, immutable, tied to
the ``EscrowEvent`` that logged it. The deposits are fixed when the release is
requested (what the vendor was told is what may be released)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import ClassVar, Final

from django.conf import settings
from django.db import models
from django.db.models import Q

from accounts.models import Organisation, TimeStampedModel
from artifacts.models.escrow import (
    Deposit,
    EscrowEvent,
    _Immutable,
    _ImmutableQuerySet,
)


class Release(TimeStampedModel):
    class Status(models.TextChoices):
        PENDING = "pending", "Notice period, then approvals"
        DISPUTED = "disputed", "Disputed by the vendor"
        APPROVED = "approved", "Approved, to execute"
        RELEASED = "released", "Released"
        REJECTED = "rejected", "Rejected by the auditor"
        WITHDRAWN = "withdrawn", "Withdrawn by the buyer"

    class Condition(models.TextChoices):
        SUPPORT_LAPSED = "support_lapsed", "Vendor support lapsed"
        BREACH = "breach", "Breach of contract"
        INSOLVENCY = "insolvency", "Vendor insolvency"
        OTHER = "other", "Other condition of the escrow clause"

    OPEN: ClassVar[tuple[str, ...]] = ("pending", "disputed", "approved")

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    rfp = models.ForeignKey(
        "procurement.Rfp", on_delete=models.PROTECT, related_name="escrow_releases"
    )
    award = models.ForeignKey(
        "procurement.Award", on_delete=models.PROTECT, related_name="+"
    )
    organisation = models.ForeignKey(  # the vendor whose escrow is released
        Organisation, on_delete=models.PROTECT, related_name="escrow_releases"
    )
    condition = models.CharField(max_length=20, choices=Condition.choices)
    statement = models.TextField(blank=True)  # mandatory for "other"
    # The contract's escrow clause as frozen at award, cited by the request.
    contract_clause = models.TextField()
    contract_clause_sha256 = models.CharField(max_length=64)
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.PENDING
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    requested_at = models.DateTimeField()
    notice_ends_at = models.DateTimeField()
    executed_at = models.DateTimeField(null=True, blank=True)
    certificate = models.BinaryField(default=b"")  # canonical JSON, as issued
    certificate_sha256 = models.CharField(max_length=64, blank=True)
    deposits = models.ManyToManyField(Deposit, related_name="releases")

    class Meta:
        ordering = ["-requested_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(
                    status__in=[
                        "pending",
                        "disputed",
                        "approved",
                        "released",
                        "rejected",
                        "withdrawn",
                    ]
                ),
                name="artifacts_release_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(
                    condition__in=["support_lapsed", "breach", "insolvency", "other"]
                ),
                name="artifacts_release_condition_valid",
            ),
            models.CheckConstraint(
                condition=~Q(condition="other") | ~Q(statement=""),
                name="artifacts_release_other_stated",
            ),
            models.CheckConstraint(
                condition=~Q(status="released")
                | (Q(executed_at__isnull=False) & ~Q(certificate_sha256="")),
                name="artifacts_release_released_certified",
            ),
            # one open release per vendor and RFP at a time
            models.UniqueConstraint(
                fields=["rfp", "organisation"],
                condition=Q(status__in=["pending", "disputed", "approved"]),
                name="artifacts_release_one_open",
            ),
        ]
        indexes = [
            # the release list and dashboards: a buyer's open releases
            models.Index(fields=["status", "rfp"], name="artifacts_release_status_idx"),
        ]

    def __str__(self) -> str:
        return f"escrow release {str(self.public_id)[:8]} ({self.status})"

    @property
    def is_open(self) -> bool:
        return self.status in self.OPEN


RS = Release.Status
RELEASE_TRANSITIONS: Final[Mapping[str, frozenset[str]]] = {
    RS.PENDING: frozenset({RS.DISPUTED, RS.APPROVED, RS.REJECTED, RS.WITHDRAWN}),
    RS.DISPUTED: frozenset({RS.APPROVED, RS.REJECTED, RS.WITHDRAWN}),
    RS.APPROVED: frozenset({RS.RELEASED, RS.WITHDRAWN}),
    RS.RELEASED: frozenset(),
    RS.REJECTED: frozenset(),
    RS.WITHDRAWN: frozenset(),
}


class ReleaseStep(_Immutable):
    """One step of a release, as logged: who, in which role, when, what they
    wrote. Approvals are unique per role and per person (the database says so
    too)."""

    class Action(models.TextChoices):
        REQUESTED = "requested", "Requested"
        OBJECTED = "objected", "Objected to"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"
        WITHDRAWN = "withdrawn", "Withdrawn"
        EXECUTED = "executed", "Executed"

    class Role(models.TextChoices):
        BUYER = "buyer", "Buyer"
        AUDITOR = "auditor", "Auditor"
        VENDOR = "vendor", "Vendor"

    release = models.ForeignKey(Release, on_delete=models.PROTECT, related_name="steps")
    action = models.CharField(max_length=16, choices=Action.choices)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    role = models.CharField(max_length=16, choices=Role.choices)
    text = models.TextField(blank=True)
    acknowledges_objection = models.BooleanField(default=False)
    occurred_at = models.DateTimeField()
    event = models.OneToOneField(
        EscrowEvent, on_delete=models.PROTECT, related_name="release_step"
    )

    objects: ClassVar[_ImmutableQuerySet] = _ImmutableQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        ordering = ["occurred_at", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(
                    action__in=[
                        "requested",
                        "objected",
                        "approved",
                        "rejected",
                        "withdrawn",
                        "executed",
                    ]
                ),
                name="artifacts_releasestep_action_valid",
            ),
            models.CheckConstraint(
                condition=Q(role__in=["buyer", "auditor", "vendor"]),
                name="artifacts_releasestep_role_valid",
            ),
            models.UniqueConstraint(
                fields=["release", "role"],
                condition=Q(action="approved"),
                name="artifacts_releasestep_one_approval_per_role",
            ),
            models.UniqueConstraint(
                fields=["release", "actor"],
                condition=Q(action="approved"),
                name="artifacts_releasestep_one_approval_per_person",
            ),
            models.UniqueConstraint(
                fields=["release", "action"],
                condition=~Q(action="approved"),
                name="artifacts_releasestep_other_steps_once",
            ),
        ]

    def __str__(self) -> str:
        return f"release step {self.action} ({self.role})"
