"""A run's results: its outputs stored as blobs, its declared outputs parsed into
canonical metrics, and the transaction that ends the run with all of them and
deposits the outputs in escrow (kind ``run_output``), with the runner's
artefacts (the telemetry blob, its metrics derived with ``method: "telemetry"``;
a scenario driver's ``scenario.json``, its metrics joined with ``method: "scenario"``),
the host's signed statement, the environment capture it names and the host key
(documents ``statement.json``, ``environment.json``, ``host_key.pem``). That
transaction moves the run out of its active state under the worker's attempt, so
it happens once per run: a redelivered task or a worker given up for lost can
never add a second set of metrics."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Final

from django.db import transaction

from artifacts.models import Blob, Deposit, DepositBlob
from artifacts.services.escrow import deposit_create
from artifacts.services.escrow_records import DepositItem
from artifacts.storage.blobs import blob_put
from benchmarks.lib.evidence import ENVIRONMENT, HOST_KEY, STATEMENT
from benchmarks.lib.lab.artefacts import SCENARIO, TELEMETRY
from benchmarks.lib.lab.scenario_document import ScenarioDocumentError
from benchmarks.lib.lab.scenario_document import decode as scenario_decode
from benchmarks.lib.lab.telemetry_blob import TelemetryBlobError, decode
from benchmarks.lib.lab.telemetry_metrics import telemetry_metrics
from benchmarks.lib.parsers import Metric, Series, UnknownParser, parse_stream
from benchmarks.lib.sandbox.reporting import clean_text
from benchmarks.lib.signing import ARTEFACT_PREFIX
from benchmarks.models import Run, RunArtefact, RunMetric, RunOutput, RunSeries
from benchmarks.services.runs import run_transition
from benchmarks.services.workspace import Beat, Collection

logger = logging.getLogger(__name__)

MAX_METRICS: Final = 10_000
MAX_SERIES: Final = 500
MAX_POINTS: Final = 20_000
MAX_NOTES: Final = 200
MAX_NOTE_CHARS: Final = 500
# A derived metric's source_path names the runner artefact it came from.
TELEMETRY_SOURCE: Final = "runner:"


@dataclass(frozen=True)
class StoredOutput:
    path: str  # an artefact's: its name
    blob: Blob
    parser: str = ""
    artefact: bool = False  # the runner's own file, not the harness's


@dataclass
class Parsed:
    metrics: list[tuple[str, Metric]] = field(default_factory=list)
    series: list[tuple[str, Series]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def note(self, kind: str, text: str) -> None:
        notes = self.warnings if kind == "warning" else self.problems
        if len(notes) < MAX_NOTES:
            notes.append(clean_text(text[:MAX_NOTE_CHARS]))


def declared_outputs(manifest: dict[str, Any]) -> dict[str, str]:
    """path -> parser, as the bundle's harness declares its outputs."""
    outputs = (manifest.get("harness") or {}).get("outputs") or []
    return {o["path"]: o["parser"] for o in outputs if isinstance(o, dict)}


def outputs_store(
    collection: Collection, declared: dict[str, str], beat: Beat
) -> list[StoredOutput]:
    """Every collected output and runner artefact in content-addressed storage
    (deduplicated)."""
    stored = []
    for item in collection.files:
        blob = blob_put(item.local, item.sha256, item.size)
        stored.append(StoredOutput(item.path, blob, declared.get(item.path, "")))
        beat()
    for item in collection.artefacts:
        blob = blob_put(item.local, item.sha256, item.size)
        stored.append(StoredOutput(item.path, blob, artefact=True))
    return stored


