"""A ``ScenarioContext`` for the interference and rollback tests: the real
sandbox (``run_harness``) with the pool's devices from a CDI spec, the host's
real capture, and a harness the test writes."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from benchmarks.lib.environment import capture_environment
from benchmarks.lib.lab.devices import policy_extras
from benchmarks.lib.lab.scenarios.base import Phase
from benchmarks.lib.sandbox import HarnessResult, SandboxLimits, run_harness
from benchmarks.lib.sandbox.cgroups import Cgroup
from benchmarks.lib.sandbox.extras import SandboxExtras
from benchmarks.lib.sandbox.workspace import Workspace
from tests.benchmarks.lab.loops import block_spec

ENTRYPOINT = "run.sh"


def device_extras(cdi_dir: Path, devices: dict[str, str]) -> SandboxExtras:
    """The extras of a policy naming ``reprogate.dev/block=<name>`` per device."""
    block_spec(cdi_dir, devices)
    policy = {
        "schema": "reprogate.lab-policy/v1",
        "devices": [{"name": f"reprogate.dev/block={name}"} for name in devices],
    }
    extras, _ = policy_extras(
        policy, root=True, environ={"REPROGATE_CDI_DIRS": str(cdi_dir)}
    )
    return extras


class LabContext:
    def __init__(
        self,
        root: Path,
        *,
        scenario: Mapping[str, Any],
        harness: str,
        extras: SandboxExtras | None = None,
        hooks: Mapping[str, str] | None = None,
        wall_seconds: float = 120,
        claim: Mapping[str, Any] | None = None,
    ) -> None:
        root.mkdir(parents=True, exist_ok=True)
        root.chmod(0o711)  # a dropped uid may reach its two folders
        self.space = Workspace.create(root)
        entry = self.space.bundle_dir / ENTRYPOINT
        entry.write_text(harness)
        entry.chmod(0o755)
        self.run: Mapping[str, Any] = {
            "scenario": dict(scenario),
            "public_id": "r-1",
            **(claim or {}),
        }
        self.work_dir = root
        self.output_dir = self.space.output_dir
        self.hooks: Mapping[str, str] = dict(hooks or {})
        self.extras = extras
        self.limits = SandboxLimits(wall_seconds=wall_seconds)
        self.phases: list[str] = []
        self.beats = 0

    def run_harness(
        self, phase: Phase, *, on_start: Callable[[float], None] | None = None
    ) -> HarnessResult:
        phase.output_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.phases.append(phase.name)

        def started(group: Cgroup | None) -> None:
            if on_start is not None:
                on_start(self.clock())

        return run_harness(
            bundle_dir=self.space.bundle_dir,
            entrypoint=ENTRYPOINT,
            output_dir=phase.output_dir,
            env={"REPROGATE_SCENARIO": json.dumps(self.run["scenario"]), **phase.env},
            limits=self.limits,
            extras=self.extras,
            on_start=started,
        )

    def capture(self) -> dict[str, Any]:
        return capture_environment()

    def drop_page_cache(self) -> bool:
        return False

    def beat(self) -> None:
        self.beats += 1

    def clock(self) -> float:
        return time.monotonic()
