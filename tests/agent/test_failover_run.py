"""A failover run through the agent with real tools: the sandbox, the run's
endpoint relay to an nbdkit export, the embedded default's fault hook and the
example harness's failover mode (reading the export over NBD once it runs):
an error window of 2 s at 3 s gives errors, which stop within a second of the
window's end, and a recovery.

The probe offers a steady 500 reads a second and does not make up for late
ones, so on a busy host (CI runs two test passes side by side on two cores) a
second after the fault may fall short of 90 % of the pre-fault median for a
reason of the host's. How the recovery time is computed is the unit tests'
business (tests/benchmarks/scenarios/test_failover.py); here the run is long
enough for the throughput to come back, and the fault's prompt end is read
from the harness's own ``errors`` series, which a busy host cannot fake."""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks.lib.lab import nbd_fault
from benchmarks.lib.lab.scenario_document import ScenarioDocument, decode
from benchmarks.lib.sandbox.capabilities import host_support
from reprogate_agent.client import RunnerClient
from reprogate_agent.execute import Terms, execute_run
from tests.agent.fake_server import FakeServer, Reply
from tests.agent.test_execute import archive, claimed
from tests.benchmarks.lab.test_endpoints import free_port
from tests.benchmarks.scenarios.test_fault_hook import HARNESS, _reason


def _sandbox_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root (the run's network namespace and relay)"
    if not host_support().bwrap_works:
        return "needs bubblewrap"
    return None


@pytest.fixture
def export(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """(port, fault hook) of a running export."""
    why = _reason() or _sandbox_reason()
    if why:
        pytest.skip(why)
    state, port = tmp_path / "nbd", free_port()
    process = nbd_fault.start_export(state, port)
    hook = nbd_fault.write_hook(tmp_path / "hooks" / "fault", state)
    try:
        yield port, hook
    finally:
        nbd_fault.stop_export(process)


def _failover_run(
    fake: FakeServer, tmp_path: Path, export: tuple[int, Path], scenario: dict[str, Any]
) -> tuple[ScenarioDocument, dict[str, Any]]:
    """The scenario run through the agent with the example harness; its
    ``scenario.json`` and the harness's ``metrics.json``."""
    port, fault = export
    names = ("run.sh", "harness.py", "kvsim.py", "tracegen.py", "nbdprobe.py")
    files = {f"harness/{n}": (HARNESS / n).read_bytes() for n in names}
    bundle = archive(files)
    policy = {
        "schema": "reprogate.lab-policy/v1",
        "endpoints": [{"name": "nbd0", "address": f"tcp:127.0.0.1:{port}"}],
        "hooks": {"fault": str(fault)},
    }
    run = claimed(bundle, scenario=scenario, policy=policy, wall_limit_s=60)
    run["run"]["files"] = [
        {"path": p, "kind": "harness", "size": len(b),
         "sha256": hashlib.sha256(b).hexdigest()}
        for p, b in files.items()
    ]  # fmt: skip
    fake.script("runs/7/claim", Reply(200, run))
    fake.script("runs/7/bundle", Reply(200, bundle))
    fake.script("runs/7/report", Reply(200, {"continue": True}))
    fake.script("runs/7/running", Reply(200, {"state": "running"}))
    fake.script("runs/7/outputs/metrics.json", Reply(201, {"path": "metrics.json"}))
    fake.script("runs/7/finish", Reply(200, {"state": "succeeded"}))
    client = RunnerClient(fake.url, "rgh_" + "t" * 43, retries=1, sleep=lambda s: None)
    work = tmp_path / "work"
    work.mkdir()

    assert execute_run(client, Terms("lab-07@h"), work, 7, 1) == "succeeded"

    finish = fake.calls("runs/7/finish")[0].json()
    assert finish["result"]["stop_reason"] == "exited", finish["result"]
    (put,) = fake.calls("runs/7/artefacts/scenario.json")
    (harness,) = fake.calls("runs/7/outputs/metrics.json")
    return decode(put.body), harness.json()


def _series(metrics: dict[str, Any], name: str) -> list[tuple[float, float]]:
    (found,) = [s for s in metrics["series"] if s["name"] == name]
    return [(float(t), float(v)) for t, v in found["points"]]


@pytest.mark.slow
def test_a_failover_run_sees_the_errors_and_recovers(
    fake: FakeServer, tmp_path: Path, export: tuple[int, Path]
) -> None:
    scenario = {
        "name": "failover-eio", "kind": "failover", "cache": "warm", "concurrency": 1,
        "batch_size": 1, "duration_s": 12,
        "actions": [{"at_s": 3, "do": "error_window", "for_s": 2}],
    }  # fmt: skip

    document, harness = _failover_run(fake, tmp_path, export, scenario)

    found = {m.name: m.value for m in document.metrics}
    seen = ([s.points for s in document.series], document.record["notes"])
    assert found["failover_errors"] > 0
    assert found["failover_first_error_s"] <= 1.0
    verbs = [(a["verb"], a["exit_code"]) for a in document.record["actions"]]
    assert verbs == [("start", 0), ("stop", 0)]
    (stop,) = [a for a in document.record["actions"] if a["verb"] == "stop"]
    ended = stop["at_s"] + stop["duration_s"]
    # a point counts the second before its time, and the harness's clock
    # starts after the runner's: a point a second past the end saw no fault
    errors_after = [v for t, v in _series(harness, "errors") if t >= ended + 1]
    assert len(errors_after) >= 3
    assert not any(errors_after), _series(harness, "errors")
    assert "failover_recovery_s" in found, seen
    assert 0 <= found["failover_recovery_s"] <= scenario["duration_s"] - ended
    netns = document.record["actions"][0]["argument"]["netns"]
    assert netns.startswith("/run/netns/reprogate-")  # the run's, for tc
    assert [s.name for s in document.series] == ["failover_throughput"]


@pytest.mark.slow
def test_a_bandwidth_fault_shapes_the_run_s_own_network(
    fake: FakeServer, tmp_path: Path, export: tuple[int, Path]
) -> None:
    if shutil.which("tc") is None:
        pytest.skip("needs tc (iproute2)")
    scenario = {
        "name": "failover-slow", "kind": "failover", "cache": "warm",
        "concurrency": 1, "batch_size": 1, "duration_s": 11,
        "actions": [{"at_s": 3, "do": "bandwidth", "for_s": 4, "rate": "2mbit"}],
    }  # fmt: skip

    document, _ = _failover_run(fake, tmp_path, export, scenario)

    calls = document.record["actions"]
    assert [(a["verb"], a["exit_code"]) for a in calls] == [("start", 0), ("stop", 0)]
    assert "shaped to 2mbit (tbf)" in calls[0]["output"]
    (throughput,) = document.series
    # the harness's clock starts a little after the runner's: whole seconds
    # well inside each side
    before = [v for t, v in throughput.points if t <= 2]
    shaped = [v for t, v in throughput.points if 5 <= t <= 6]
    # (the best second of each side: a busy host slows a second, it never
    # lifts one over the shaped rate)
    assert max(shaped) < 0.5 * max(before)  # 2 Mbit/s: 0.24 MiB/s
    after = [v for t, v in throughput.points if t >= 9]
    assert max(after) > 5 * max(shaped)  # unshaped again
    found = {m.name: m.value for m in document.metrics}
    assert found["failover_errors"] == 0  # slower, not failing
