"""The ``rollback`` scenario: phase A, the pool's rollback hook, a fresh
environment capture, phase B, on one host in one run.

1. phase ``a``: the harness runs on the host as the run found it; its outputs
   are the run's (the run's environment capture and drift describe this state);
2. the pool policy's ``hooks.rollback`` executable (the operator's, never the
   vendor's) is called as ``HOOK switch <json>`` with ``{"to": <the scenario's
   "to">, "run": <run id>, "devices": {<policy device name>: <host node>}}`` and
   a timeout; it switches the host to the declared previous driver, firmware or
   setting and exits 0 (anything else fails the run, phase B does not run);
3. the host is captured again and compared with a capture taken just before
   the hook (``capture_diff``): the difference is in ``record["capture"]``;
4. phase ``b``: the harness runs again (its outputs stay with the runner).

The run fails (``failure``) when the hook fails or the capture shows no change:
a rollback that changed nothing the capture can see proves nothing.

Metrics (method ``scenario``), both phases side by side, each scoped by a name
prefix: every ``reprogate-metrics`` figure a phase's harness wrote is
``phase_a_<name>`` / ``phase_b_<name>`` (same stat and unit: ``ttft_ms`` p99
becomes ``phase_a_ttft_ms`` p99 and ``phase_b_ttft_ms`` p99); plus
``rollback_switch_s`` (the hook's duration) and ``rollback_capture_changes``
(how many captured fields changed). The runner does not switch back: a lab
restores its hosts with its own hooks.
"""

from __future__ import annotations

from typing import Any, Final

from artifacts.lib.scenario_kinds import scenario_kind_problems
from benchmarks.lib.lab.scenarios.base import (
    Phase,
    ScenarioContext,
    ScenarioError,
    ScenarioOutcome,
    call_hook,
    hook_path,
    metric,
    phase_summary,
)
from benchmarks.lib.lab.scenarios.capture_diff import capture_difference
from benchmarks.lib.lab.scenarios.phase_metrics import phase_metrics

HOOK: Final = "rollback"
VERB: Final = "switch"
PHASE_A: Final = "a"
PHASE_B: Final = "b"


def drive(context: ScenarioContext) -> ScenarioOutcome:
    scenario = context.run.get("scenario") or {}
    problems = [f"{p}: {m}" for p, m in scenario_kind_problems(scenario, "scenario")]
    if problems:
        raise ScenarioError("The rollback scenario cannot run: " + "; ".join(problems))
    hook = hook_path(context.hooks, HOOK)
    origin = context.clock()
    record: dict[str, Any] = {"to": scenario["to"], "phases": [], "actions": []}
    phase_a = Phase(PHASE_A, context.output_dir)
    result_a = context.run_harness(phase_a)
    record["phases"].append(phase_summary(phase_a, result_a, 0.0))
    metrics = _phase_metrics(phase_a)
    context.beat()
    before = context.capture()
    call = call_hook(
        hook,
        VERB,
        _argument(context, scenario["to"]),
        name=HOOK,
        clock=context.clock,
        origin=origin,
    )
    record["actions"].append({**call.as_json(), "do": VERB})
    metrics.append(
        metric(
            "rollback_switch_s",
            "mean",
            call.duration_s,
            "s",
            "record.actions[0].duration_s",
        )
    )
    if call.exit_code != 0:
        why = (
            "timed out or could not start"
            if call.exit_code is None
            else (f"exited with status {call.exit_code}")
        )
        failure = f"The pool's rollback hook {why}: {call.output[-300:]}".strip()
        return ScenarioOutcome(result_a, metrics, [], record, failure)
    after = context.capture()
    changes = capture_difference(before, after)
    record["capture"] = {
        "before_at": before.get("captured_at"),
        "after_at": after.get("captured_at"),
        "difference": changes,
    }
    metrics.append(
        metric(
            "rollback_capture_changes",
            "total",
            float(len(changes)),
            "count",
            "record.capture.difference",
        )
    )
    context.beat()
    phase_b = Phase(PHASE_B, context.work_dir / "phase-b")
    started = context.clock() - origin
    result_b = context.run_harness(phase_b)
    record["phases"].append(phase_summary(phase_b, result_b, started))
    metrics += _phase_metrics(phase_b)
    unchanged = (
        "The rollback hook succeeded but the host's environment capture shows "
        "no change: nothing proves the host was switched."
    )
    result = result_a if not result_a.succeeded else result_b
    return ScenarioOutcome(result, metrics, [], record, None if changes else unchanged)


def _argument(context: ScenarioContext, to: object) -> dict[str, Any]:
    devices = {}
    for node in context.extras.devices if context.extras is not None else ():
        if node.kind == "b" and node.host_path:
            devices[node.name or node.path] = node.host_path
    run = context.run.get("public_id") or context.run.get("id") or ""
    return {"to": to, "run": str(run), "devices": devices}


def _phase_metrics(phase: Phase) -> list[dict[str, Any]]:
    return phase_metrics(phase.output_dir, f"phase_{phase.name}_", phase.name)
