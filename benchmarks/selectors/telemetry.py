"""A run's runner artefacts, its telemetry, its trace spans and its scenario
document, read back from blob storage."""

from __future__ import annotations

from django.db.models import F, QuerySet

from artifacts.storage.blobs import blob_open
from benchmarks.lib.lab.artefacts import SCENARIO, SPANS, TELEMETRY
from benchmarks.lib.lab.scenario_document import (
    ScenarioDocument,
    ScenarioDocumentError,
)
from benchmarks.lib.lab.scenario_document import decode as scenario_decode
from benchmarks.lib.lab.spans import Span, read_checked
from benchmarks.lib.lab.telemetry_blob import Recording, TelemetryBlobError, decode
from benchmarks.models import Run, RunArtefact

SPANS_MEDIA_TYPE = "application/jsonl"


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


def run_spans_artefact(run: Run) -> RunArtefact | None:
    """The run's ``spans.jsonl`` (None when its harness wrote no span)."""
    return run_artefact_list(run).filter(name=SPANS).first()


def run_spans(run: Run) -> list[Span] | None:
    """The run's trace spans, sorted by start, or None when it has none (every
    line was checked when it arrived: ``benchmarks.services.artefacts``)."""
    artefact = run_spans_artefact(run)
    if artefact is None:
        return None
    with blob_open(artefact.blob) as handle:
        return read_checked(handle)


def campaign_scenario_documents(campaign_id: int) -> dict[int, ScenarioDocument]:
    """``{run pk: its scenario.json}`` for the campaign's runs whose current
    attempt has one (one query, then one blob read per run); a document that
    no longer decodes (checked when it arrived: storage went bad) is left out."""
    artefacts = RunArtefact.objects.filter(
        run__campaign_id=campaign_id, name=SCENARIO, attempt=F("run__attempt")
    ).select_related("blob")
    documents: dict[int, ScenarioDocument] = {}
    for artefact in artefacts:
        with blob_open(artefact.blob) as handle:
            data = handle.read()
        try:
            documents[artefact.run_id] = scenario_decode(data)
        except ScenarioDocumentError:
            continue
    return documents


def run_scenario_document(run: Run) -> ScenarioDocument | None:
    """The ``scenario.json`` of the run's current attempt, or None (a steady
    run has none; one that no longer decodes is left out, as above)."""
    artefact = (
        RunArtefact.objects.filter(run=run, name=SCENARIO, attempt=run.attempt)
        .select_related("blob")
        .first()
    )
    if artefact is None:
        return None
    with blob_open(artefact.blob) as handle:
        data = handle.read()
    try:
        return scenario_decode(data)
    except ScenarioDocumentError:
        return None
