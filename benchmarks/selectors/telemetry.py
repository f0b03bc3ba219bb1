"""A run's runner artefacts and its telemetry, read back from blob storage."""

from __future__ import annotations

from django.db.models import QuerySet

from artifacts.storage.blobs import blob_open
from benchmarks.lib.lab.artefacts import TELEMETRY
from benchmarks.lib.lab.telemetry_blob import Recording, TelemetryBlobError, decode
from benchmarks.models import Run, RunArtefact


def run_artefact_list(run: Run) -> QuerySet[RunArtefact]:
    """The runner artefacts of the run's current attempt, by name."""
    return (
        RunArtefact.objects.filter(run=run, attempt=run.attempt)
        .select_related("blob")
        .order_by("name")
    )


def run_artefact_digests(run: Run) -> dict[str, str]:
    """``{name: sha256}`` of the current attempt's runner artefacts."""
    return {a.name: a.blob.sha256 for a in run_artefact_list(run)}


def run_telemetry(run: Run) -> Recording | None:
    """The run's telemetry as sampled, or None when it has none (a run that
    never started, or one from before the runner sampled)."""
    artefact = run_artefact_list(run).filter(name=TELEMETRY).first()
    if artefact is None:
        return None
    with blob_open(artefact.blob) as handle:
        data = handle.read()
    try:
        return decode(data)
    except TelemetryBlobError:  # checked when it arrived: storage went bad
        return None
