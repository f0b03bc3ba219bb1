"""The interference scenario for real: the victim's harness (fio in the
sandbox) alone, then beside the lab's neighbour (fio in a sandbox and cgroup of
its own) on the same loop device; the tenants' figures, Jain's index and the
slowdown. Skipped where the host has no loop devices, root or bubblewrap."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.lib.lab.scenario_document import decode, encode
from benchmarks.lib.lab.scenarios import interference
from benchmarks.lib.lab.scenarios.base import ScenarioError
from benchmarks.lib.sandbox.reporting import json_safe
from tests.benchmarks.lab.loops import loop_device, loop_reason, needs_loop
from tests.benchmarks.lab.scenario_host import LabContext, device_extras

VICTIM = """#!/bin/sh
dev=$(printf '%s' "$REPROGATE_DEVICES" | sed 's/.*": *"\\([^"]*\\)".*/\\1/')
probe='{"name": "probe_ms", "stat": "p99", "value": 1.5, "unit": "ms"}'
printf '{"metrics": [%s]}' "$probe" > "$REPROGATE_OUTPUT_DIR/metrics.json"
exec fio --name=victim --filename="$dev" --rw=randread --bs=4k --direct=1 \\
    --ioengine=psync --time_based --runtime=RUNTIME --output-format=json \\
    --output="$REPROGATE_OUTPUT_DIR/victim.json"
"""
NEIGHBOUR = {"rw": "randread", "bs": "4k", "iodepth": 4, "rate_iops": 500,
             "ioengine": "libaio"}  # fmt: skip
SCENARIO = {"kind": "interference", "neighbour": "noisy-500"}


def values(metrics: list[dict[str, Any]]) -> dict[tuple[str, str], float]:
    return {(m["name"], m["stat"]): m["value"] for m in metrics}


@pytest.mark.slow
@needs_loop
def test_the_victim_s_throughput_beside_a_neighbour_throttled_to_500_iops(
    tmp_path: Path,
) -> None:
    with loop_device(tmp_path, "tenants", size_mib=64) as device:
        context = LabContext(
            tmp_path / "run",
            scenario=SCENARIO,
            harness=VICTIM.replace("RUNTIME", "3"),
            extras=device_extras(tmp_path / "cdi", {"scratch0": device}),
            claim={"neighbours": {"noisy-500": NEIGHBOUR}},
        )

        outcome = interference.drive(context)

    got = values(outcome.metrics)
    assert outcome.failure is None, outcome.record
    assert context.phases == ["alone", "main"]
    assert (context.output_dir / "victim.json").is_file()
    assert (context.work_dir / "phase-alone" / "victim.json").is_file()
    assert got["victim_iops", "mean"] > 0
    assert got["victim_alone_iops", "mean"] > 0
    assert 400 <= got["neighbour_iops", "mean"] <= 520
    assert 0 < got["fairness_jain", "mean"] <= 1
    assert ("interference_slowdown_pct", "mean") in got
    assert ("neighbour_read_lat_us", "p99") in got
    assert got["alone_probe_ms", "p99"] == 1.5  # the harness's own figure, alone
    victim = outcome.record["tenants"]["victim"]["main"]
    assert victim["source"] == "diskstats less the neighbour's cgroup"
    neighbour = outcome.record["tenants"]["neighbour"]
    assert neighbour["cgroup_io"]["reads"] > 0
    assert [a["do"] for a in outcome.record["actions"]] == [
        "neighbour_start", "neighbour_busy", "neighbour_stop",
    ]  # fmt: skip
    assert outcome.record["fairness"]["demand"]["neighbour"]["iops"] == 500
    sent = decode(
        encode("interference", outcome.metrics, [], json_safe(outcome.record))
    )
    assert len(sent.metrics) == len(outcome.metrics)


def test_a_bad_neighbour_job_fails_the_scenario_with_its_paths(tmp_path: Path) -> None:
    bad = {"rw": "randread", "bs": "4k", "exec_prerun": "rm -rf /", "iodepth": 0}
    context = LabContext(
        tmp_path / "run",
        scenario=SCENARIO,
        harness="#!/bin/sh\n",
        claim={"neighbours": {"noisy-500": bad}},
    )

    with pytest.raises(ScenarioError) as failed:
        interference.drive(context)

    said = str(failed.value)
    assert "neighbours.noisy-500.exec_prerun: not an allowed option" in said
    assert "neighbours.noisy-500.iodepth: 0 is outside" in said
    assert context.phases == []


@pytest.mark.parametrize(
    ("scenario", "jobs", "said"),
    [
        (SCENARIO, {"other": NEIGHBOUR},
         "neighbours.noisy-500: no such neighbour job in the lab plan (it has o"),
        (SCENARIO, None, "neighbours.noisy-500: no such neighbour job"),
        ({"kind": "interference", "neighbour": NEIGHBOUR}, {"noisy-500": NEIGHBOUR},
         "scenario.neighbour: Must name a neighbour job of the lab plan"),
        ({"kind": "interference"}, {}, "scenario.neighbour: Is required"),
    ],
)  # fmt: skip
def test_the_scenario_names_a_job_of_the_lab_plan(
    tmp_path: Path, scenario: dict[str, Any], jobs: Any, said: str
) -> None:
    context = LabContext(tmp_path / "run", scenario=scenario, harness="#!/bin/sh\n",
                         claim={"neighbours": jobs})  # fmt: skip

    with pytest.raises(ScenarioError) as failed:
        interference.drive(context)

    assert said in str(failed.value)
    assert context.phases == []


def test_a_policy_without_block_devices_cannot_interfere(tmp_path: Path) -> None:
    context = LabContext(
        tmp_path / "run",
        scenario=SCENARIO,
        harness="#!/bin/sh\n",
        claim={"neighbours": {"noisy-500": NEIGHBOUR}},
    )

    with pytest.raises(ScenarioError, match="needs block devices"):
        interference.drive(context)

    assert context.phases == []


@pytest.mark.slow
@pytest.mark.skipif(loop_reason() is not None, reason=loop_reason() or "")
def test_an_unthrottled_neighbour_s_demand_is_measured_alone(tmp_path: Path) -> None:
    job = {"rw": "randread", "bs": "4k", "ioengine": "psync"}
    with loop_device(tmp_path, "greedy", size_mib=64) as device:
        context = LabContext(
            tmp_path / "run",
            scenario={"kind": "interference", "neighbour": "greedy"},
            harness=VICTIM.replace("RUNTIME", "2"),
            extras=device_extras(tmp_path / "cdi", {"scratch0": device}),
            claim={"neighbours": {"greedy": job}},
        )

        outcome = interference.drive(context)

    assert outcome.failure is None, outcome.record
    demand = outcome.record["fairness"]["demand"]["neighbour"]
    assert demand["source"] == "neighbour-alone"
    assert demand["iops"] > 0
    assert outcome.record["neighbour_alone"]["fio"]["ios"] > 0
    assert 0 < values(outcome.metrics)["fairness_jain", "mean"] <= 1
