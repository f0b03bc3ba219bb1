"""Scenario drivers (DESIGN §4b; Django-free, the lab agent imports them): one
driver per scenario kind, ``DRIVERS`` keyed by kind, and ``run_scenario``, which
the agent calls with its ``ScenarioContext`` (``base``) for every run.

- ``steady`` runs the harness once (the default kind);
- ``failover`` performs the scenario's ``actions`` through the pool's ``fault``
  hook while the harness runs and measures the errors and the recovery;
- ``warmup`` runs from a dropped page cache and measures the warm-up;
- ``interference`` and ``rollback`` (their own modules) run a neighbour job
  beside the harness, or switch the host between two phases.

A driver that cannot go on raises ``ScenarioError``: the run fails with stop
reason ``scenario_failed`` and the error's sentence."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from benchmarks.lib.lab.scenarios import (
    failover,
    interference,
    rollback,
    steady,
    warmup,
)
from benchmarks.lib.lab.scenarios.base import (
    ScenarioContext,
    ScenarioError,
    ScenarioOutcome,
    scenario_kind,
)

Driver = Callable[[ScenarioContext], ScenarioOutcome]

DRIVERS: Final[Mapping[str, Driver]] = {
    "steady": steady.drive,
    "interference": interference.drive,
    "failover": failover.drive,
    "warmup": warmup.drive,
    "rollback": rollback.drive,
}


def run_scenario(context: ScenarioContext) -> ScenarioOutcome:
    """The run's scenario driven by its kind's driver. A ``ScenarioError`` (a
    kind this agent has no driver for, a missing or failing hook) is the
    agent's to report: the run fails with stop reason ``scenario_failed``."""
    kind = scenario_kind(context.run.get("scenario"))
    driver = DRIVERS.get(kind)
    if driver is None:
        raise ScenarioError(
            f"This host's agent has no driver for scenario kind {kind[:40]!r} "
            f"(it knows {', '.join(sorted(DRIVERS))})."
        )
    return driver(context)
