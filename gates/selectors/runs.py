"""Reads of a gate's plan for its campaigns: the runs per scenario a campaign
needs (``gate_repetitions``), the scenarios it runs (``gate_scenarios``), and the
runs an INCONCLUSIVE evaluation still needs (``evaluation_more_runs``). Pure
functions of the stored documents; ``gates.services.runs`` schedules them."""

from __future__ import annotations

import json

from artifacts.models import Bundle
from gates.models import Evaluation, GatePlan

INCONCLUSIVE = "INCONCLUSIVE"


class RunsNeeded(dict[str, int]):
    """Scenario -> runs, with their ``total`` for a template's button."""

    @property
    def total(self) -> int:
        return sum(self.values())


def evaluation_more_runs(evaluation: Evaluation) -> RunsNeeded:
    """Per scenario, the runs still needed before the gate can be judged: the
    largest ``more_runs_needed`` of its INCONCLUSIVE criteria there (runs of a
    scenario serve every criterion in it), in plan order. Empty unless the gate
    is INCONCLUSIVE (a HALTED or failed gate is not decided by more runs)."""
    if evaluation.verdict != INCONCLUSIVE:
        return RunsNeeded()
    plan = json.loads(evaluation.plan_document)
    gate = next(g for g in plan["gates"] if g["name"] == evaluation.gate)
    scenario_of = {c["id"]: c["scenario"] for c in gate["criteria"]}
    needed = RunsNeeded()
    for done in json.loads(evaluation.evaluation_document)["criteria"]:
        n = int(done.get("more_runs_needed") or 0)
        if done["verdict"] == INCONCLUSIVE and n > 0:
            scenario = scenario_of[done["id"]]
            needed[scenario] = max(needed.get(scenario, 0), n)
    return needed


def gate_repetitions(plan: GatePlan, gate: str) -> int:
    """The gate's largest ``min_runs``: the runs per scenario a campaign of the
    gate (a first run or a re-test) needs."""
    spec = next(g for g in plan.plan["gates"] if g["name"] == gate)
    return max((int(c["min_runs"]) for c in spec["criteria"]), default=1)


def gate_scenarios(plan: GatePlan, gate: str, bundle: Bundle) -> list[str] | None:
    """The bundle's scenarios the gate judges (its criteria's and its stop-loss
    conditions' scenarios), in the harness's order: a campaign for the gate runs
    only those. None (every scenario) when the gate names none the harness has;
    a judged scenario the harness lacks then reads "not measured"."""
    spec = next(g for g in plan.plan["gates"] if g["name"] == gate)
    named = {c["scenario"] for c in spec["criteria"]} | {
        s["scenario"] for s in spec["stop_loss"] if s.get("scenario", "*") != "*"
    }
    harness = (bundle.manifest or {}).get("harness") or {}
    names = [
        str(s.get("name"))
        for s in harness.get("scenarios") or []
        if isinstance(s, dict) and s.get("name") in named
    ]
    return names or None