def outputs_parse(
    collection: Collection, declared: dict[str, str], beat: Beat
) -> Parsed:
    """Parse every declared output with its parser; a missing output or one its
    parser refuses is a problem (the run fails), a parser's warning is kept."""
    parsed, found = Parsed(), collection.by_path()
    for note in collection.warnings:
        parsed.note("warning", note)
    for path, parser in sorted(declared.items()):
        item = found.get(path)
        if item is None:
            parsed.note(
                "problem", f"{path}: the harness did not write this declared output."
            )
            continue
        try:
            with item.local.open("rb") as handle:
                result = parse_stream(
                    parser, handle, source_name=PurePosixPath(path).name
                )
        except UnknownParser as error:
            parsed.note("problem", f"{path}: {error}")
            continue
        for warning in result.warnings:
            parsed.note("warning", f"{path}: {warning}")
        for problem in result.problems:
            parsed.note("problem", f"{path} ({parser}): {problem}")
        parsed.metrics += [(path, m) for m in result.metrics]
        parsed.series += [(path, s) for s in result.series]
        beat()
    _telemetry_parse(collection, parsed)
    _scenario_parse(collection, parsed)
    _cap(parsed)
    return parsed


def _telemetry_parse(collection: Collection, parsed: Parsed) -> None:
    """The metrics derived from the runner's telemetry blob, if it sent one."""
    for item in collection.artefacts:
        if item.path != TELEMETRY:
            continue
        try:
            recording = decode(item.local.read_bytes())
        except (OSError, TelemetryBlobError) as error:
            parsed.note("warning", f"{TELEMETRY}: {error}")
            continue
        path = f"{TELEMETRY_SOURCE}{TELEMETRY}"
        parsed.metrics += [(path, m) for m in telemetry_metrics(recording)]


def _scenario_parse(collection: Collection, parsed: Parsed) -> None:
    """The metrics and series a scenario driver measured, if it sent them
    (``method: "scenario"``)."""
    for item in collection.artefacts:
        if item.path != SCENARIO:
            continue
        try:
            document = scenario_decode(item.local.read_bytes())
        except (OSError, ScenarioDocumentError) as error:
            parsed.note("warning", f"{SCENARIO}: {error}")
            continue
        path = f"{TELEMETRY_SOURCE}{SCENARIO}"
        parsed.metrics += [(path, m) for m in document.metrics]
        parsed.series += [(path, s) for s in document.series]


def _cap(parsed: Parsed) -> None:
    if len(parsed.metrics) > MAX_METRICS:
        parsed.note(
            "problem",
            f"The outputs hold {len(parsed.metrics)} metrics; "
            f"at most {MAX_METRICS} are kept.",
        )
        parsed.metrics = parsed.metrics[:MAX_METRICS]
    if len(parsed.series) > MAX_SERIES:
        parsed.note(
            "warning",
            f"Only the first {MAX_SERIES} of {len(parsed.series)} series are kept.",
        )
        parsed.series = parsed.series[:MAX_SERIES]


def _metric_row(
    run: Run, attempt: int, path: str, m: Metric, parsed: Parsed
) -> RunMetric:
    scenario = m.scenario or run.scenario_name
    if scenario != run.scenario_name:
        parsed.note(
            "warning",
            f"{path}: {m.name} {m.stat} names scenario {scenario!r}, "
            f"the run is {run.scenario_name!r}.",
        )
    return RunMetric(
        run=run,
        attempt=attempt,
        name=m.name[:64],
        stat=m.stat[:16],
        value=m.value,
        unit=clean_text(m.unit[:32]),
        source_path=path,
        source_key=clean_text(m.source_key[:300]),
        method=m.method[:64],
        scope=clean_text(m.scope[:100]),
        scenario=clean_text(scenario[:64]),
    )


def _series_row(
    run: Run, attempt: int, path: str, s: Series, parsed: Parsed
) -> RunSeries:
    points = [list(p) for p in s.points[:MAX_POINTS]]
    if len(s.points) > MAX_POINTS:
        parsed.note("warning", f"{path}: series {s.name} cut to {MAX_POINTS} points.")
    return RunSeries(
        run=run,
        attempt=attempt,
        name=s.name[:64],
        unit=clean_text(s.unit[:32]),
        points=points,
        source_path=path,
        source_key=clean_text(s.source_key[:300]),
        scope=clean_text(s.scope[:100]),
        scenario=clean_text((s.scenario or run.scenario_name)[:64]),
    )


