"""A run executed for real on this host by the one run path (the lab agent's
``execute_run`` against the runner API, in process): the bundle fetched and
extracted, the harness run in the sandbox, outputs stored, parsed and
deposited; failures, limits, cancellation and stale attempts end the run with a
reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from accounts.models import AuditEvent
from artifacts.models import Deposit
from benchmarks.models import Campaign, LabPool, Run, RunMetric, RunOutput
from benchmarks.services.runs import run_cancel, run_requeue
from reprogate_agent.execute import Reporter
from tests.benchmarks.in_process_agent import execute_in_process, worker_name
from tests.benchmarks.runner.support import accepted_bundle, runs_of, start

pytestmark = pytest.mark.django_db


def _campaign(
    tmp_path: Path,
    rfp: Any,
    vendor: Any,
    org: Any,
    pool: LabPool,
    labops: Any,
    harness: bytes,
    **options: Any,
) -> Campaign:
    bundle = accepted_bundle(
        tmp_path / "b", rfp, org, vendor, harness=harness, **options
    )
    return start(bundle, pool, labops)


@pytest.fixture
def make(
    tmp_path: Path,
    rfp: Any,
    vendor_a: Any,
    vendor_a_org: Any,
    pool: LabPool,
    labops: Any,
) -> Any:
    def build(harness: bytes, **options: Any) -> Run:
        campaign = _campaign(
            tmp_path, rfp, vendor_a, vendor_a_org, pool, labops, harness, **options
        )
        return runs_of(campaign)[0]

    return build


def execute(run: Run) -> tuple[str, Run]:
    return execute_in_process(run)


def test_run_executes_the_harness_and_records_its_results(
    campaign: Any, clock: Any
) -> None:
    run = runs_of(campaign)[0]

    outcome, run = execute(run)

    assert outcome == run.state == Run.State.SUCCEEDED, run.reason
    assert (run.progress, run.exit_code, run.stop_reason) == (1.0, 0, "exited")
    assert "::progress:: 0.5" in run.log_tail
    assert '"name": "cold-c1"' in run.log_tail
    metrics = {(m.name, m.stat): m for m in RunMetric.objects.filter(run=run)}
    assert metrics[("ttft_ms", "p99")].value == 41.5
    assert metrics[("read_iops", "mean")].scenario == "cold-c1"
    assert metrics[("read_iops", "mean")].source_path == "metrics.json"
    assert run.series.get().name == "cache_hit_rate"
    assert run.host.worker_name == worker_name()
    assert run.host.token is not None  # the agent's, with its host token
    assert run.environment
    assert ("kernel", "major") in {(d["field"], d["severity"]) for d in run.drift}
    assert run.cache_dropped is not None
    assert run.cache_note
    assert run.isolation


def test_run_outputs_are_stored_and_deposited(campaign: Any) -> None:
    _, run = execute(runs_of(campaign)[0])

    output = RunOutput.objects.get(run=run)
    assert (output.path, output.parser) == ("metrics.json", "reprogate-metrics")
    with default_storage.open(output.blob.storage_key) as stored:
        assert b'"ttft_ms"' in stored.read()
    deposit = run.output_deposit
    assert deposit.kind == Deposit.Kind.RUN_OUTPUT
    assert deposit.organisation == campaign.pool.lab_organisation
    items = {i.path: i.blob for i in deposit.items.all()}
    assert items["metrics.json"] == output.blob
    # the runner's telemetry, the capture, the host's statement and key go with it
    assert sorted(items) == [
        "environment.json", "host_key.pem", "metrics.json",
        "runner/telemetry.bin", "statement.json",
    ]  # fmt: skip
    assert str(run.public_id).encode() in bytes(deposit.leaf)


def test_run_moves_through_every_state_with_an_audit_row(campaign: Any) -> None:
    _, run = execute(runs_of(campaign)[0])

    moves = [
        (e.data["from"], e.data["to"])
        for e in AuditEvent.objects.filter(
            action="run.transitioned", target_id=str(run.pk)
        ).order_by("id")
    ]
    assert moves == [
        ("queued", "preparing"),
        ("preparing", "running"),
        ("running", "parsing"),
        ("parsing", "succeeded"),
    ]


def test_a_redelivered_task_runs_nothing_twice(campaign: Any) -> None:
    run = runs_of(campaign)[0]
    execute(run)
    counts = (
        RunMetric.objects.count(),
        RunOutput.objects.count(),
        Deposit.objects.count(),
    )

    outcome, again = execute(run)

    assert outcome == "skipped"
    assert again.state == Run.State.SUCCEEDED
    assert (
        RunMetric.objects.count(),
        RunOutput.objects.count(),
        Deposit.objects.count(),
    ) == counts


def test_a_failing_harness_fails_the_run_with_its_reason(make: Any) -> None:
    run = make(b"#!/bin/sh\necho working\necho boom >&2\nexit 3\n")

    outcome, run = execute(run)

    assert (outcome, run.stop_reason, run.exit_code) == ("failed", "exited", 3)
    assert run.reason == "The harness exited with status 3."
    assert "[stderr] boom" in run.log_tail
    assert not RunMetric.objects.filter(run=run).exists()


def test_a_missing_declared_output_fails_the_run(make: Any) -> None:
    run = make(b"#!/bin/sh\necho nothing written\n")

    outcome, run = execute(run)

    assert (outcome, run.stop_reason) == ("failed", "parse_failed")
    assert "metrics.json: the harness did not write" in run.parse_problems[0]
    # no output: what is deposited is the runner's own evidence of the run
    assert "metrics.json" not in {i.path for i in run.output_deposit.items.all()}


def test_an_unparseable_output_fails_the_run_and_is_still_kept(make: Any) -> None:
    run = make(b'#!/bin/sh\necho "not json" > "$REPROGATE_OUTPUT_DIR/metrics.json"\n')

    outcome, run = execute(run)

    assert (outcome, run.stop_reason) == ("failed", "parse_failed")
    assert run.parse_problems
    assert RunOutput.objects.filter(run=run, path="metrics.json").exists()
    assert run.output_deposit is not None


def test_the_wall_clock_limit_times_the_run_out(make: Any, settings: Any) -> None:
    settings.RUNNER_WALL_FACTOR, settings.RUNNER_WALL_SLACK_SECONDS = 1, 1
    run = make(b"#!/bin/sh\necho '::progress:: 0.2'\nsleep 60\n")

    outcome, run = execute(run)

    assert (outcome, run.stop_reason) == ("timed_out", "timeout")
    assert run.wall_limit_s == 2
    assert run.duration_s < 30


def _processes_with(marker: str) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in text:
            found.append(text)
    return found


def test_cancelling_kills_the_harness_and_its_children(
    make: Any, labops: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = make(b"#!/bin/sh\nsleep 987.654 &\necho '::progress:: 0.5'\nsleep 600\n")
    seen = Reporter.on_line

    def operator_cancels(self: Reporter, stream: str, line: str) -> None:
        seen(self, stream, line)
        if "0.5" in line:
            run_cancel(run=Run.objects.get(pk=run.pk), actor=labops)

    monkeypatch.setattr(Reporter, "on_line", operator_cancels)

    outcome, run = execute(run)

    assert (outcome, run.stop_reason) == ("cancelled", "cancelled")
    assert "Cancelled by labops" in run.reason
    assert _processes_with("987.654") == []


def test_an_agent_whose_run_was_requeued_leaves_it_alone(
    make: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = make(b"#!/bin/sh\necho '::progress:: 0.5'\nsleep 600\n")
    seen = Reporter.on_line

    def reaper_requeues(self: Reporter, stream: str, line: str) -> None:
        seen(self, stream, line)
        if "0.5" in line:
            run_requeue(run=Run.objects.get(pk=run.pk), reason="lost")

    monkeypatch.setattr(Reporter, "on_line", reaper_requeues)

    outcome, run = execute(run)

    assert outcome == "stale"
    assert (run.state, run.attempt, run.progress) == (Run.State.QUEUED, 2, 0.0)
    assert not RunOutput.objects.filter(run=run).exists()


def test_outputs_are_never_read_through_links(make: Any) -> None:
    run = make(
        b'#!/bin/sh\nln -s /etc/hostname "$REPROGATE_OUTPUT_DIR/metrics.json"\n'
        b'mkfifo "$REPROGATE_OUTPUT_DIR/pipe"\n'
    )

    outcome, run = execute(run)

    assert (outcome, run.stop_reason) == ("failed", "parse_failed")
    assert not RunOutput.objects.filter(run=run).exists()
    said = " ".join([*run.isolation.get("notes", []), *run.parse_warnings])
    assert "metrics.json" in said
    assert "pipe" in said


def test_a_tampered_archive_in_storage_fails_the_run(campaign: Any) -> None:
    key = campaign.bundle.archive_blob.storage_key
    default_storage.delete(key)
    default_storage.save(key, ContentFile(b"\x1f\x8b not the bundle"))

    outcome, run = execute(runs_of(campaign)[0])

    assert (outcome, run.stop_reason) == ("failed", "bundle_corrupt")
    assert campaign.bundle.sha256 in run.reason


@pytest.fixture
def campaign(bundle: Any, pool: LabPool, labops: Any) -> Campaign:
    return start(bundle, pool, labops)
