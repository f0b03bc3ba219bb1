"""An agent's whole run over the runner API (DRF's test client plays the
agent, with the real sandbox running the real bundle's harness): the run ends
succeeded with metrics, series, outputs and an escrow deposit, exactly as the
same bundle's run executed by the agent's own code (in process)."""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.models import AuditEvent
from artifacts.models import Deposit
from benchmarks import conf
from benchmarks.lib.environment import capture_environment
from benchmarks.lib.sandbox import SandboxLimits, run_harness
from benchmarks.lib.sandbox.reporting import json_safe
from benchmarks.models import Campaign, Run
from benchmarks.services.host_tokens import IssuedHostToken
from benchmarks.services.workspace import Workspace, extract_bundle
from tests.benchmarks.in_process_agent import execute_in_process
from tests.benchmarks.runner.support import runs_of
from tests.benchmarks.runner_api.support import (
    BASE,
    call,
    claim,
    hello,
    put_output,
    signed_statement,
)

pytestmark = pytest.mark.django_db


def _results(run: Run) -> dict[str, Any]:
    run.refresh_from_db()
    return {
        "state": run.state,
        "stop_reason": run.stop_reason,
        "exit_code": run.exit_code,
        "progress": run.progress,
        # the harness's (the played agent sends no telemetry: the runner's own
        # derived metrics, ``runner:telemetry.bin``, are the agent's alone)
        "metrics": sorted(
            (m.name, m.stat, m.value, m.unit, m.source_path)
            for m in run.metrics.all()
            if not m.source_path.startswith("runner:")
        ),
        "series": sorted((s.name, s.unit) for s in run.series.all()),
        "outputs": sorted((o.path, o.parser) for o in run.outputs.all()),
        "deposit": run.output_deposit.kind if run.output_deposit else None,
    }


def _play_the_agent(agent: APIClient, run: Run, work: Path) -> dict[str, Any]:
    """What ``reprogate_agent`` does with one message, through the API."""
    assert hello(agent, environment=capture_environment()).status_code == 200
    claimed = claim(agent, run).json()
    assert claimed["claimed"] is True, claimed
    spec = claimed["run"]

    download: Any = agent.get(spec["bundle"]["url"])
    assert download.status_code == 200
    archive = work / "archive"
    archive.write_bytes(b"".join(download.streaming_content))
    data = archive.read_bytes()
    assert len(data) == spec["bundle"]["size"]
    assert hashlib.sha256(data).hexdigest() == spec["bundle"]["sha256"]
    assert download["X-Bundle-SHA256"] == spec["bundle"]["sha256"]
    (work / "space").mkdir(mode=0o711)
    space = Workspace.create(work / "space")
    extract_bundle(archive, run.campaign.bundle, space.bundle_dir, lambda: None)
    (space.bundle_dir / spec["entrypoint"]).chmod(0o755)
    declared = json.loads((space.bundle_dir / "environment/manifest.json").read_text())

    environment = json_safe(capture_environment())
    started = call(
        agent,
        f"runs/{run.pk}/running",
        {
            "attempt": spec["attempt"],
            "environment": environment,
            "declared_environment": declared,
            "cache_dropped": False,
        },
    )
    assert started.json()["state"] == "running"
    lines: list[str] = []
    result = run_harness(
        bundle_dir=space.bundle_dir,
        entrypoint=spec["entrypoint"],
        output_dir=space.output_dir,
        env={
            "REPROGATE_SCENARIO": json.dumps(spec["scenario"], sort_keys=True),
            "REPROGATE_RUN_ID": spec["public_id"],
        },
        limits=SandboxLimits(
            wall_seconds=spec["wall_limit_s"],
            cpu_seconds=spec["cpu_seconds"],
            file_bytes=spec["file_bytes"],
        ),
        on_line=lambda stream, line: lines.append(line),
        should_cancel=lambda: False,
        poll_seconds=0.1,
    )
    assert result.succeeded, result
    report = call(
        agent,
        f"runs/{run.pk}/report",
        {"attempt": 1, "progress": 0.5, "log_tail": "\n".join(lines)},
    )
    assert report.json() == {"continue": True}
    outputs = {}
    for path in sorted(space.output_dir.rglob("*")):
        relative = path.relative_to(space.output_dir).as_posix()
        outputs[relative] = path.read_bytes()
        uploaded = put_output(agent, run, relative, outputs[relative])
        assert uploaded.status_code == 201, uploaded.json()

    finished = agent.post(
        f"{BASE}runs/{run.pk}/finish",
        {
            "attempt": 1,
            "result": {
                "exit_code": result.exit_code,
                "stop_reason": result.stop_reason,
                "isolation": result.isolation,
                "duration_s": result.duration_s,
                "output_truncated": result.output_truncated,
                "log_tail": "\n".join(lines),
                "progress": result.progress,
                "message": result.message,
            },
            "warnings": [],
            "statement": signed_statement(
                run,
                outputs=outputs,
                environment=environment,
                exit_code=result.exit_code,
                stop_reason=result.stop_reason,
            ),
        },
        format="json",
    )
    assert finished.status_code == 200, finished.json()
    return dict(finished.json())


def test_an_agent_run_played_over_the_api_ends_like_the_agent_s_own(
    agent: APIClient,
    campaign: Campaign,
    issued: IssuedHostToken,
    runner_work_dir: Path,
) -> None:
    remote, local = runs_of(campaign)  # cold-c1, warm-c1: the same harness

    with tempfile.TemporaryDirectory() as work:
        finished = _play_the_agent(agent, remote, Path(work))
    execute_in_process(local)

    assert finished == {"state": "succeeded"}
    got, want = _results(remote), _results(local)
    assert got["state"] == want["state"] == Run.State.SUCCEEDED
    assert got == want
    assert ("ttft_ms", "p99", 41.5, "ms", "metrics.json") in got["metrics"]
    assert got["deposit"] == Deposit.Kind.RUN_OUTPUT
    assert remote.host.token == issued.token
    assert '"name": "cold-c1"' in remote.log_tail
    assert remote.environment
    assert remote.drift  # the test's declared kernel is not this host's
    assert remote.cache_dropped is False
    assert str(remote.public_id).encode() in bytes(remote.output_deposit.leaf)
    moves = [
        (e.data["from"], e.data["to"])
        for e in AuditEvent.objects.filter(
            action="run.transitioned", target_id=str(remote.pk)
        ).order_by("id")
    ]
    assert moves == [
        ("queued", "preparing"),
        ("preparing", "running"),
        ("running", "parsing"),
        ("parsing", "succeeded"),
    ]
    assert not (conf.uploads_dir() / f"run-{remote.pk}").exists()
