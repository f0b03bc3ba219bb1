"""The demo's scenarios beyond steady runs, and the buyer's baseline.

- **Lab resilience**: both example bundles declare a failover (an error window of
  2 s at 3 s on the demo's NBD endpoint), an interference (the lab's standard
  neighbour ``noisy-500`` beside the harness) and a warm-up scenario (from a
  dropped page cache). RFP-DEMO-2's plan v2 judges one criterion on each in its
  gate ``lab-resilience`` (``resilience_gate``), after lab validation. Its
  campaigns need what the embedded lab's fault back-end needs (root for the
  network namespace, nbdkit, ip, fio): ``resilience_problem`` says what is
  missing, and then ``scripts/run``'s seed starts none.
- **Baseline**: the buyer's lab runs the same open harness with a tier model of
  the infrastructure Northwind AI runs today (``examples/northwind-current``:
  recompute instead of an NVMe-oF tier), as a bundle of the buyer organisation
  signed with its own demo key; its campaign (role ``baseline``) is what the
  comparison's "vs current" and a criterion held to the baseline read.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Final

from benchmarks.lib.lab.scratch import host_reason as scratch_host_reason

EXAMPLES_DIR: Final = Path(__file__).resolve().parent.parent / "examples"
BASELINE_SOURCE: Final = "acme-flash"  # whose open harness the lab runs
BASELINE_OVERLAY: Final = "northwind-current"
BASELINE_KEEP: Final = ("harness", "workloads")  # of the source; the rest is the lab's
RESILIENCE_GATE: Final = "lab-resilience"
RESILIENCE_REPETITIONS: Final = 2
FAILOVER_SCENARIO: Final = "failover-c8-b8"
INTERFERENCE_SCENARIO: Final = "interference-c8-b8"
WARMUP_SCENARIO: Final = "warmup-c8-b8"
RESILIENCE_TOOLS: Final = ("nbdkit", "ip", "fio")


def _criterion(
    id_: str, metric: str, scenario: str, direction: str, threshold: float
) -> dict[str, Any]:
    return {
        "id": id_,
        "metric": metric,
        "stat": "mean",
        "scenario": scenario,
        "direction": direction,
        "threshold": threshold,
        "min_runs": RESILIENCE_REPETITIONS,
        "max_cv_pct": 50,
        "on_high_cv": "warn",
        "blocking": True,
        "weight": 1,
    }


def resilience_gate() -> dict[str, Any]:
    """The gate v2 adds after lab validation: back within 2.5 s of a 2 s error
    window, a fair share beside a throttled neighbour, the model loaded within a
    minute of a cold start."""
    return {
        "name": RESILIENCE_GATE,
        "stage": "lab",
        "consecutive_passes": 1,
        "score": {"pass_pct": 80, "warn_pct": 50},
        "criteria": [
            _criterion(
                "failover-recovery",
                "failover_recovery_s",
                FAILOVER_SCENARIO,
                "lower",
                2.5,
            ),
            _criterion(
                "interference-fairness",
                "fairness_jain",
                INTERFERENCE_SCENARIO,
                "higher",
                0.8,
            ),
            _criterion(
                "warmup-model-load", "model_load_s", WARMUP_SCENARIO, "lower", 60.0
            ),
        ],
        "stop_loss": [{"id": "failed-run", "run_failed": True}],
    }


def with_resilience_gate(document: dict[str, Any], after: str) -> dict[str, Any]:
    """``document`` with the resilience gate right after the gate ``after``
    (replacing one of its name)."""
    gates = [g for g in document["gates"] if g["name"] != RESILIENCE_GATE]
    at = next((i + 1 for i, g in enumerate(gates) if g["name"] == after), len(gates))
    gates.insert(at, resilience_gate())
    return {**document, "gates": gates}


def resilience_problem() -> str | None:
    """Why this host cannot run the resilience gate's scenarios (None: it can):
    the fault export needs root (the run's network namespace) and nbdkit, the
    neighbour fio and a block device (``scripts/run``'s loop device)."""
    missing = [tool for tool in RESILIENCE_TOOLS if shutil.which(tool) is None]
    if os.geteuid() != 0:
        missing.insert(0, "root")
    elif scratch_host_reason() is not None:
        missing.append("loop devices")
    if not missing:
        return None
    return (
        f"Gate {RESILIENCE_GATE} (failover, interference, warm-up) needs "
        + ", ".join(missing)
        + " on this host: its campaigns were not started. Install them "
        "(apt-get install nbdkit iproute2 fio), run scripts/run as root, and start "
        "the gate as labops from its plan's page."
    )


def baseline_sources(folder: Path) -> Path:
    """The baseline bundle's sources in ``folder``: the source vendor's open
    harness and workloads, with the lab's manifest template, tier model and
    environment manifest over them."""
    root = folder / BASELINE_OVERLAY
    for part in BASELINE_KEEP:
        shutil.copytree(EXAMPLES_DIR / BASELINE_SOURCE / part, root / part)
    shutil.copytree(EXAMPLES_DIR / BASELINE_OVERLAY, root, dirs_exist_ok=True)
    (root / "README.md").unlink(missing_ok=True)  # the overlay's, not the bundle's
    return root
