"""A failover run through the agent with real tools: the sandbox, the run's
endpoint relay to an nbdkit export, the embedded default's fault hook and the
example harness's failover mode (reading the export over NBD once it runs):
an error window of 2 s at 3 s gives errors and a recovery within 2.5 s."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.lib.lab import nbd_fault
from benchmarks.lib.lab.scenario_document import decode
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


@pytest.mark.slow
def test_a_failover_run_sees_the_errors_and_recovers(
    fake: FakeServer, tmp_path: Path, export: tuple[int, Path]
) -> None:
    port, fault = export
    names = ("run.sh", "harness.py", "kvsim.py", "tracegen.py", "nbdprobe.py")
    files = {f"harness/{n}": (HARNESS / n).read_bytes() for n in names}
    bundle = archive(files)
    scenario = {
        "name": "failover-eio", "kind": "failover", "cache": "warm", "concurrency": 1,
        "batch_size": 1, "duration_s": 8,
        "actions": [{"at_s": 3, "do": "error_window", "for_s": 2}],
    }  # fmt: skip
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
    document = decode(put.body)
    found = {m.name: m.value for m in document.metrics}
    assert found["failover_errors"] > 0
    assert found["failover_recovery_s"] <= 2.5
    assert found["failover_first_error_s"] <= 1.0
    verbs = [(a["verb"], a["exit_code"]) for a in document.record["actions"]]
    assert verbs == [("start", 0), ("stop", 0)]
    netns = document.record["actions"][0]["argument"]["netns"]
    assert netns.startswith("/run/netns/reprogate-")  # the run's, for tc
    assert [s.name for s in document.series] == ["failover_throughput"]
