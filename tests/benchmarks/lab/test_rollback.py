"""The rollback scenario for real: phase A, the pool's rollback hook, a fresh
capture, phase B. The embedded hook switches a loop device's I/O scheduler and
the capture shows it; a hook that does nothing fails the run; so does one that
fails. The hook's own calls and the capture difference, on their own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.lib.lab.scenario_document import decode, encode
from benchmarks.lib.lab.scenarios import rollback
from benchmarks.lib.lab.scenarios.base import ScenarioError
from benchmarks.lib.lab.scenarios.capture_diff import capture_difference
from benchmarks.lib.sandbox.reporting import json_safe
from tests.benchmarks.lab.loops import loop_device, needs_loop
from tests.benchmarks.lab.scenario_host import LabContext, device_extras

EMBEDDED_HOOK = Path(rollback.__file__).with_name("switch_hook.py")
HARNESS = """#!/bin/sh
cat > "$REPROGATE_OUTPUT_DIR/metrics.json" <<'EOF'
{"metrics": [{"name": "probe_read_ms", "stat": "p99", "value": 1.5, "unit": "ms"}]}
EOF
"""


def hook(tmp_path: Path, body: str) -> str:
    path = tmp_path / "hook"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


def names(metrics: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(m["name"], m["stat"]) for m in metrics}


def set_scheduler(device: str, name: str) -> None:
    Path(f"/sys/block/{Path(device).name}/queue/scheduler").write_text(name)


@needs_loop
def test_the_embedded_hook_switches_the_scheduler_and_the_capture_shows_it(
    tmp_path: Path,
) -> None:
    with loop_device(tmp_path, "rollback", size_mib=8) as device:
        set_scheduler(device, "none")
        context = LabContext(
            tmp_path / "run",
            scenario={"kind": "rollback", "to": "mq-deadline"},
            harness=HARNESS,
            extras=device_extras(tmp_path / "cdi", {"scratch0": device}),
            hooks={"rollback": str(EMBEDDED_HOOK)},
        )

        outcome = rollback.drive(context)

    assert outcome.failure is None, outcome.record
    assert context.phases == ["a", "b"]
    change = {
        "path": f"block[{Path(device).name}].scheduler",
        "before": "none",
        "after": "mq-deadline",
    }
    assert change in outcome.record["capture"]["difference"]
    call = outcome.record["actions"][0]
    assert (call["verb"], call["exit_code"]) == ("switch", 0)
    assert call["argument"]["devices"] == {"reprogate.dev/block=scratch0": device}
    assert call["argument"]["to"] == "mq-deadline"
    expected = {
        ("phase_a_probe_read_ms", "p99"),
        ("phase_b_probe_read_ms", "p99"),
        ("rollback_switch_s", "mean"),
        ("rollback_capture_changes", "total"),
    }
    assert expected <= names(outcome.metrics)
    assert (context.output_dir / "metrics.json").is_file()  # phase A: the run's
    assert (context.work_dir / "phase-b" / "metrics.json").is_file()
    sent = decode(encode("rollback", outcome.metrics, [], json_safe(outcome.record)))
    assert len(sent.metrics) == len(outcome.metrics)


def test_a_hook_that_changes_nothing_fails_the_run(tmp_path: Path) -> None:
    context = LabContext(
        tmp_path / "run",
        scenario={"kind": "rollback", "to": "driver-1.2"},
        harness=HARNESS,
        hooks={"rollback": hook(tmp_path, "exit 0")},
    )

    outcome = rollback.drive(context)

    assert context.phases == ["a", "b"]
    assert outcome.failure is not None
    assert "capture shows no change" in outcome.failure
    assert outcome.record["capture"]["difference"] == []
    assert ("phase_b_probe_read_ms", "p99") in names(outcome.metrics)


def test_a_failing_hook_fails_the_run_before_phase_b(tmp_path: Path) -> None:
    context = LabContext(
        tmp_path / "run",
        scenario={"kind": "rollback", "to": "driver-1.2"},
        harness=HARNESS,
        hooks={"rollback": hook(tmp_path, "echo no such firmware >&2; exit 3")},
    )

    outcome = rollback.drive(context)

    assert context.phases == ["a"]
    assert outcome.failure == (
        "The pool's rollback hook exited with status 3: no such firmware"
    )
    assert outcome.record["actions"][0]["argument"]["to"] == "driver-1.2"


def test_a_rollback_needs_a_hook_and_a_target(tmp_path: Path) -> None:
    no_hook = LabContext(
        tmp_path / "a", scenario={"kind": "rollback", "to": "x"}, harness=HARNESS
    )
    no_target = LabContext(
        tmp_path / "b",
        scenario={"kind": "rollback"},
        harness=HARNESS,
        hooks={"rollback": hook(tmp_path, "")},
    )

    with pytest.raises(ScenarioError, match="names no 'rollback' hook"):
        rollback.drive(no_hook)
    with pytest.raises(
        ScenarioError, match=r"scenario\.to: Is required for a rollback"
    ):
        rollback.drive(no_target)

    assert no_hook.phases == no_target.phases == []


@pytest.mark.parametrize(
    ("argv", "code", "said"),
    [
        (["switch"], 2, "usage"),
        (["flip", "{}"], 2, "usage"),
        (["switch", "[1]"], 1, "must be a JSON object"),
        (["switch", '{"to": "../x", "devices": {"d": "/dev/null"}}'], 1, "'to' must"),
        (["switch", '{"to": "none"}'], 1, "no block device to switch"),
        (["switch", '{"to": "none", "devices": {"d": "/dev/null"}}'], 1,
         "/dev/null is not a block device"),
    ],
)  # fmt: skip
def test_the_embedded_hook_refuses_a_wrong_call(
    argv: list[str], code: int, said: str
) -> None:
    done = subprocess.run(
        [sys.executable, str(EMBEDDED_HOOK), *argv],
        capture_output=True, text=True, check=False, timeout=30,
    )  # fmt: skip

    assert done.returncode == code
    assert said in done.stderr


def test_the_capture_difference_walks_objects_and_named_lists() -> None:
    before = {"captured_at": "t0", "kernel": {"release": "6.1"},
              "block": [{"name": "loop0", "scheduler": "none"}],
              "gpus": [{"driver": "550"}]}  # fmt: skip
    after = {"captured_at": "t1", "kernel": {"release": "6.1"},
             "block": [{"name": "loop0", "scheduler": "kyber"}, {"name": "loop1"}],
             "gpus": [{"driver": "535"}]}  # fmt: skip

    changes = capture_difference(before, after)

    assert changes == [
        {"path": "block[loop0].scheduler", "before": "none", "after": "kyber"},
        {"path": "block[loop1]", "before": None, "after": {"name": "loop1"}},
        {"path": "gpus[0].driver", "before": "550", "after": "535"},
    ]
    assert capture_difference(before, json.loads(json.dumps(before))) == []
