"""What the agent gives a harness it runs (``benchmarks.lib.sandbox.run_harness``):
its environment (``REPROGATE_SCENARIO``, ``REPROGATE_RUN_ID``,
``REPROGATE_SEED``) and its limits, from the claim's answer; and the harness
run once more with another seed for a ``seed_sensitive`` scenario."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from benchmarks.lib.sandbox import HarnessResult, SandboxLimits, run_harness
from benchmarks.lib.sandbox.extras import SandboxExtras

POLL_SECONDS: Final = 0.5


def harness_env(run: Mapping[str, Any], run_id: int, seed: Any) -> dict[str, str]:
    """REPROGATE_SCENARIO, REPROGATE_RUN_ID and (when the claim gave one, or
    for a re-run) REPROGATE_SEED."""
    env = {
        "REPROGATE_SCENARIO": json.dumps(run.get("scenario") or {}, sort_keys=True),
        "REPROGATE_RUN_ID": str(run.get("public_id") or run_id),
    }
    if isinstance(seed, int) and not isinstance(seed, bool):
        env["REPROGATE_SEED"] = str(seed)
    return env


def harness_limits(run: Mapping[str, Any]) -> SandboxLimits:
    wall = float(run.get("wall_limit_s") or 3600)
    return SandboxLimits(
        wall_seconds=wall,
        cpu_seconds=int(run.get("cpu_seconds") or wall),
        file_bytes=int(run.get("file_bytes") or (8 << 30)),
    )


def harness_rerun(
    run: Mapping[str, Any],
    run_id: int,
    extras: SandboxExtras,
    should_cancel: Callable[[], bool],
    bundle_dir: Path,
    output_dir: Path,
    seed: int,
) -> HarnessResult:
    """The harness once more for ``seed_ignored``: its progress is not the
    run's (no lines reported), but a refused report stops it as it stops the
    run (``should_cancel`` is the reporter's)."""
    return run_harness(
        bundle_dir=bundle_dir,
        entrypoint=str(run["entrypoint"]),
        output_dir=output_dir,
        env=harness_env(run, run_id, seed),
        limits=harness_limits(run),
        should_cancel=should_cancel,
        poll_seconds=POLL_SECONDS,
        extras=extras,
    )
