"""Campaigns (an accepted bundle re-run on a lab pool) and their runs (one per
scenario and repetition). A run's state moves only as ``RUN_TRANSITIONS`` says,
through ``benchmarks.services.runs`` (one transaction and one audit row each)."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Mapping
from typing import Final

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from accounts.models import TimeStampedModel
from benchmarks.lib.lab.checks import flagged_ids
from benchmarks.models.pools import LabHost, LabPool


class Campaign(TimeStampedModel):
    """A lab operator's re-run of one accepted bundle on one pool. Its status is
    read from its runs (``benchmarks.selectors.campaign_summary``).

    ``role``: ``vendor``, a vendor's bundle re-run (what gates judge), or
    ``baseline``, the RFP's buyer's own harness on its current infrastructure
    (a bundle signed by the buyer organisation, no bid): gate criteria held to
    the baseline take their limit from its runs."""

    class Role(models.TextChoices):
        VENDOR = "vendor", "Vendor"
        BASELINE = "baseline", "Baseline"

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    rfp = models.ForeignKey(
        "procurement.Rfp", on_delete=models.PROTECT, related_name="campaigns"
    )
    bundle = models.ForeignKey(
        "artifacts.Bundle", on_delete=models.PROTECT, related_name="campaigns"
    )
    pool = models.ForeignKey(
        LabPool, on_delete=models.PROTECT, related_name="campaigns"
    )
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    repetitions = models.PositiveSmallIntegerField(
        validators=[MinValueValidator(1), MaxValueValidator(100)]
    )
    # The bundle manifest's harness.scenarios, as the campaign was started, then
    # the lab plan's (each marked "added_by": "lab").
    scenarios = models.JSONField(default=list)
    # The lab plan's neighbour jobs: name -> fio job options (interference).
    neighbours = models.JSONField(default=dict, blank=True)
    note = models.CharField(max_length=300, blank=True)
    cancelled_at = models.DateTimeField(null=True, blank=True)
    # The hosts of the pool its runs are bound to, by worker name (a gate's
    # canary hosts, or the rest of the pool after them): each run is sent to
    # one of their own queues and no other host may claim it. Empty: the whole
    # pool, through the pool's queue.
    hosts = models.JSONField(default=list, blank=True)
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.VENDOR)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(repetitions__gte=1), name="benchmarks_campaign_repetitions"
            ),
            models.CheckConstraint(
                condition=Q(role__in=["vendor", "baseline"]),
                name="benchmarks_campaign_role_valid",
            ),
        ]
        indexes = [
            # the campaigns of one RFP (buyer side, gates), newest first
            models.Index(
                fields=["rfp", "created_at"], name="benchmarks_campaign_rfp_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"campaign {str(self.public_id)[:8]} on {self.pool.name}"


# A run's seed is in [0, 2^53): stored in a signed 64-bit column, and an exact
# integer in every JSON reader (a JavaScript number holds no more).
SEED_LIMIT: Final = 1 << 53


def run_seed_new() -> int:
    """A fresh seed for a run (``REPROGATE_SEED``), made by the server."""
    return secrets.randbelow(SEED_LIMIT)


class Run(TimeStampedModel):
    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        PREPARING = "preparing", "Preparing"  # claimed: fetch, extract, capture
        RUNNING = "running", "Running"  # the harness runs
        PARSING = "parsing", "Parsing"  # outputs stored, metrics parsed
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"
        TIMED_OUT = "timed_out", "Timed out"

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    campaign = models.ForeignKey(
        Campaign, on_delete=models.PROTECT, related_name="runs"
    )
    position = models.PositiveIntegerField()  # dispatch order within the campaign
    scenario_name = models.CharField(max_length=64)
    scenario = models.JSONField(default=dict)  # as REPROGATE_SCENARIO gets it
    repetition = models.PositiveSmallIntegerField()  # 1-based
    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED)
    # Bumped when the reaper re-queues the run: a task or worker holding an
    # older attempt may no longer change the run.
    attempt = models.PositiveSmallIntegerField(default=1)
    wall_limit_s = models.PositiveIntegerField()
    progress = models.FloatField(default=0.0)
    log_tail = models.TextField(blank=True)
    host = models.ForeignKey(
        LabHost, null=True, blank=True, on_delete=models.PROTECT, related_name="runs"
    )
    worker_name = models.CharField(max_length=255, blank=True)
    # The host whose own queue the current attempt was sent to (a campaign
    # bound to hosts); empty: the pool's queue.
    routed_to = models.CharField(max_length=255, blank=True)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)  # the harness started
    finished_at = models.DateTimeField(null=True, blank=True)
    cancel_requested_at = models.DateTimeField(null=True, blank=True)
    cancel_requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    exit_code = models.IntegerField(null=True, blank=True)
    stop_reason = models.CharField(max_length=32, blank=True)
    reason = models.TextField(blank=True)  # why it failed, in words
    duration_s = models.FloatField(null=True, blank=True)
    environment = models.JSONField(default=dict, blank=True)  # captured on the host
    drift = models.JSONField(default=list, blank=True)  # [{field, declared, ...}]
    isolation = models.JSONField(default=dict, blank=True)  # what the sandbox had
    policy = models.JSONField(default=dict, blank=True)  # the pool's, at the claim
    cache_dropped = models.BooleanField(null=True, blank=True)  # None: warm scenario
    cache_note = models.CharField(max_length=300, blank=True)
    output_truncated = models.BooleanField(default=False)
    parse_warnings = models.JSONField(default=list, blank=True)
    parse_problems = models.JSONField(default=list, blank=True)
    output_deposit = models.ForeignKey(
        "artifacts.Deposit",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    # Host-signed results: the environment capture as the statement names it
    # (its canonical JSON, byte for byte as the harness started; a blob only once
    # deposited with the outputs), the host's DSSE envelope, verified before the
    # run was accepted, and the fingerprint of the key that signed it.
    environment_canonical = models.TextField(blank=True)
    statement_blob = models.ForeignKey(
        "artifacts.Blob",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    signing_key_fingerprint = models.CharField(max_length=60, blank=True)
    # Anti-gaming: the lab-issued seed given to the harness as REPROGATE_SEED
    # (None: a run made before seeds were issued) and the checks the host made
    # ([{"id", "applicable", "flagged", "detail", "values"}], ``lab.checks``).
    seed = models.BigIntegerField(null=True, blank=True, default=run_seed_new)
    checks = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["campaign", "position"]
        constraints = [
            models.CheckConstraint(
                condition=Q(
                    state__in=[
                        "queued",
                        "preparing",
                        "running",
                        "parsing",
                        "succeeded",
                        "failed",
                        "cancelled",
                        "timed_out",
                    ]
                ),
                name="benchmarks_run_state_valid",
            ),
            models.CheckConstraint(
                condition=Q(progress__gte=0.0, progress__lte=1.0),
                name="benchmarks_run_progress_range",
            ),
            models.CheckConstraint(
                condition=Q(attempt__gte=1), name="benchmarks_run_attempt_positive"
            ),
            models.CheckConstraint(
                condition=Q(seed__gte=0) | Q(seed__isnull=True),
                name="benchmarks_run_seed_range",
            ),
            models.UniqueConstraint(
                fields=["campaign", "scenario_name", "repetition"],
                name="benchmarks_run_unique_scenario_repetition",
            ),
        ]
        indexes = [
            # the reaper: active runs by last sign of life
            models.Index(
                fields=["state", "heartbeat_at"], name="benchmarks_run_reaper_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"run {self.scenario_name} #{self.repetition}"

    @property
    def is_active(self) -> bool:
        return self.state in ACTIVE_STATES

    @property
    def is_final(self) -> bool:
        return not RUN_TRANSITIONS[self.state]

    @property
    def flagged_checks(self) -> list[str]:
        """The ids of the run's flagged anti-gaming checks."""
        return flagged_ids(self.checks)


S = Run.State
ACTIVE_STATES: Final = frozenset({S.PREPARING, S.RUNNING, S.PARSING})
# queued -> ... backwards: the reaper re-queues a run whose worker was lost
# (attempt + 1) while attempts remain.
RUN_TRANSITIONS: Final[Mapping[str, frozenset[str]]] = {
    S.QUEUED: frozenset({S.PREPARING, S.CANCELLED, S.FAILED}),
    S.PREPARING: frozenset({S.RUNNING, S.QUEUED, S.FAILED, S.CANCELLED}),
    S.RUNNING: frozenset({S.PARSING, S.QUEUED, S.FAILED, S.CANCELLED, S.TIMED_OUT}),
    S.PARSING: frozenset({S.SUCCEEDED, S.QUEUED, S.FAILED, S.CANCELLED}),
    S.SUCCEEDED: frozenset(),
    S.FAILED: frozenset(),
    S.CANCELLED: frozenset(),
    S.TIMED_OUT: frozenset(),
}
