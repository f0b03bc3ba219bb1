from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from typing import Final

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q

from accounts.models import Organisation, TimeStampedModel
from procurement.lib.drift_policy import drift_policy_problems


def validate_drift_policy(value: object) -> None:
    problems = drift_policy_problems(value)
    if problems:
        raise ValidationError("; ".join(problems))


# An RFP's reference, also in the API's input (so the schema states it).
REFERENCE_VALIDATOR = RegexValidator(
    r"^[A-Z0-9][A-Z0-9-]{2,39}$",
    "Use capital letters, digits and dashes, e.g. RFP-2026-07.",
)


class Rfp(TimeStampedModel):
    """A request for proposals that demands reproducible evidence."""

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        PUBLISHED = "published", "Published"  # open for questions and bids
        CLOSED = "closed", "Closed"  # deadline passed, bids still sealed
        OPENED = "opened", "Opened"  # bids unsealed, evaluation running
        AWARDED = "awarded", "Awarded"
        UNSUCCESSFUL = "unsuccessful", "Unsuccessful"  # closed below minimum bids
        CANCELLED = "cancelled", "Cancelled"

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    reference = models.CharField(
        max_length=40, unique=True, validators=[REFERENCE_VALIDATOR]
    )
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True, help_text="Markdown.")
    buyer_organisation = models.ForeignKey(
        Organisation, on_delete=models.PROTECT, related_name="rfps"
    )
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.DRAFT
    )
    questions_deadline = models.DateTimeField(null=True, blank=True)
    submission_deadline = models.DateTimeField()
    min_bids = models.PositiveSmallIntegerField(
        default=1, validators=[MinValueValidator(1), MaxValueValidator(20)]
    )
    # An addendum landing within this many days of the deadline pushes the deadline
    # out so that this many days remain (Prozorro's rule, 4 days there).
    addendum_extension_days = models.PositiveSmallIntegerField(
        default=4, validators=[MaxValueValidator(60)]
    )
    standstill_days = models.PositiveSmallIntegerField(
        default=10, validators=[MaxValueValidator(60)]
    )
    invited_vendors = models.ManyToManyField(
        Organisation, related_name="rfp_invitations", blank=True
    )
    workload_requirements = models.TextField(
        blank=True,
        help_text="Model families and sizes, concurrency patterns, multi-tenancy.",
    )
    # The structured technical requirements: a reprogate.rfp-requirements/v1
    # document less its "artifacts" and "metrics" sections, which are the RFP's
    # RequiredArtifact rows (with bid_requires_bundle) and RequiredMetric rows
    # (procurement.lib.requirements); {}: none stated yet. After publication
    # only an addendum changes it.
    requirements = models.JSONField(default=dict, blank=True)
    # A bid must name an accepted bundle covering every mandatory artifact kind.
    bid_requires_bundle = models.BooleanField(default=False)
    # --- contract terms (frozen at award) ---
    escrow_clause = models.TextField(blank=True)
    # How long escrow deposits are kept; empty: the installation's default
    # (ESCROW_RETENTION_YEARS).
    escrow_retention_years = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(50)],
        help_text="Years escrow deposits are kept; empty for the default.",
    )
    acceptance_clause = models.TextField(
        blank=True, help_text="Gate-based acceptance with stop-loss."
    )
    retest_clause = models.TextField(blank=True)
    retest_tolerance_pct = models.DecimalField(
        max_digits=5,
        decimal_places=2,
        default=Decimal("10.00"),
        validators=[MinValueValidator(Decimal(0)), MaxValueValidator(Decimal(100))],
    )
    retest_vendor_funded = models.BooleanField(default=True)
    # A re-test obligation's deadline (days after the failing evaluation) and
    # how many re-tests the vendor may use to answer it.
    retest_deadline_days = models.PositiveSmallIntegerField(
        default=30, validators=[MinValueValidator(1), MaxValueValidator(365)]
    )
    retest_max_attempts = models.PositiveSmallIntegerField(
        default=2, validators=[MinValueValidator(1), MaxValueValidator(10)]
    )
    audit_rights_clause = models.TextField(blank=True)
    # How long the judged vendor may contest a gate evaluation (days after it).
    dispute_window_days = models.PositiveSmallIntegerField(
        default=10, validators=[MinValueValidator(1), MaxValueValidator(90)]
    )
    # How long after a firmware, driver or software update reaches the accepted
    # system the vendor has to deposit it as an update bundle.
    update_deposit_days = models.PositiveSmallIntegerField(
        default=30, validators=[MinValueValidator(1), MaxValueValidator(365)]
    )
    # How environment drift on the lab's runs is graded: a
    # reprogate.drift-policy/v1 document whose rules override the defaults
    # (procurement.lib.drift_policy.DEFAULT_RULES) one by one; {}: the defaults.
    drift_policy = models.JSONField(
        default=dict,
        blank=True,
        validators=[validate_drift_policy],
        help_text="Severity of each kind of environment drift; empty: the defaults.",
    )
    terms_frozen_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    opened_at = models.DateTimeField(null=True, blank=True)

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
                        "unsuccessful",
                        "cancelled",
                    ]
                ),
                name="procurement_rfp_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(questions_deadline__isnull=True)
                | Q(questions_deadline__lte=models.F("submission_deadline")),
                name="procurement_rfp_questions_before_submission",
            ),
        ]
        indexes = [
            # a buyer's RFP list, by status
            models.Index(
                fields=["buyer_organisation", "status"],
                name="procurement_rfp_buyer_idx",
            ),
            # the deadline sweep: published RFPs whose deadline passed
            models.Index(
                fields=["status", "submission_deadline"],
                name="procurement_rfp_deadline_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.reference} · {self.title}"

    @property
    def status_now(self) -> str:
        """The status by the clock at read time: the ``effective_status`` the read
        selectors annotate (``procurement.selectors.rfps``: a published RFP past
        its deadline reads as closed before the sweep records it), else the
        stored status (fresh from a write, which applies due deadlines first)."""
        return getattr(self, "effective_status", self.status)

    def get_status_now_display(self) -> str:
        return str(self.Status(self.status_now).label)

    def takes_submissions(self, now: datetime) -> bool:
        """Whether the RFP takes bids and bundles at ``now``: published (by the
        clock) and before its submission deadline. The one rule every page, API
        and service follows; ``procurement.selectors.rfps.rfp_submissions_closed``
        says why not, ``rfp_list_taking_submissions`` is the same rule in SQL."""
        published = self.status_now == self.Status.PUBLISHED
        return published and now < self.submission_deadline

    @property
    def is_sealed(self) -> bool:
        """Bids stay sealed until the RFP is opened, and for ever if it never is."""
        return self.status not in {self.Status.OPENED, self.Status.AWARDED}


S = Rfp.Status
RFP_TRANSITIONS: Final[Mapping[str, frozenset[str]]] = {
    S.DRAFT: frozenset({S.PUBLISHED, S.CANCELLED}),
    S.PUBLISHED: frozenset({S.CLOSED, S.CANCELLED}),
    S.CLOSED: frozenset({S.OPENED, S.UNSUCCESSFUL, S.CANCELLED}),
    S.OPENED: frozenset({S.AWARDED, S.CANCELLED}),
    S.AWARDED: frozenset(),
    S.UNSUCCESSFUL: frozenset(),
    S.CANCELLED: frozenset(),
}

# The contract terms of an RFP, in the order its form, API and template show them;
# frozen at award. The one list: the services, forms and addenda derive theirs.
RFP_TERMS_FIELDS: Final = (
    "escrow_clause",
    "escrow_retention_years",
    "acceptance_clause",
    "retest_clause",
    "retest_tolerance_pct",
    "retest_vendor_funded",
    "retest_deadline_days",
    "retest_max_attempts",
    "audit_rights_clause",
    "dispute_window_days",
    "update_deposit_days",
    "drift_policy",
    "standstill_days",
)


class ArtifactKind(models.TextChoices):
    """Bundle file kinds (docs/bundle-format.md), as an RFP demands them."""

    WORKLOAD = "workload", "Workload definitions"
    ENVIRONMENT = "environment", "Environment manifests"
    HARNESS = "harness", "Test harness scripts"
    TRACE = "trace", "Raw and processed traces"
    COST_MODEL = "cost_model", "Cost-model inputs"
    REPORT = "report", "Signed benchmark reports"
    CONTAINER_IMAGE = "container_image", "Container images"
    IAC = "iac", "Infrastructure-as-code templates"
    RUNBOOK = "runbook", "Operational runbook"
    SBOM = "sbom", "Software bill of materials"
    OTHER = "other", "Other"


class RequiredArtifact(models.Model):
    rfp = models.ForeignKey(Rfp, on_delete=models.CASCADE, related_name="artifacts")
    kind = models.CharField(max_length=16, choices=ArtifactKind.choices)
    title = models.CharField(max_length=200)
    guidance = models.TextField(blank=True)
    mandatory = models.BooleanField(default=True)
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["position", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=ArtifactKind.values),
                name="procurement_artifact_kind_valid",
            ),
        ]

    def __str__(self) -> str:
        return self.title


