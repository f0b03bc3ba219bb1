"""``failover``: the scenario's ``actions`` performed through the pool policy's
``fault`` hook while the harness runs, and what the harness saw.

A timer thread calls ``HOOK start <json>`` at each action's ``at_s`` (seconds
from the harness's start, as the runner saw it start) and ``HOOK stop <json>``
``for_s`` later (a ``kill_tier`` without ``for_s`` is stopped when the harness
exits). The argument is the action with ``run`` (the run's id), ``endpoints``
(the policy's, name → address) and ``netns`` (the run's network namespace,
``/run/netns/…``, or "" when the run has none). Each call is bounded by a
timeout; a failed or timed-out call fails the run (``scenario_failed``) after
the harness ends; every action begun is stopped even when the harness exits
first. A policy without a ``fault`` hook fails the run before it starts.

Metrics (``method: "scenario"``), from the harness's own per-second series in
its ``reprogate-metrics`` output: ``throughput`` (any unit) and ``errors``
(errors in each interval; a point's time is the end of its interval, in seconds
from the harness's start), and ``cache_hit_rate`` if it reports one:

- ``failover_errors`` (stat ``mean``, one value a run, as every scenario
  metric): the sum of the ``errors`` series;
- ``failover_first_error_s`` (mean): from the first fault's start to the first
  point with errors (0 when the harness saw errors in the interval the fault
  began in);
- ``failover_recovery_s`` (mean): from the last fault's end to the first
  ``throughput`` point at or after it that is ≥ 90 % of the median of the
  points before the first fault (left out, and said in the record, when it
  never recovers);
- series ``failover_throughput`` and ``failover_cache_hit_rate``: the
  harness's, from ``WINDOW_S`` before the first fault to ``WINDOW_S`` after
  the last one's end."""

from __future__ import annotations

import statistics
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from benchmarks.lib.lab.scenarios.base import (
    MAIN,
    HookCall,
    Phase,
    ScenarioContext,
    ScenarioOutcome,
    call_hook,
    harness_series,
    hook_path,
    metric,
    phase_summary,
)
from benchmarks.lib.parsers import Series

HOOK: Final = "fault"
THROUGHPUT: Final = "throughput"
ERRORS: Final = "errors"
CACHE_HIT: Final = "cache_hit_rate"
RECOVERED_FRACTION: Final = 0.9
WINDOW_S: Final = 10.0


@dataclass(frozen=True)
class _Step:
    at_s: float
    verb: str  # "start" or "stop"
    index: int  # the action's


class Timeline:
    """The actions' hook calls at their offsets from ``origin`` (a
    ``context.clock()`` time), on a thread of their own."""

    def __init__(
        self,
        context: ScenarioContext,
        hook: str,
        actions: list[dict[str, Any]],
        extra: Mapping[str, Any],
    ) -> None:
        self.context, self.hook, self.actions = context, hook, actions
        self.extra = dict(extra)
        self.calls: list[HookCall] = []
        self.started: set[int] = set()
        self.origin: float | None = None
        self.done = threading.Event()
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, name="failover-timeline")

    def steps(self) -> list[_Step]:
        found = []
        for i, action in enumerate(self.actions):
            at_s = float(action.get("at_s") or 0.0)
            found.append(_Step(at_s, "start", i))
            if action.get("for_s") is not None:
                found.append(_Step(at_s + float(action["for_s"]), "stop", i))
        return sorted(found, key=lambda s: (s.at_s, s.verb == "start", s.index))

    def begin(self, origin: float) -> None:
        self.origin = origin
        self.thread.start()

    def _run(self) -> None:
        origin = self.origin or 0.0
        for step in self.steps():
            wait = origin + step.at_s - self.context.clock()
            if self.done.wait(max(0.0, wait)):
                return
            self._call(step.verb, step.index)

    def _call(self, verb: str, index: int) -> None:
        with self.lock:
            if verb == "start":
                self.started.add(index)
            elif index not in self.started:
                return
            else:
                self.started.discard(index)
            # the run's namespace is known once the harness started
            netns = str(getattr(self.context, "netns", "") or "")
            argument = {**self.actions[index], **self.extra, "netns": netns}
            self.calls.append(
                call_hook(
                    self.hook,
                    verb,
                    argument,
                    name=HOOK,
                    clock=self.context.clock,
                    origin=self.origin or 0.0,
                )
            )

    def finish(self) -> None:
        """Stop the timer; stop every action still begun (the harness ended)."""
        self.done.set()
        if self.thread.is_alive():
            self.thread.join()
        for index in sorted(self.started):
            self._call("stop", index)


