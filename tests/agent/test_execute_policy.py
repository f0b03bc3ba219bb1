"""The pool's policy on the agent's side: it comes with the claim, is resolved
against the host's CDI specs before anything is fetched, fails the run with a
named stop reason when it cannot be applied (an unknown device, a non-root
agent), and otherwise reaches the sandbox: a loop device the policy names is
the harness's, and the run's isolation record says so."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from reprogate_agent import execute
from reprogate_agent.client import RunnerClient
from reprogate_agent.execute import Terms, execute_run
from tests.agent.fake_server import FakeServer, Reply
from tests.agent.test_execute import archive, claimed
from tests.benchmarks.lab.loops import block_spec, loop_device, needs_loop

POLICY = {
    "schema": "reprogate.lab-policy/v1",
    "devices": [{"name": "reprogate.dev/block=scratch0", "access": "rw"}],
}
DD = b"""#!/bin/sh
dev=$(python3 -c 'import json, os
print(json.loads(os.environ["REPROGATE_DEVICES"])["reprogate.dev/block=scratch0"])')
dd if=/dev/zero of="$dev" bs=1M count=4 oflag=direct 2>&1 && echo wrote-4MiB
"""


def script(fake: FakeServer, harness: bytes, policy: dict[str, Any]) -> None:
    bundle = archive({"harness/run.sh": harness})
    run = claimed(bundle, policy=policy)
    run["run"]["files"][0].update(
        size=len(harness), sha256=hashlib.sha256(harness).hexdigest()
    )
    fake.script("runs/7/claim", Reply(200, run))
    fake.script("runs/7/bundle", Reply(200, bundle))
    fake.script("runs/7/report", Reply(200, {"continue": True}))
    fake.script("runs/7/fail", Reply(200, {"state": "failed"}))
    fake.script("runs/7/running", Reply(200, {"state": "running"}))
    fake.script("runs/7/finish", Reply(200, {"state": "succeeded"}))


@pytest.fixture
def client(fake: FakeServer) -> RunnerClient:
    return RunnerClient(fake.url, "rgh_" + "t" * 43, retries=1, sleep=lambda s: None)


def test_an_unknown_device_fails_the_run_before_the_bundle_is_fetched(
    fake: FakeServer,
    client: RunnerClient,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REPROGATE_CDI_DIRS", str(tmp_path / "no-specs"))
    monkeypatch.setattr(execute.os, "geteuid", lambda: 0)
    script(fake, b"#!/bin/sh\n", POLICY)

    assert execute_run(client, Terms("lab-07@h"), tmp_path, 7, 1) == "failed"

    (failed,) = fake.calls("runs/7/fail")
    assert failed.json()["stop_reason"] == "device_unavailable"
    assert "reprogate.dev/block=scratch0: no CDI spec" in failed.json()["message"]
    assert fake.calls("runs/7/bundle") == []


def test_a_non_root_agent_refuses_a_device_policy(
    fake: FakeServer,
    client: RunnerClient,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(execute.os, "geteuid", lambda: 1000)
    script(fake, b"#!/bin/sh\n", POLICY)

    assert execute_run(client, Terms("lab-07@h"), tmp_path, 7, 1) == "failed"

    (failed,) = fake.calls("runs/7/fail")
    assert failed.json()["stop_reason"] == "policy_needs_root"
    assert "does not run as root" in failed.json()["message"]


@needs_loop
def test_the_policy_s_loop_device_reaches_the_harness(
    fake: FakeServer,
    client: RunnerClient,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with loop_device(tmp_path, "scratch") as device:
        block_spec(tmp_path / "cdi", {"scratch0": device})
        monkeypatch.setenv("REPROGATE_CDI_DIRS", str(tmp_path / "cdi"))
        script(fake, DD, POLICY)
        work = tmp_path / "work"
        work.mkdir()

        assert execute_run(client, Terms("lab-07@h"), work, 7, 1) == "succeeded"

    (finished,) = fake.calls("runs/7/finish")
    result = finished.json()["result"]
    assert result["stop_reason"] == "exited", result
    assert result["exit_code"] == 0
    assert "wrote-4MiB" in result["log_tail"]
    [node] = result["isolation"]["devices"]
    assert (node["name"], node["path"]) == ("reprogate.dev/block=scratch0", device)
    assert json.dumps(result["isolation"]["endpoints"]) == "[]"