class RequiredMetric(models.Model):
    rfp = models.ForeignKey(Rfp, on_delete=models.CASCADE, related_name="metrics")
    name = models.CharField(
        max_length=64,
        validators=[RegexValidator(r"^[a-z][a-z0-9_]*$", "Use lower_snake_case.")],
        help_text="Canonical metric name with its unit, e.g. ttft_ms.",
    )
    stats = models.CharField(
        max_length=100, blank=True, help_text="Comma-separated, e.g. p50,p95,p99."
    )
    # Reported as a time series (one value per interval), not only as statistics.
    series = models.BooleanField(default=False)
    description = models.CharField(max_length=200, blank=True)
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["position", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["rfp", "name"], name="procurement_metric_unique_per_rfp"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Criterion(models.Model):
    """An evaluation criterion; an RFP's weights sum to 100 before it is published."""

    rfp = models.ForeignKey(Rfp, on_delete=models.CASCADE, related_name="criteria")
    name = models.CharField(max_length=120)
    description = models.TextField(blank=True)
    weight = models.PositiveSmallIntegerField(validators=[MaxValueValidator(100)])
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["position", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["rfp", "name"], name="procurement_criterion_unique_per_rfp"
            ),
            models.CheckConstraint(
                condition=Q(weight__lte=100), name="procurement_criterion_weight_max"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.weight}%)"


class RfpTemplate(TimeStampedModel):
    """A reusable RFP configuration of one buyer organisation."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    buyer_organisation = models.ForeignKey(
        Organisation, on_delete=models.PROTECT, related_name="rfp_templates"
    )
    name = models.CharField(max_length=120)
    data = models.JSONField(default=dict)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["buyer_organisation", "name"],
                name="procurement_template_unique_name",
            ),
        ]

    def __str__(self) -> str:
        return self.name
