"""An interference run through the agent, on a loop device the pool's policy
names: the claim's neighbour job runs beside the harness and the scenario
document carries the victim's throughput and Jain's index."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from benchmarks.lib.lab.scenario_document import decode
from reprogate_agent.client import RunnerClient
from reprogate_agent.execute import Terms, execute_run
from tests.agent.fake_server import FakeServer, Reply
from tests.agent.test_execute import archive, claimed
from tests.benchmarks.lab.loops import block_spec, loop_device, needs_loop

HARNESS = b"""#!/bin/sh
dev=$(printf '%s' "$REPROGATE_DEVICES" | sed 's/.*": *"\\([^"]*\\)".*/\\1/')
exec fio --name=victim --filename="$dev" --rw=randread --bs=4k --direct=1 \\
    --ioengine=psync --time_based --runtime=2 --output-format=json \\
    --output="$REPROGATE_OUTPUT_DIR/victim.json"
"""
JOB = {"rw": "randread", "bs": "4k", "rate_iops": 500, "ioengine": "libaio"}


@pytest.mark.slow
@needs_loop
def test_an_interference_run_sends_the_tenants_figures(
    fake: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = archive({"harness/run.sh": HARNESS})
    run = claimed(
        bundle,
        scenario={"name": "s", "kind": "interference", "neighbour": "noisy-500"},
        policy={"schema": "reprogate.lab-policy/v1",
                "devices": [{"name": "reprogate.dev/block=scratch0"}]},
        neighbours={"noisy-500": JOB},
    )  # fmt: skip
    run["run"]["files"] = [
        {"path": "harness/run.sh", "kind": "harness", "size": len(HARNESS),
         "sha256": hashlib.sha256(HARNESS).hexdigest()}
    ]  # fmt: skip
    for route, reply in (
        ("claim", Reply(200, run)), ("bundle", Reply(200, bundle)),
        ("report", Reply(200, {"continue": True})),
        ("running", Reply(200, {"state": "running"})),
        ("outputs/victim.json", Reply(201, {"path": "victim.json"})),
        ("finish", Reply(200, {"state": "succeeded"})),
    ):  # fmt: skip
        fake.script(f"runs/7/{route}", reply)
    client = RunnerClient(fake.url, "rgh_" + "t" * 43, retries=1, sleep=lambda s: None)

    with loop_device(tmp_path, "agent", size_mib=32) as device:
        block_spec(tmp_path / "cdi", {"scratch0": device})
        monkeypatch.setenv("REPROGATE_CDI_DIRS", str(tmp_path / "cdi"))
        state = execute_run(client, Terms("lab-07@h"), tmp_path, 7, 1)

    assert state == "succeeded"
    assert fake.calls("runs/7/finish")[0].json()["result"]["stop_reason"] == "exited"
    (put,) = fake.calls("runs/7/artefacts/scenario.json")
    document = decode(put.body)
    values = {(m.name, m.stat): m.value for m in document.metrics}
    assert values["victim_iops", "mean"] > 0
    assert 400 <= values["neighbour_iops", "mean"] <= 520
    assert 0 < values["fairness_jain", "mean"] <= 1
    assert document.record["neighbour"]["name"] == "noisy-500"
