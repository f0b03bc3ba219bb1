"""The ``interference`` scenario: the victim (the vendor's harness) alone, then
beside a neighbour job the lab defines (never the vendor), on the same devices.

1. phase ``alone``: the harness runs by itself (outputs kept by the runner, not
   uploaded); the policy's block devices' counters are read as it starts and
   ends;
2. without ``rate_iops``, the neighbour runs alone for as long (phase
   ``neighbour-alone``) to learn its demand;
3. phase ``main``: the neighbour (``neighbour.py``'s fio vocabulary, run by
   ``tenants.NeighbourRun`` in its own sandbox and cgroup against the policy's
   block devices) starts first; once it does I/O the harness runs again, and
   the neighbour is stopped when the harness ends.

Per tenant (``record["tenants"]``): I/Os, bytes, throughput over the phase's
window (from the harness's start to its end), and where they come from:

- the neighbour: fio's JSON report (throughput, completion latency mean, p50,
  p99) and its cgroup's I/O accounting (v1 ``blkio``, v2 ``io.stat``; "none"
  where the host has neither);
- the victim: the policy's block devices' I/Os in the window
  (``/proc/diskstats``) less the neighbour's in the same window, from the
  neighbour's cgroup at the window's two ends, or where the host accounts no
  cgroup I/O, fio's mean rate times the window (``source`` says which). Its
  latency under interference is its own outputs' (the main phase's outputs are
  the run's and parsed as any run's); the driver adds the devices' mean
  service time per I/O in each phase (``device_await_ms``, all tenants).

Metrics (method ``scenario``): ``victim_iops``/``victim_mib_s`` (beside the
neighbour), ``victim_alone_iops``/``victim_alone_mib_s``, ``neighbour_iops``,
``neighbour_mib_s``, ``neighbour_read_lat_us``/``neighbour_write_lat_us``
(mean, p50, p99), ``device_await_ms``/``device_alone_await_ms``,
``interference_slowdown_pct`` = (alone - beside) / alone * 100 of the victim's
I/O throughput (positive: slower beside the neighbour), and ``fairness_jain``:
Jain's index over the two tenants' I/O throughput normalised by their demand,
capped at 1 (``fairness.py``) — the victim's demand is its IOPS alone, the
neighbour's its ``rate_iops`` (per direction, as fio applies it: twice for
rw/randrw) or else its IOPS alone. The harness's own figures alone (its
``reprogate-metrics`` outputs of phase ``alone``) are ``alone_<name>``, beside
the run's own metrics (phase ``main``, under interference).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from artifacts.lib.scenario_kinds import scenario_kind_problems
from benchmarks.lib.lab.devices import block_device_names
from benchmarks.lib.lab.scenarios.base import (
    MAIN,
    Phase,
    ScenarioContext,
    ScenarioError,
    ScenarioOutcome,
    metric,
    phase_summary,
)
from benchmarks.lib.lab.scenarios.fairness import jain_index, normalised
from benchmarks.lib.lab.scenarios.neighbour import (
    JOBS,
    NeighbourError,
    NeighbourJob,
    neighbour_job,
)
from benchmarks.lib.lab.scenarios.phase_metrics import phase_metrics
from benchmarks.lib.lab.scenarios.tenants import (
    NeighbourRun,
    block_paths,
    diskstats,
    diskstats_delta,
    io_delta,
    victim_figures,
)
from benchmarks.lib.sandbox.limits import SandboxLimits

ALONE: Final = "alone"
NEIGHBOUR_ALONE: Final = "neighbour-alone"
START_TIMEOUT_S: Final = 30.0
BUSY_TIMEOUT_S: Final = 15.0
STOP_TIMEOUT_S: Final = 30.0
NEIGHBOUR_ALONE_MAX_S: Final = 60.0


def drive(context: ScenarioContext) -> ScenarioOutcome:
    scenario = context.run.get("scenario") or {}
    problems = [f"{p}: {m}" for p, m in scenario_kind_problems(scenario, "scenario")]
    if problems:
        raise ScenarioError(
            "The interference scenario is not valid: " + "; ".join(problems)
        )
    try:
        job = neighbour_job(scenario["neighbour"], context.run.get(JOBS))
    except NeighbourError as error:
        raise ScenarioError(
            "The interference scenario's neighbour job is not valid: "
            + "; ".join(error.problems)
        ) from error
    extras = context.extras
    devices = block_device_names(extras) if extras is not None else []
    if extras is None or not block_paths(extras) or not devices:
        raise ScenarioError(
            "An interference scenario needs block devices in the pool's policy "
            "(the neighbour runs on the devices the harness uses); it names none."
        )
    origin = context.clock()
    record: dict[str, Any] = {
        "neighbour": {"name": scenario["neighbour"], "job": job.as_json()},
        "devices": devices,
        "phases": [],
        "actions": [],
    }
    alone = _victim_phase(
        context,
        Phase(ALONE, context.work_dir / "phase-alone"),
        devices,
        None,
        origin,
        record,
    )
    context.beat()
    demand = _demand(context, job, alone, devices, origin, record)
    context.beat()
    neighbour = _neighbour(context, job, "neighbour")
    record["actions"].append(_action(context, origin, "neighbour_start"))
    neighbour.start()
    try:  # whatever happens, the neighbour is stopped with the phase
        busy = "not started"
        if neighbour.wait_started(START_TIMEOUT_S):
            busy = neighbour.wait_busy(BUSY_TIMEOUT_S, devices)
        record["actions"].append(
            {**_action(context, origin, "neighbour_busy"), "seen": busy}
        )
        main = _victim_phase(
            context, Phase(MAIN, context.output_dir), devices, neighbour, origin, record
        )
    finally:
        neighbour.stop()
        record["actions"].append(_action(context, origin, "neighbour_stop"))
        done = neighbour.join(STOP_TIMEOUT_S)
    return _outcome(main, alone, done, demand, record)


def _neighbour(context: ScenarioContext, job: NeighbourJob, name: str) -> NeighbourRun:
    limits = context.limits
    return NeighbourRun(
        job=job,
        extras=context.extras,  # type: ignore[arg-type]  # checked by drive()
        directory=context.work_dir / name,
        limits=SandboxLimits(
            wall_seconds=limits.wall_seconds + STOP_TIMEOUT_S,
            cpu_seconds=limits.cpu_seconds,
            memory_bytes=min(limits.memory_bytes, 1 << 30),
            file_bytes=64 << 20,
            processes=32,  # fio's threads count
            output_bytes=4 << 20,
        ),
    )


def _action(context: ScenarioContext, origin: float, do: str) -> dict[str, Any]:
    return {"at_s": round(context.clock() - origin, 3), "do": do}


def _victim_phase(
    context: ScenarioContext,
    phase: Phase,
    devices: list[str],
    neighbour: NeighbourRun | None,
    origin: float,
    record: dict[str, Any],
) -> dict[str, Any]:
    """Run the phase; the devices' and the neighbour's counters between the
    harness's start and its end (``window`` None: it never started)."""
    marks: list[tuple[float, dict[str, dict[str, int]], dict[str, int] | None]] = []

    def mark(at: float) -> None:
        group = neighbour.cgroup if neighbour else None
        marks.append((at, diskstats(devices), group.io_totals() if group else None))

    before = context.clock()
    result = context.run_harness(phase, on_start=mark)
    if marks:
        mark(context.clock())
    record["phases"].append(phase_summary(phase, result, before - origin))
    if len(marks) != 2:
        return {"result": result, "window": None, "output_dir": phase.output_dir}
    (t0, disk0, io0), (t1, disk1, io1) = marks
    window = {"seconds": t1 - t0, "device": diskstats_delta(disk0, disk1),
              "neighbour_io": io_delta(io0, io1)}  # fmt: skip
    return {"result": result, "window": window, "output_dir": phase.output_dir}


