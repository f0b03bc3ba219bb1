"""Lab pools (a Celery queue ``pool.<name>`` each) and the runner hosts that
registered on them. A host's status (online, lost, offline) is derived from its
last heartbeat by ``benchmarks.selectors.host_status``, never stored."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q

from accounts.models import Organisation, TimeStampedModel
from benchmarks.lib.queues import POOL_NAME_PATTERN, pool_queue

POOL_NAME_VALIDATOR = RegexValidator(
    POOL_NAME_PATTERN,
    "Use lowercase letters, digits and dashes (the queue is pool.<name>).",
)


class LabPool(TimeStampedModel):
    """A set of alike lab hosts; runner workers consume ``pool.<name>``."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    name = models.CharField(
        max_length=63, unique=True, validators=[POOL_NAME_VALIDATOR]
    )
    description = models.TextField(blank=True)
    hardware_class = models.CharField(
        max_length=120, blank=True, help_text="e.g. 8x H100 + 2x CX-7, NVMe-oF RDMA."
    )
    lab_organisation = models.ForeignKey(
        Organisation, on_delete=models.PROTECT, related_name="lab_pools"
    )
    # The device and endpoint policy (``reprogate.lab-policy/v1``), set through
    # ``pool_policy_set``; {}: no devices, no network.
    policy = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def queue(self) -> str:
        return pool_queue(self.name)


class LabHost(TimeStampedModel):
    """A lab host's agent (``python -m reprogate_agent``) as it registered on one
    pool: one row per pool and worker name."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    pool = models.ForeignKey(LabPool, on_delete=models.PROTECT, related_name="hosts")
    worker_name = models.CharField(max_length=255)  # celery's -n, e.g. a1@lab-07
    hostname = models.CharField(max_length=255)
    pid = models.PositiveIntegerField(null=True, blank=True)
    registered_at = models.DateTimeField()
    last_heartbeat_at = models.DateTimeField()
    stopped_at = models.DateTimeField(null=True, blank=True)  # clean shutdown
    # A one-shot runner that will not come back once stopped (the demo seed's,
    # which runs its campaigns in-process): the pools page lists it apart.
    retired_at = models.DateTimeField(null=True, blank=True)
    environment = models.JSONField(default=dict, blank=True)  # capture_environment()
    sandbox = models.JSONField(default=dict, blank=True)  # sandbox_capabilities()
    # The agent's token for a host that talks to the runner API; empty only for
    # hosts registered before every run took the agent's path.
    token = models.ForeignKey(
        "HostToken",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="hosts",
    )
    # The agent's Ed25519 public key (PEM), pinned at its first hello: every
    # run's statement must verify with it. A different key sent later waits in
    # ``pending_signing_key`` until the lab operator accepts it.
    signing_key = models.TextField(blank=True)
    signing_key_fingerprint = models.CharField(max_length=60, blank=True)
    signing_key_pinned_at = models.DateTimeField(null=True, blank=True)
    pending_signing_key = models.TextField(blank=True)
    pending_signing_key_fingerprint = models.CharField(max_length=60, blank=True)
    pending_signing_key_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["pool", "worker_name"]
        constraints = [
            models.UniqueConstraint(
                fields=["pool", "worker_name"], name="benchmarks_host_unique_worker"
            ),
            models.CheckConstraint(
                condition=Q(last_heartbeat_at__gte=models.F("registered_at")),
                name="benchmarks_host_heartbeat_after_registration",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.worker_name} ({self.pool.name})"


class HostToken(TimeStampedModel):
    """The credential a lab host's agent presents to the runner API
    (``Authorization: Bearer rgh_…``), issued when the host joins a pool
    (``manage.py pool_join`` or the pool's page). Only its SHA-256 digest is
    stored; the token is shown once. A revoked token is refused at the agent's
    next call. The agent holds no database, storage or Django secret: this token
    and the pool's broker credentials are all it has."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    pool = models.ForeignKey(
        LabPool, on_delete=models.PROTECT, related_name="host_tokens"
    )
    name = models.CharField(max_length=100)  # the host's label, e.g. lab-07
    prefix = models.CharField(max_length=12)  # shown in lists: rgh_AbCd1234
    digest = models.CharField(max_length=64, unique=True)  # serves authentication
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
    )
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
    )

    class Meta:
        ordering = ["pool", "name", "-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["pool", "name"],
                condition=Q(revoked_at__isnull=True),
                name="benchmarks_host_token_unique_active_name",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} on {self.pool.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None
