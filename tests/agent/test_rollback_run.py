"""A rollback run through the agent: the pool's hook that changes nothing the
capture sees fails the run with ``scenario_failed`` after both phases, and the
scenario document says why (an empty capture difference)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from benchmarks.lib.lab.scenario_document import decode
from reprogate_agent.client import RunnerClient
from reprogate_agent.execute import Terms, execute_run
from tests.agent.fake_server import FakeServer, Reply
from tests.agent.test_execute import archive, claimed

HARNESS = b"""#!/bin/sh
metric='{"name": "probe_ms", "stat": "mean", "value": 2.0, "unit": "ms"}'
printf '{"metrics": [%s]}' "$metric" > "$REPROGATE_OUTPUT_DIR/metrics.json"
"""


def test_a_rollback_whose_hook_changes_nothing_fails_the_run(
    fake: FakeServer, tmp_path: Path
) -> None:
    hook = tmp_path / "switch"
    hook.write_text('#!/bin/sh\necho switched "$1"\n')
    hook.chmod(0o755)
    bundle = archive({"harness/run.sh": HARNESS})
    run = claimed(
        bundle,
        scenario={"name": "s", "kind": "rollback", "to": "driver-535"},
        policy={"schema": "reprogate.lab-policy/v1", "hooks": {"rollback": str(hook)}},
    )
    run["run"]["files"] = [
        {"path": "harness/run.sh", "kind": "harness", "size": len(HARNESS),
         "sha256": hashlib.sha256(HARNESS).hexdigest()}
    ]  # fmt: skip
    for route, reply in (
        ("claim", Reply(200, run)), ("bundle", Reply(200, bundle)),
        ("report", Reply(200, {"continue": True})),
        ("running", Reply(200, {"state": "running"})),
        ("outputs/metrics.json", Reply(201, {"path": "metrics.json"})),
        ("finish", Reply(200, {"state": "failed"})),
    ):  # fmt: skip
        fake.script(f"runs/7/{route}", reply)
    client = RunnerClient(fake.url, "rgh_" + "t" * 43, retries=1, sleep=lambda s: None)

    assert execute_run(client, Terms("lab-07@h"), tmp_path, 7, 1) == "failed"

    finish = fake.calls("runs/7/finish")[0].json()
    assert finish["result"]["stop_reason"] == "scenario_failed"
    assert "capture shows no change" in finish["result"]["message"]
    (put,) = fake.calls("runs/7/artefacts/scenario.json")
    document = decode(put.body)
    assert document.kind == "rollback"
    assert [p["name"] for p in document.record["phases"]] == ["a", "b"]
    assert document.record["capture"]["difference"] == []
    assert document.record["actions"][0]["output"] == "switched switch"
    names = {m.name for m in document.metrics}
    assert {"phase_a_probe_ms", "phase_b_probe_ms", "rollback_switch_s"} <= names
