"""Lab pools (a Celery queue ``pool.<name>`` each) and the runner hosts that
registered on them. A host's status (online, lost, offline) is derived from its
last heartbeat by ``benchmarks.selectors.host_status``, never stored."""

from __future__ import annotations

import uuid

from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q

from accounts.models import Organisation, TimeStampedModel
from benchmarks.queues import POOL_NAME_PATTERN, pool_queue

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

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def queue(self) -> str:
        return pool_queue(self.name)


class LabHost(TimeStampedModel):
    """A runner worker (``celery -A config worker -Q pool.<name> -n <worker>``)
    as it registered on one pool: one row per pool and worker name."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    pool = models.ForeignKey(LabPool, on_delete=models.PROTECT, related_name="hosts")
    worker_name = models.CharField(max_length=255)  # celery's -n, e.g. a1@lab-07
    hostname = models.CharField(max_length=255)
    pid = models.PositiveIntegerField(null=True, blank=True)
    registered_at = models.DateTimeField()
    last_heartbeat_at = models.DateTimeField()
    stopped_at = models.DateTimeField(null=True, blank=True)  # clean shutdown
    environment = models.JSONField(default=dict, blank=True)  # capture_environment()
    sandbox = models.JSONField(default=dict, blank=True)  # sandbox_capabilities()

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