def drive(context: ScenarioContext) -> ScenarioOutcome:
    scenario = context.run.get("scenario") or {}
    actions = [a for a in scenario.get("actions") or [] if isinstance(a, dict)]
    hook = hook_path(context.hooks, HOOK)  # none: ScenarioError before the run
    timeline = Timeline(context, hook, actions, _extra(context))
    phase = Phase(MAIN, context.output_dir)
    try:
        result = context.run_harness(phase, on_start=timeline.begin)
    finally:
        timeline.finish()
    record: dict[str, Any] = {
        "phases": [phase_summary(phase, result, 0.0)],
        "actions": [call.as_json() for call in timeline.calls],
        "hook": hook,
    }
    failed = [c for c in timeline.calls if c.exit_code != 0]
    failure = None
    if failed:
        first = failed[0]
        why = first.output or f"exit status {first.exit_code}"
        failure = (
            f"The pool's fault hook failed to {first.verb} "
            f"{first.argument.get('do')!r} at {first.at_s:.1f} s: {why}"
        )
    metrics, series, notes = measure(harness_series(context.output_dir), timeline)
    record["notes"] = notes
    return ScenarioOutcome(
        result=result, metrics=metrics, series=series, record=record, failure=failure
    )


def _extra(context: ScenarioContext) -> dict[str, Any]:
    policy = context.run.get("policy")
    listed = policy.get("endpoints") if isinstance(policy, dict) else None
    endpoints = {
        str(e.get("name")): str(e.get("address"))
        for e in listed or []
        if isinstance(e, dict)
    }
    run_id = context.run.get("public_id") or context.run.get("id") or ""
    return {"run": str(run_id), "endpoints": endpoints}


def _window(timeline: Timeline) -> tuple[float, float] | None:
    """When the faults began and ended (seconds from the harness's start), as
    performed; None when none was begun."""
    starts = [c.at_s for c in timeline.calls if c.verb == "start"]
    stops = [c.at_s + c.duration_s for c in timeline.calls if c.verb == "stop"]
    if not starts:
        return None
    return min(starts), max(stops or starts)


def measure(
    found: Mapping[str, Series], timeline: Timeline
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """The failover metrics and series (module docstring) and notes on what
    could not be measured."""
    notes: list[str] = []
    window = _window(timeline)
    if window is None:
        return [], [], ["no fault was begun: the harness ended first"]
    begun, ended = window
    metrics: list[dict[str, Any]] = []
    errors, throughput = found.get(ERRORS), found.get(THROUGHPUT)
    if errors is None:
        notes.append(f"the harness reported no {ERRORS!r} series")
    else:
        metrics += _errors(errors, begun)
    if throughput is None:
        notes.append(f"the harness reported no {THROUGHPUT!r} series")
    else:
        recovery, note = recovery_s(throughput, begun, ended)
        if recovery is None:
            notes.append(note)
        else:
            key = f"series {THROUGHPUT}: {note}"
            metrics.append(metric("failover_recovery_s", "mean", recovery, "s", key))
    series = [
        _clipped(s, f"failover_{name}", begun - WINDOW_S, ended + WINDOW_S)
        for name, s in ((THROUGHPUT, throughput), (CACHE_HIT, found.get(CACHE_HIT)))
        if s is not None
    ]
    return metrics, series, notes


def _errors(errors: Series, begun: float) -> list[dict[str, Any]]:
    total = sum(v for _, v in errors.points)
    found = [metric("failover_errors", "mean", total, "count", f"series {ERRORS}: sum")]
    # a point covers the second before its time: the fault's own second counts
    first = next((t for t, v in errors.points if v > 0 and t > begun), None)
    if first is not None:
        value = max(0.0, first - 1.0 - begun)
        key = f"series {ERRORS}: first point with errors after the fault began"
        found.append(metric("failover_first_error_s", "mean", value, "s", key))
    return found


def recovery_s(
    throughput: Series, begun: float, ended: float
) -> tuple[float | None, str]:
    """Seconds from ``ended`` to the first point at or after it that is back
    to ≥ 90 % of the pre-fault median, and how it was found (or why not)."""
    before = [v for t, v in throughput.points if t <= begun]
    if not before:
        return None, "no throughput point before the fault: no baseline to recover to"
    baseline = statistics.median(before)
    target = RECOVERED_FRACTION * baseline
    back = next((t for t, v in throughput.points if t >= ended and v >= target), None)
    if back is None:
        return None, (
            f"throughput never came back to {target:g} (90 % of the pre-fault "
            f"median {baseline:g}) after the fault ended at {ended:.1f} s"
        )
    how = (
        f"back to >= {target:g} (90 % of the pre-fault median {baseline:g}) "
        f"at {back:g} s, the fault ended at {ended:.2f} s"
    )
    return max(0.0, back - ended), how


def _clipped(series: Series, name: str, low: float, high: float) -> dict[str, Any]:
    return {
        "name": name,
        "unit": series.unit,
        "points": [[float(t), float(v)] for t, v in series.points if low <= t <= high],
    }