def _demand(
    context: ScenarioContext,
    job: NeighbourJob,
    alone: Mapping[str, Any],
    devices: list[str],
    origin: float,
    record: dict[str, Any],
) -> dict[str, Any]:
    """The neighbour's demand in I/Os per second: its ``rate_iops`` per
    direction, or its throughput alone for as long as the victim ran alone."""
    if job.rate_iops is not None:
        directions = 2 if job.rw in ("rw", "randrw") else 1
        return {"iops": float(job.rate_iops * directions), "source": "rate_iops"}
    window = alone["window"] or {}
    seconds = min(NEIGHBOUR_ALONE_MAX_S, max(1.0, float(window.get("seconds") or 1)))
    solo = _neighbour(context, job, NEIGHBOUR_ALONE)
    record["actions"].append(_action(context, origin, "neighbour_alone_start"))
    solo.start()
    try:
        if solo.wait_started(START_TIMEOUT_S):
            solo.wait_busy(BUSY_TIMEOUT_S, devices)
            deadline = context.clock() + seconds
            while context.clock() < deadline:
                context.beat()  # a cancelled run stops here: the finally stops fio
                if solo.ended(min(0.5, max(0.0, deadline - context.clock()))):
                    break
    finally:
        solo.stop()
        record["actions"].append(_action(context, origin, "neighbour_alone_stop"))
        done = solo.join(STOP_TIMEOUT_S)
    fio = done.get("fio") or {}
    record["neighbour_alone"] = done
    return {"iops": float(fio.get("iops") or 0.0), "source": NEIGHBOUR_ALONE}


