"""The ``failover`` driver: the scenario's actions through the pool's fault
hook at their offsets from the harness's start (``HOOK start|stop <json>``),
and the metrics read from the harness's own per-second series. The whole path
with a real nbdkit export, the embedded default's hook and the example
harness's failover mode: ``test_failover_nbdkit``."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from benchmarks.lib.lab.scenarios import failover
from benchmarks.lib.lab.scenarios.base import Phase, ScenarioError
from benchmarks.lib.parsers import Series
from benchmarks.lib.sandbox import HarnessResult, SandboxLimits

RECORDING_HOOK = """#!/bin/sh
printf '%s %s\\n' "$1" "$2" >> "{log}"
{extra}
"""


def series(name: str, values: list[float]) -> Series:
    points = tuple((float(i + 1), float(v)) for i, v in enumerate(values))
    return Series(name, "MiB/s", points, "test")


@dataclass
class FakeContext:
    """A harness that "runs" for ``seconds`` and writes ``document``."""

    work_dir: Path
    hooks: dict[str, str]
    document: dict[str, Any]
    seconds: float = 1.0
    run: dict[str, Any] = field(default_factory=dict)
    extras: None = None
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    netns: str = ""

    @property
    def output_dir(self) -> Path:
        return self.work_dir / "out"

    def run_harness(
        self, phase: Phase, *, on_start: Callable[[float], None] | None = None
    ) -> HarnessResult:
        phase.output_dir.mkdir(parents=True, exist_ok=True)
        if on_start is not None:
            on_start(self.clock())
        time.sleep(self.seconds)
        (phase.output_dir / "metrics.json").write_text(json.dumps(self.document))
        return HarnessResult(0, "exited", "", {}, self.seconds, "", "", False, 1.0)

    def capture(self) -> dict[str, Any]:
        return {}

    def drop_page_cache(self) -> bool:
        return False

    def beat(self) -> None:
        pass

    def clock(self) -> float:
        return time.monotonic()


def _hook(tmp_path: Path, extra: str = "") -> tuple[Path, Path]:
    log = tmp_path / "hook.log"
    hook = tmp_path / "fault"
    hook.write_text(RECORDING_HOOK.format(log=log, extra=extra))
    hook.chmod(0o755)
    return hook, log


def _context(tmp_path: Path, hook: Path | None, actions: list[Any]) -> FakeContext:
    policy = {"endpoints": [{"name": "nbd0", "address": "tcp:127.0.0.1:10809"}]}
    return FakeContext(
        work_dir=tmp_path,
        hooks={"fault": str(hook)} if hook else {},
        document={"metrics": [], "series": []},
        seconds=0.6,
        run={
            "public_id": "r-1",
            "policy": policy,
            "scenario": {"kind": "failover", "actions": actions},
        },
    )


def test_the_hook_is_called_at_the_offsets_with_the_action_and_the_run(
    tmp_path: Path,
) -> None:
    hook, log = _hook(tmp_path)
    actions = [
        {"at_s": 0.1, "do": "error_window", "for_s": 0.2},
        {"at_s": 0.2, "do": "kill_tier"},  # no for_s: stopped when the harness ends
    ]

    outcome = failover.drive(_context(tmp_path, hook, actions))

    calls = [line.split(" ", 1) for line in log.read_text().splitlines()]
    assert [(verb, json.loads(arg)["do"]) for verb, arg in calls] == [
        ("start", "error_window"),
        ("start", "kill_tier"),
        ("stop", "error_window"),
        ("stop", "kill_tier"),
    ]
    assert json.loads(calls[0][1]) == {
        "at_s": 0.1, "do": "error_window", "for_s": 0.2, "run": "r-1",
        "endpoints": {"nbd0": "tcp:127.0.0.1:10809"}, "netns": "",
    }  # fmt: skip
    times = [a["at_s"] for a in outcome.record["actions"]]
    assert times[0] == pytest.approx(0.1, abs=0.08)
    assert times[2] == pytest.approx(0.3, abs=0.08)
    assert times[3] >= 0.55  # after the harness ended
    assert outcome.failure is None
    assert "no 'errors' series" in " ".join(outcome.record["notes"])


def test_a_failing_hook_fails_the_run_after_the_harness(tmp_path: Path) -> None:
    hook, _ = _hook(tmp_path, extra='echo "no such export" >&2; exit 3')
    actions = [{"at_s": 0.0, "do": "pause", "for_s": 0.1}]

    outcome = failover.drive(_context(tmp_path, hook, actions))

    assert outcome.result.succeeded
    assert outcome.failure is not None
    assert "failed to start 'pause' at 0.0 s: no such export" in outcome.failure
    assert [a["exit_code"] for a in outcome.record["actions"]] == [3, 3]


def test_a_policy_without_a_fault_hook_fails_before_the_harness(
    tmp_path: Path,
) -> None:
    context = _context(tmp_path, None, [{"at_s": 0, "do": "pause", "for_s": 1}])

    with pytest.raises(ScenarioError, match="names no 'fault' hook"):
        failover.drive(context)

    assert not context.output_dir.exists()


def test_a_hook_that_is_not_executable_is_named(tmp_path: Path) -> None:
    hook = tmp_path / "fault"
    hook.write_text("#!/bin/sh\n")
    context = _context(tmp_path, hook, [{"at_s": 0, "do": "pause", "for_s": 1}])

    with pytest.raises(ScenarioError, match="is not an executable file"):
        failover.drive(context)


def test_recovery_counts_from_the_fault_s_end_to_90_pct_of_the_median() -> None:
    # median before the fault (t <= 3) is 10; the fault ends at 5.2
    values = [10, 10, 10, 0, 0, 8, 9.5, 10]

    recovery, how = failover.recovery_s(series("throughput", values), 3.0, 5.2)

    assert recovery == pytest.approx(7 - 5.2)  # 8 at t=6 is below 9, 9.5 at t=7
    assert "pre-fault median 10" in how


def test_no_recovery_and_no_baseline_are_said_not_guessed() -> None:
    never, why = failover.recovery_s(series("throughput", [10, 10, 0, 1, 2]), 2, 3)
    early, because = failover.recovery_s(series("throughput", [0, 10]), 0.5, 1)

    assert never is None
    assert "never came back to 9" in why
    assert early is None
    assert "no baseline" in because
