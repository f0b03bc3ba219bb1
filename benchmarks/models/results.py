"""What a run produced: its raw output files (blobs, deposited in escrow), the
canonical metrics and series parsed from them. Written once per run attempt, in
the transaction that ends the run."""

from __future__ import annotations

from django.db import models

from artifacts.models import Blob
from benchmarks.models.campaigns import Run


class RunOutput(models.Model):
    """One file the harness left in ``REPROGATE_OUTPUT_DIR``."""

    run = models.ForeignKey(Run, on_delete=models.PROTECT, related_name="outputs")
    attempt = models.PositiveSmallIntegerField()
    path = models.CharField(max_length=500)  # relative to the output directory
    parser = models.CharField(max_length=32, blank=True)  # declared outputs only
    blob = models.ForeignKey(Blob, on_delete=models.PROTECT, related_name="+")

    class Meta:
        ordering = ["run", "path"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "attempt", "path"], name="benchmarks_output_unique_path"
            ),
        ]

    def __str__(self) -> str:
        return self.path


class RunArtefact(models.Model):
    """A file the runner made about the run (``benchmarks.lib.lab.artefacts``:
    the telemetry blob …), never one the harness wrote; deposited in escrow
    with the outputs."""

    run = models.ForeignKey(Run, on_delete=models.PROTECT, related_name="artefacts")
    attempt = models.PositiveSmallIntegerField()
    name = models.CharField(max_length=64)
    blob = models.ForeignKey(Blob, on_delete=models.PROTECT, related_name="+")

    class Meta:
        ordering = ["run", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "attempt", "name"],
                name="benchmarks_artefact_unique_name",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class RunMetric(models.Model):
    """A canonical metric (docs/runner-contract.md) with where it came from."""

    run = models.ForeignKey(Run, on_delete=models.PROTECT, related_name="metrics")
    attempt = models.PositiveSmallIntegerField()
    name = models.CharField(max_length=64)
    stat = models.CharField(max_length=16)
    value = models.FloatField()
    unit = models.CharField(max_length=32)
    source_path = models.CharField(max_length=500)  # the output file
    source_key = models.CharField(max_length=300)
    method = models.CharField(max_length=64)
    scope = models.CharField(max_length=100, blank=True)
    scenario = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["run", "name", "stat", "scope", "id"]
        indexes = [
            # one metric across the runs of a campaign (exports, gates)
            models.Index(fields=["name", "stat"], name="benchmarks_metric_name_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.name} {self.stat} = {self.value} {self.unit}"


class RunSeries(models.Model):
    """A time series a parser read (``points``: ``[[t_s, value], ...]``)."""

    run = models.ForeignKey(Run, on_delete=models.PROTECT, related_name="series")
    attempt = models.PositiveSmallIntegerField()
    name = models.CharField(max_length=64)
    unit = models.CharField(max_length=32)
    points = models.JSONField(default=list)
    source_path = models.CharField(max_length=500)
    source_key = models.CharField(max_length=300)
    scope = models.CharField(max_length=100, blank=True)
    scenario = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["run", "name", "id"]
        verbose_name_plural = "run series"

    def __str__(self) -> str:
        return f"{self.name} ({len(self.points)} points)"
