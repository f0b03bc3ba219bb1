"""Evaluations: one gate of one frozen plan judged on one campaign's results.

The three documents are stored as the canonical bytes the engine read and
wrote (``plan``, ``results``, ``evaluation``); ``GET /api/v1/evaluations/<id>/``
returns them and ``reprogate gate evaluate`` reproduces ``evaluation`` byte for
byte. Each evaluation is an escrow deposit whose leaf names the three digests,
so a later edit of any of them is detectable. ``CriterionResult`` copies each
criterion's outcome out of the document for the board and the history (never
edited; the document is the record)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from accounts.models import Organisation

VERDICTS = ("PASS", "WARN", "FAIL", "INCONCLUSIVE", "HALTED")
CRITERION_VERDICTS = ("PASS", "WARN", "FAIL", "INCONCLUSIVE")


class Verdict(models.TextChoices):
    PASS = "PASS", "Pass"
    WARN = "WARN", "Warn"
    FAIL = "FAIL", "Fail"
    INCONCLUSIVE = "INCONCLUSIVE", "Inconclusive"
    HALTED = "HALTED", "Halted"


class Evaluation(models.Model):
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    plan = models.ForeignKey(
        "gates.GatePlan", on_delete=models.PROTECT, related_name="evaluations"
    )
    # Denormalised from the plan for the board's one query per RFP.
    rfp = models.ForeignKey(
        "procurement.Rfp", on_delete=models.PROTECT, related_name="gate_evaluations"
    )
    vendor_organisation = models.ForeignKey(
        Organisation, on_delete=models.PROTECT, related_name="gate_evaluations"
    )
    gate = models.CharField(max_length=64)
    campaign = models.ForeignKey(
        "benchmarks.Campaign", on_delete=models.PROTECT, related_name="evaluations"
    )
    verdict = models.CharField(max_length=16, choices=Verdict.choices)
    score_pct = models.DecimalField(
        max_digits=6, decimal_places=2, null=True, blank=True
    )
    plan_document = models.TextField()
    results_document = models.TextField()
    evaluation_document = models.TextField()
    plan_sha256 = models.CharField(max_length=64)
    results_sha256 = models.CharField(max_length=64)
    evaluation_sha256 = models.CharField(max_length=64)
    # The highest drift severity among the runs judged ("none", "minor", "major").
    max_drift = models.CharField(max_length=8, default="none")
    stop_loss_triggered = models.BooleanField(default=False)
    # The runs still to come before the gate can be judged (an INCONCLUSIVE
    # criterion's ``more_runs_needed``, the largest of them).
    more_runs_needed = models.PositiveIntegerField(default=0)
    deposit = models.OneToOneField(
        "artifacts.Deposit",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="evaluation",
    )
    # The re-test obligation this evaluation answers (its campaign ran the
    # vendor's revised bundle), if any.
    obligation = models.ForeignKey(
        "gates.RetestObligation",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="evaluations",
    )
    evaluated_by = models.ForeignKey(  # empty: evaluated automatically
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    evaluated_at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["-evaluated_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(verdict__in=list(VERDICTS)),
                name="gates_evaluation_verdict_valid",
            ),
            models.CheckConstraint(
                condition=Q(max_drift__in=["none", "minor", "major"]),
                name="gates_evaluation_drift_valid",
            ),
        ]
        indexes = [
            # the board: latest evaluation per vendor and gate of one RFP
            models.Index(
                fields=["rfp", "vendor_organisation", "gate", "evaluated_at"],
                name="gates_evaluation_board_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.gate}: {self.verdict}"


class CriterionResult(models.Model):
    evaluation = models.ForeignKey(
        Evaluation, on_delete=models.CASCADE, related_name="criterion_results"
    )
    position = models.PositiveIntegerField()  # order in the plan's gate
    criterion = models.CharField(max_length=64)  # the criterion's id
    metric = models.CharField(max_length=64)
    stat = models.CharField(max_length=16)
    scenario = models.CharField(max_length=64)
    direction = models.CharField(max_length=8)
    blocking = models.BooleanField(default=True)
    verdict = models.CharField(max_length=16, choices=Verdict.choices)
    reason = models.TextField()
    claim = models.FloatField(null=True, blank=True)
    limit = models.FloatField(null=True, blank=True)
    estimate = models.FloatField(null=True, blank=True)
    ci_low = models.FloatField(null=True, blank=True)
    ci_high = models.FloatField(null=True, blank=True)
    cv_pct = models.FloatField(null=True, blank=True)
    runs = models.PositiveIntegerField(default=0)
    more_runs_needed = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["evaluation", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["evaluation", "criterion"],
                name="gates_criterion_result_unique",
            ),
            models.CheckConstraint(
                condition=Q(verdict__in=list(CRITERION_VERDICTS)),
                name="gates_criterion_result_verdict_valid",
            ),
        ]
        indexes = [
            # a criterion's history over re-tests
            models.Index(
                fields=["criterion", "evaluation"], name="gates_criterion_hist_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.criterion}: {self.verdict}"


class GateCampaign(models.Model):
    """A campaign run for one gate of one plan: evaluated automatically once
    its runs have finished. ``extra_runs``: the runs it added to an earlier
    evaluation's campaign (adaptive repetitions), 0 for a campaign started for
    the gate."""

    plan = models.ForeignKey(
        "gates.GatePlan", on_delete=models.PROTECT, related_name="gate_campaigns"
    )
    gate = models.CharField(max_length=64)
    campaign = models.ForeignKey(
        "benchmarks.Campaign", on_delete=models.PROTECT, related_name="gate_links"
    )
    # The INCONCLUSIVE evaluation whose runs needed were scheduled (if any).
    after = models.ForeignKey(
        Evaluation,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="scheduled",
    )
    extra_runs = models.PositiveIntegerField(default=0)
    automatic = models.BooleanField(default=False)  # scheduled by the plan's top-up
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    requested_at = models.DateTimeField()
    # The evaluation made once the runs finished (empty while they run).
    evaluation = models.OneToOneField(
        Evaluation,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="gate_campaign",
    )

    class Meta:
        ordering = ["-requested_at", "-id"]
        indexes = [
            models.Index(fields=["campaign"], name="gates_gatecampaign_camp_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.gate} on campaign {self.campaign_id}"