def _outcome(
    main: Mapping[str, Any],
    alone: Mapping[str, Any],
    done: Mapping[str, Any],
    demand: Mapping[str, Any],
    record: dict[str, Any],
) -> ScenarioOutcome:
    fio = done.get("fio")
    victim_alone = victim_main = None
    if alone["window"] is not None:
        victim_alone = victim_figures(
            alone["window"]["seconds"], alone["window"]["device"]
        )
    if main["window"] is not None:
        window = main["window"]
        victim_main = victim_figures(
            window["seconds"], window["device"], window["neighbour_io"], fio or {}
        )
    record["tenants"] = {
        "victim": {ALONE: victim_alone, MAIN: victim_main},
        "neighbour": dict(done),
    }
    metrics = _tenant_metrics(victim_main, victim_alone, fio)
    metrics += phase_metrics(alone["output_dir"], "alone_", ALONE)
    failure = None
    if fio is None:
        failure = f"The neighbour job gave no figures: {done.get('problem')}"
    elif victim_main is None or victim_alone is None:
        failure = "The harness did not start in both phases; nothing was measured."
    else:
        metrics += _comparison(victim_main, victim_alone, fio, demand, record)
    return ScenarioOutcome(
        result=main["result"],
        metrics=metrics,
        series=[],
        record=record,
        failure=failure,
    )


def _tenant_metrics(
    victim: Mapping[str, Any] | None,
    alone: Mapping[str, Any] | None,
    fio: Mapping[str, Any] | None,
) -> list[dict[str, Any]]:
    found = []
    for figures, infix, phase in ((victim, "", MAIN), (alone, "_alone", ALONE)):
        if figures is None:
            continue
        key = f"record.tenants.victim.{phase}"
        name = f"victim{infix}"
        found += [
            metric(f"{name}_iops", "mean", figures["iops"], "IO/s", f"{key}.iops"),
            metric(f"{name}_mib_s", "mean", figures["mib_s"], "MiB/s", f"{key}.mib_s"),
        ]
        if figures["device_await_ms"] is not None:
            found.append(
                metric(
                    f"device{infix}_await_ms",
                    "mean",
                    figures["device_await_ms"],
                    "ms",
                    f"{key}.device_await_ms",
                )
            )
    if fio is None:
        return found
    key = "record.tenants.neighbour.fio"
    found += [
        metric("neighbour_iops", "mean", fio["iops"], "IO/s", f"{key}.iops"),
        metric("neighbour_mib_s", "mean", fio["mib_s"], "MiB/s", f"{key}.mib_s"),
    ]
    for direction in ("read", "write"):
        latency = (fio.get(direction) or {}).get("lat_us") or {}
        for stat in ("mean", "p50", "p99"):
            if latency.get(stat) is not None:
                found.append(
                    metric(
                        f"neighbour_{direction}_lat_us",
                        stat,
                        latency[stat],
                        "us",
                        f"{key}.{direction}.lat_us.{stat}",
                    )
                )
    return found


def _comparison(
    victim: Mapping[str, Any],
    alone: Mapping[str, Any],
    fio: Mapping[str, Any],
    demand: Mapping[str, Any],
    record: dict[str, Any],
) -> list[dict[str, Any]]:
    found = []
    if alone["iops"] > 0:
        slowdown = (alone["iops"] - victim["iops"]) / alone["iops"] * 100
        record["interference_slowdown_pct"] = slowdown
        found.append(
            metric(
                "interference_slowdown_pct",
                "mean",
                slowdown,
                "%",
                "record.interference_slowdown_pct",
            )
        )
    shares = {
        "victim": normalised(victim["iops"], alone["iops"]),
        "neighbour": normalised(float(fio["iops"]), float(demand["iops"])),
    }
    index = (
        jain_index([s for s in shares.values() if s is not None])
        if None not in shares.values()
        else None
    )
    record["fairness"] = {
        "index": index,
        "shares": shares,
        "demand": {
            "victim": {"iops": alone["iops"], "source": ALONE},
            "neighbour": dict(demand),
        },
        "definition": "Jain's index over the tenants' IOPS beside each other, "
        "each divided by its demand and capped at 1",
    }
    if index is not None:
        found.append(
            metric("fairness_jain", "mean", index, "ratio", "record.fairness.index")
        )
    return found
