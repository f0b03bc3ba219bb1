"""``steady``: the harness runs once, as every run did before scenario kinds
(a ``cache: cold`` scenario's page cache is dropped while the run is prepared)."""

from __future__ import annotations

from benchmarks.lib.lab.scenarios.base import (
    MAIN,
    Phase,
    ScenarioContext,
    ScenarioOutcome,
    phase_summary,
)


def drive(context: ScenarioContext) -> ScenarioOutcome:
    phase = Phase(MAIN, context.output_dir)
    result = context.run_harness(phase)
    return ScenarioOutcome(
        result=result, record={"phases": [phase_summary(phase, result, 0.0)]}
    )