def _signed(run: Run) -> tuple[list[DepositItem], dict[str, Any]]:
    """The host's statement, the environment it names and the key that signed
    it, as deposit items (documents), and the leaf's facts about them."""
    if run.statement_blob is None or run.host is None:
        return [], {}
    key = run.host.signing_key.encode("ascii")
    items = [DepositItem(run.statement_blob, DepositBlob.Role.DOCUMENT, STATEMENT)]
    if run.environment_canonical:
        captured = run.environment_canonical.encode("utf-8")
        blob = blob_put(captured, hashlib.sha256(captured).hexdigest(), len(captured))
        items.append(DepositItem(blob, DepositBlob.Role.DOCUMENT, ENVIRONMENT))
    key_blob = blob_put(key, hashlib.sha256(key).hexdigest(), len(key))
    items.append(DepositItem(key_blob, DepositBlob.Role.DOCUMENT, HOST_KEY))
    facts = {
        "host": str(run.host.public_id),
        "host_key_fingerprint": run.signing_key_fingerprint,
        "statement_sha256": run.statement_blob.sha256,
    }
    return items, facts


def _deposit_item(stored: StoredOutput) -> DepositItem:
    """An output at its path; a runner artefact as ``runner/<name>`` (where the
    host's statement and the offline check name it)."""
    if stored.artefact:
        path = ARTEFACT_PREFIX + stored.path
        return DepositItem(stored.blob, DepositBlob.Role.ARTEFACT, path)
    return DepositItem(stored.blob, DepositBlob.Role.OUTPUT, stored.path)


def _deposit(run: Run, attempt: int, stored: list[StoredOutput]) -> Deposit:
    campaign = run.campaign
    signed, facts = _signed(run)
    return deposit_create(
        kind=Deposit.Kind.RUN_OUTPUT,
        organisation=campaign.pool.lab_organisation,
        rfp=campaign.rfp,
        items=[
            *(_deposit_item(s) for s in stored),
            *signed,
        ],
        actor=None,
        bundle=campaign.bundle,  # the row says what the leaf says: the bundle run
        extra={
            **facts,
            "run": str(run.public_id),
            "campaign": str(campaign.public_id),
            "bundle": str(campaign.bundle.public_id),
            "pool": campaign.pool.name,
            "scenario": run.scenario_name,
            "repetition": run.repetition,
            "attempt": attempt,
        },
    )


@transaction.atomic
def run_finish(
    *,
    run: Run,
    attempt: int,
    to: str,
    stored: list[StoredOutput],
    parsed: Parsed | None = None,
    reason: str = "",
    fields: dict[str, Any] | None = None,
) -> Run:
    """End the run: state, outputs, metrics and series (when ``to`` is
    succeeded) and the escrow deposit of its outputs, in one transaction."""
    notes = {}
    if parsed is not None:
        notes = {"parse_warnings": parsed.warnings, "parse_problems": parsed.problems}
    run = run_transition(
        run=run,
        to=to,
        attempt=attempt,
        reason=reason,
        fields={**(fields or {}), **notes},
        data={"outputs": len(stored), "metrics": len(parsed.metrics) if parsed else 0},
    )
    RunOutput.objects.bulk_create(
        RunOutput(run=run, attempt=attempt, path=s.path, parser=s.parser, blob=s.blob)
        for s in stored
        if not s.artefact
    )
    RunArtefact.objects.bulk_create(
        RunArtefact(run=run, attempt=attempt, name=s.path, blob=s.blob)
        for s in stored
        if s.artefact
    )
    if parsed is not None and to == Run.State.SUCCEEDED:
        RunMetric.objects.bulk_create(
            [_metric_row(run, attempt, p, m, parsed) for p, m in parsed.metrics],
            batch_size=500,
        )
        RunSeries.objects.bulk_create(
            [_series_row(run, attempt, p, s, parsed) for p, s in parsed.series],
            batch_size=100,
        )
        run.parse_warnings = parsed.warnings
    if stored or run.statement_blob_id is not None:
        run.output_deposit = _deposit(run, attempt, stored)
    run.save(update_fields=["output_deposit", "parse_warnings", "updated_at"])
    return run
