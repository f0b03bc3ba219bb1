"""The agent's side of the scenario drivers (``benchmarks.lib.lab.scenarios``):
the ``ScenarioContext`` it hands a driver (each phase's harness in the sandbox
with the run's environment, limits and devices; the host's capture; the page
cache; the reporter's beat), and the ``scenario.json`` artefact of what the
driver did."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks.lib.environment import capture_environment
from benchmarks.lib.lab.artefacts import SCENARIO
from benchmarks.lib.lab.scenario_document import encode
from benchmarks.lib.lab.scenarios.base import (
    MAIN,
    Phase,
    ScenarioOutcome,
    scenario_kind,
)
from benchmarks.lib.sandbox import (
    HarnessResult,
    SandboxLimits,
    drop_page_cache,
    run_harness,
)
from benchmarks.lib.sandbox.cgroups import Cgroup
from benchmarks.lib.sandbox.extras import SandboxExtras
from benchmarks.lib.sandbox.reporting import HarnessReporter, json_safe
from benchmarks.lib.sandbox.workspace import Workspace
from reprogate_agent.telemetry import RunTelemetry, write_new


class AgentContext:
    """One run's ``ScenarioContext``. Every phase shares the run's wall-clock
    limit (a later phase gets what the earlier ones left); the telemetry
    sampler follows the cgroup of the phase running now."""

    def __init__(
        self,
        *,
        run: Mapping[str, Any],
        run_id: int,
        space: Workspace,
        extras: SandboxExtras | None,
        limits: SandboxLimits,
        reporter: HarnessReporter,
        telemetry: RunTelemetry,
        poll_seconds: float,
    ) -> None:
        self.run = run
        self.run_id = run_id
        self.space = space
        self.work_dir = space.root
        self.output_dir = space.output_dir
        policy = run.get("policy")
        hooks = policy.get("hooks") if isinstance(policy, dict) else None
        self.hooks: Mapping[str, str] = {
            k: v for k, v in (hooks or {}).items() if isinstance(v, str)
        }
        self.extras = extras
        self.limits = limits
        self.reporter = reporter
        self.telemetry = telemetry
        self.poll_seconds = poll_seconds
        self.first_start: float | None = None
        self.main_result: HarnessResult | None = None  # the main phase's, once run
        self.failure: str | None = None  # why the driver stopped before it ran
        self.netns = ""  # the running phase's network namespace (/run/netns/…)

    def run_harness(
        self, phase: Phase, *, on_start: Callable[[float], None] | None = None
    ) -> HarnessResult:
        phase.output_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.netns = ""
        now = self.clock()
        self.first_start = now if self.first_start is None else self.first_start
        left = self.limits.wall_seconds - (now - self.first_start)
        limits = _with_wall(self.limits, max(1.0, left))

        def network(path: str) -> None:
            self.netns = path

        def started(group: Cgroup | None) -> None:
            self.telemetry.attach(group)
            if on_start is not None:
                on_start(self.clock())

        result = run_harness(
            bundle_dir=self.space.bundle_dir,
            entrypoint=str(self.run["entrypoint"]),
            output_dir=phase.output_dir,
            env={
                "REPROGATE_SCENARIO": json.dumps(
                    self.run.get("scenario") or {}, sort_keys=True
                ),
                "REPROGATE_RUN_ID": str(self.run.get("public_id") or self.run_id),
                **phase.env,
            },
            limits=limits,
            on_line=self.reporter.on_line,
            should_cancel=self.reporter.should_cancel,
            poll_seconds=self.poll_seconds,
            extras=self.extras,
            on_start=started,
            on_network=network,
        )
        if phase.name == MAIN:
            self.main_result = result
        return result

    def capture(self) -> dict[str, Any]:
        captured = json_safe(capture_environment())
        return captured if isinstance(captured, dict) else {}

    def drop_page_cache(self) -> bool:
        return drop_page_cache()

    def beat(self) -> None:
        self.reporter.beat()

    def clock(self) -> float:
        return time.monotonic()


def _with_wall(limits: SandboxLimits, wall_seconds: float) -> SandboxLimits:
    return replace(limits, wall_seconds=wall_seconds)


def scenario_artefact(
    run: Mapping[str, Any], outcome: ScenarioOutcome, workspace_root: Path
) -> Path:
    """``scenario.json`` in the workspace root, out of the harness's reach."""
    data = encode(
        scenario_kind(run.get("scenario")),
        outcome.metrics,
        outcome.series,
        json_safe(outcome.record),
    )
    return write_new(workspace_root / SCENARIO, data)
