"""The agent drives every run through its scenario kind's driver
(``benchmarks.lib.lab.scenarios``): a kind it has no driver for fails the run
before anything is fetched; a driver's phases run the harness in the sandbox;
what it measured goes up as the runner artefact ``scenario.json``, is named in
the signed statement and its actions in the statement's predicate; a driver's
failure fails the run with stop reason ``scenario_failed``."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any, cast

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from benchmarks.lib.lab import scenarios
from benchmarks.lib.lab.scenario_document import decode
from benchmarks.lib.lab.scenarios.base import (
    Phase,
    ScenarioContext,
    ScenarioError,
    ScenarioOutcome,
    metric,
)
from reprogate_agent.client import RunnerClient
from reprogate_agent.execute import Terms, execute_run
from tests.agent.fake_server import FakeServer, Reply
from tests.agent.test_execute import archive, claimed

HARNESS = b"""#!/bin/sh
echo "phase ${PHASE:-main}" > "$REPROGATE_OUTPUT_DIR/out.txt"
"""


def _scripted(fake: FakeServer, scenario: dict[str, Any]) -> None:
    bundle = archive({"harness/run.sh": HARNESS})
    run = claimed(bundle, scenario=scenario)
    run["run"]["files"] = [
        {"path": "harness/run.sh", "kind": "harness", "size": len(HARNESS),
         "sha256": hashlib.sha256(HARNESS).hexdigest()}
    ]  # fmt: skip
    fake.script("runs/7/claim", Reply(200, run))
    fake.script("runs/7/bundle", Reply(200, bundle))
    fake.script("runs/7/report", Reply(200, {"continue": True}))
    fake.script("runs/7/running", Reply(200, {"state": "running"}))
    fake.script("runs/7/outputs/out.txt", Reply(201, {"path": "out.txt"}))
    fake.script("runs/7/finish", Reply(200, {"state": "failed"}))
    fake.script("runs/7/fail", Reply(200, {"state": "failed"}))


def _client(fake: FakeServer) -> RunnerClient:
    return RunnerClient(fake.url, "rgh_" + "t" * 43, retries=1, sleep=lambda s: None)


def two_phases(context: ScenarioContext) -> ScenarioOutcome:
    """A test kind: phase "first" beside the run's outputs, then the main one."""
    first = Phase("first", context.work_dir / "first", {"PHASE": "first"})
    context.run_harness(first)
    context.beat()
    starts: list[float] = []
    result = context.run_harness(
        Phase("main", context.output_dir), on_start=starts.append
    )
    seen = (context.work_dir / "first" / "out.txt").read_text().strip()
    return ScenarioOutcome(
        result=result,
        metrics=[metric("phase_gap_s", "mean", 0.5, "s", "clock")],
        series=[{"name": "throughput", "unit": "MiB/s", "points": [[0, 1.0]]}],
        record={"actions": [{"do": "test", "seen": seen, "started": len(starts)}]},
        failure="the test kind always fails",
    )


def test_a_driver_s_phases_document_and_failure_reach_the_server(
    fake: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(cast(dict[str, Any], scenarios.DRIVERS), "twice", two_phases)
    _scripted(fake, {"name": "s", "kind": "twice"})
    key = Ed25519PrivateKey.generate()

    execute_run(_client(fake), Terms("lab-07@h", host_key=key), tmp_path, 7, 1)

    (put,) = fake.calls("runs/7/artefacts/scenario.json")
    document = decode(put.body)
    assert document.kind == "twice"
    assert [m.name for m in document.metrics] == ["phase_gap_s"]
    assert document.record["actions"] == [
        {"do": "test", "seen": "phase first", "started": 1}
    ]
    (out,) = fake.calls("runs/7/outputs/out.txt")
    assert out.body == b"phase main\n"  # only the main phase's outputs are the run's
    finish = fake.calls("runs/7/finish")[0].json()
    assert finish["result"]["stop_reason"] == "scenario_failed"
    assert finish["result"]["exit_code"] == 0
    assert finish["result"]["message"] == "the test kind always fails"
    envelope = json.loads(finish["statement"])
    statement = json.loads(base64.b64decode(envelope["payload"]))
    digest = hashlib.sha256(put.body).hexdigest()
    assert {"name": "runner/scenario.json", "digest": {"sha256": digest}} in (
        statement["subject"]
    )
    assert statement["predicate"]["actions"] == document.record["actions"]
    assert statement["predicate"]["exit"]["stop_reason"] == "scenario_failed"


def test_a_kind_without_a_driver_fails_before_anything_is_fetched(
    fake: FakeServer, tmp_path: Path
) -> None:
    _scripted(fake, {"name": "s", "kind": "chaos"})

    assert execute_run(_client(fake), Terms("lab-07@h"), tmp_path, 7, 1) == "failed"

    (failed,) = fake.calls("runs/7/fail")
    assert failed.json()["stop_reason"] == "scenario_failed"
    assert "no driver for scenario kind 'chaos'" in failed.json()["message"]
    assert fake.calls("runs/7/bundle") == []


def hook_missing(context: ScenarioContext) -> ScenarioOutcome:
    raise ScenarioError("The pool's policy names no 'fault' hook.")


def test_a_driver_that_stops_before_the_harness_fails_the_run(
    fake: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(
        cast(dict[str, Any], scenarios.DRIVERS), "hookless", hook_missing
    )
    _scripted(fake, {"name": "s", "kind": "hookless"})

    assert execute_run(_client(fake), Terms("lab-07@h"), tmp_path, 7, 1) == "failed"

    (failed,) = fake.calls("runs/7/fail")
    assert failed.json()["stop_reason"] == "scenario_failed"
    assert "names no 'fault' hook" in failed.json()["message"]
    assert fake.calls("runs/7/finish") == []


def test_a_steady_run_sends_no_scenario_document(
    fake: FakeServer, tmp_path: Path
) -> None:
    _scripted(fake, {"name": "s"})
    fake.script("runs/7/finish", Reply(200, {"state": "succeeded"}))

    assert execute_run(_client(fake), Terms("lab-07@h"), tmp_path, 7, 1) == "succeeded"

    assert fake.calls("runs/7/artefacts/scenario.json") == []
    assert fake.calls("runs/7/finish")[0].json()["result"]["stop_reason"] == "exited"
