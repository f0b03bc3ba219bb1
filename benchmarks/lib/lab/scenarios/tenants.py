"""The tenants of one device in an ``interference`` scenario, as the runner
measures them: the lab's neighbour job (fio in a sandbox and cgroup of its own,
on the policy's block devices, beside the victim's harness) and the devices'
own counters (``/proc/diskstats``).

``NeighbourRun`` runs the job in a background thread through the same
``run_harness`` as any harness (its own leased uid, per-run device nodes,
cgroup, rlimits), from a bundle the runner writes: a shell script that starts
fio and, when the runner drops a ``.stop`` file into its output directory,
ends it with SIGTERM, on which fio still writes its JSON report. Its figures
come from that report (``fio_figures``) and its cgroup's I/O totals.
"""

from __future__ import annotations

import json
import shlex
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from benchmarks.lib.lab.scenarios.neighbour import NeighbourJob
from benchmarks.lib.sandbox import HarnessResult, SandboxLimits, run_harness
from benchmarks.lib.sandbox.cgroups import Cgroup
from benchmarks.lib.sandbox.extras import SandboxExtras

STOP_FILE: Final = ".stop"
REPORT: Final = "fio.json"
ENTRYPOINT: Final = "neighbour.sh"
DISKSTATS: Final = Path("/proc/diskstats")
MIB: Final = float(1 << 20)
SECTOR: Final = 512
SCRIPT: Final = """#!/bin/sh
# The lab's neighbour job: fio until it ends or the runner asks it to stop.
{fio} --output="$REPROGATE_OUTPUT_DIR/{report}" &
pid=$!
while kill -0 "$pid" 2>/dev/null; do
    if [ -e "$REPROGATE_OUTPUT_DIR/{stop}" ]; then
        kill -TERM "$pid"
        break
    fi
    sleep 0.1
done
wait "$pid"
"""


def block_paths(extras: SandboxExtras) -> list[str]:
    """The sandbox's paths of the policy's block devices, once each."""
    paths: list[str] = []
    for node in extras.devices:
        if node.kind == "b" and node.path not in paths:
            paths.append(node.path)
    return paths


def fio_report(text: str) -> dict[str, Any]:
    """fio's JSON report from its output file, after the lines fio writes
    before it ("fio: terminating on signal 15"); ValueError when there is none."""
    start = 0 if text.startswith("{") else text.find("\n{") + 1
    document = json.loads(text[start:]) if start or text.startswith("{") else None
    if not isinstance(document, dict):
        raise ValueError("not a fio JSON report")
    return document


def fio_figures(document: Mapping[str, Any]) -> dict[str, Any]:
    """Throughput and completion latency of fio's JSON report, summed over its
    jobs: ``iops``, ``mib_s``, ``ios``, ``runtime_s``, and per direction with
    I/Os ``read``/``write`` {"iops", "ios", "lat_us": {"mean", "p50", "p99"}}
    (the latency of the report's first job doing that direction)."""
    jobs = [j for j in document.get("jobs") or [] if isinstance(j, dict)]
    figures: dict[str, Any] = {"iops": 0.0, "mib_s": 0.0, "ios": 0, "runtime_s": 0.0}
    for job in jobs:
        figures["runtime_s"] = max(
            figures["runtime_s"], float(job.get("job_runtime") or 0) / 1000
        )
        for direction in ("read", "write"):
            side = job.get(direction) or {}
            ios = int(side.get("total_ios") or 0)
            figures["iops"] += float(side.get("iops") or 0)
            figures["mib_s"] += float(side.get("bw_bytes") or 0) / MIB
            figures["ios"] += ios
            if ios and direction not in figures:
                figures[direction] = {
                    "iops": float(side.get("iops") or 0),
                    "ios": ios,
                    "lat_us": _latency(side.get("clat_ns") or {}),
                }
    return figures


def _latency(clat: Mapping[str, Any]) -> dict[str, float | None]:
    percentiles = clat.get("percentile") or {}

    def at(key: str) -> float | None:
        value = percentiles.get(key)
        return float(value) / 1000 if isinstance(value, int | float) else None

    mean = clat.get("mean")
    return {
        "mean": float(mean) / 1000 if isinstance(mean, int | float) else None,
        "p50": at("50.000000"),
        "p99": at("99.000000"),
    }


def diskstats(devices: list[str], path: Path = DISKSTATS) -> dict[str, dict[str, int]]:
    """Per device (kernel name): ``ios`` (reads + writes completed),
    ``sectors`` (read + written) and ``ticks_ms`` (time spent on them)."""
    found: dict[str, dict[str, int]] = {}
    try:
        text = path.read_text()
    except OSError:
        return found
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 11 or parts[2] not in devices:
            continue
        numbers = [int(p) if p.isdigit() else 0 for p in parts[3:11]]
        found[parts[2]] = {
            "ios": numbers[0] + numbers[4],
            "sectors": numbers[2] + numbers[6],
            "ticks_ms": numbers[3] + numbers[7],
        }
    return found


def diskstats_delta(
    before: Mapping[str, Mapping[str, int]], after: Mapping[str, Mapping[str, int]]
) -> dict[str, int]:
    """The devices' counters between two ``diskstats`` readings, summed."""
    total = {"ios": 0, "sectors": 0, "ticks_ms": 0}
    for name, counters in after.items():
        for key in total:
            total[key] += counters[key] - before.get(name, {}).get(key, 0)
    return total


def io_delta(
    start: Mapping[str, int] | None, end: Mapping[str, int] | None
) -> dict[str, int] | None:
    """A cgroup's ``io_totals`` between two readings as ``ios`` and ``bytes``
    (None when either reading is: the host accounts no cgroup I/O)."""
    if start is None or end is None:
        return None
    return {
        "ios": end["reads"] + end["writes"] - start["reads"] - start["writes"],
        "bytes": end["read_bytes"] + end["write_bytes"]
        - start["read_bytes"] - start["write_bytes"],
    }  # fmt: skip


def victim_figures(
    window_s: float,
    device: Mapping[str, int],
    neighbour_io: Mapping[str, int] | None = None,
    neighbour_fio: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The victim's I/O in a window of ``window_s`` seconds: the devices' I/Os
    (``diskstats_delta``) less the neighbour's in the same window, counted by
    its cgroup (``neighbour_io``) or else estimated from fio's mean rate
    (``neighbour_fio``); neither: the devices' alone (no neighbour ran)."""
    seconds = max(window_s, 1e-6)
    ios, size = float(device["ios"]), float(device["sectors"] * SECTOR)
    source = "diskstats"
    if neighbour_io is not None:
        ios, size = ios - neighbour_io["ios"], size - neighbour_io["bytes"]
        source = "diskstats less the neighbour's cgroup"
    elif neighbour_fio is not None:
        ios -= float(neighbour_fio.get("iops") or 0) * seconds
        size -= float(neighbour_fio.get("mib_s") or 0) * MIB * seconds
        source = "diskstats less the neighbour's fio rate (estimate)"
    ios, size = max(0.0, ios), max(0.0, size)
    return {
        "window_s": round(seconds, 3),
        "device_ios": device["ios"],
        "device_await_ms": device["ticks_ms"] / device["ios"]
        if device["ios"]
        else None,
        "ios": round(ios),
        "bytes": round(size),
        "iops": ios / seconds,
        "mib_s": size / MIB / seconds,
        "source": source,
    }


@dataclass
class NeighbourRun:
    """The neighbour in its own sandbox; ``start`` → ``wait_started`` →
    (the victim runs) → ``stop`` → ``join``."""

    job: NeighbourJob
    extras: SandboxExtras
    directory: Path  # the runner's, out of every harness's reach
    limits: SandboxLimits
    result: HarnessResult | None = None
    cgroup: Cgroup | None = None
    error: str = ""
    started_at: float | None = None  # time.monotonic when fio's sandbox started
    _started: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    @property
    def bundle_dir(self) -> Path:
        return self.directory / "bundle"

    @property
    def output_dir(self) -> Path:
        return self.directory / "output"

    def start(self) -> None:
        self.bundle_dir.mkdir(parents=True)
        self.output_dir.mkdir()
        fio = shlex.join(self.job.fio_args(block_paths(self.extras)))
        script = SCRIPT.format(fio=fio, report=REPORT, stop=STOP_FILE)
        entry = self.bundle_dir / ENTRYPOINT
        entry.write_text(script)
        entry.chmod(0o755)
        self._thread = threading.Thread(
            target=self._run, name="reprogate-neighbour", daemon=True
        )
        self._thread.start()

    def _run(self) -> None:
        def on_start(group: Cgroup | None) -> None:
            self.cgroup, self.started_at = group, time.monotonic()
            self._started.set()

        try:
            self.result = run_harness(
                bundle_dir=self.bundle_dir,
                entrypoint=ENTRYPOINT,
                output_dir=self.output_dir,
                env={"REPROGATE_NEIGHBOUR": "1"},
                limits=self.limits,
                extras=self.extras,
                on_start=on_start,
            )
        except Exception as error:  # reported by join(), never lost in a thread
            self.error = f"{type(error).__name__}: {error}"
        finally:
            self._started.set()

    def wait_started(self, timeout: float) -> bool:
        """Whether the neighbour's sandbox is up (False: it ended or never began)."""
        return self._started.wait(timeout) and self.started_at is not None

    def wait_busy(self, timeout: float, devices: list[str]) -> str:
        """Wait until the neighbour does I/O (fio takes a moment to set up):
        seen in its cgroup's accounting, else as the devices' I/O count moves;
        how it was seen ("cgroup", "diskstats"), or "timeout"."""
        deadline = time.monotonic() + timeout
        base = diskstats_delta({}, diskstats(devices))["ios"]
        while time.monotonic() < deadline and self._thread and self._thread.is_alive():
            io = self.cgroup.io_totals() if self.cgroup else None
            if io is not None and io["reads"] + io["writes"] > 0:
                return "cgroup"
            if io is None and diskstats_delta({}, diskstats(devices))["ios"] > base:
                return "diskstats"
            time.sleep(0.05)
        return "timeout"

    def ended(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the neighbour to end by itself."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self._thread is None or not self._thread.is_alive()

    def stop(self) -> None:
        """Ask the neighbour to end (fio writes its report as it stops)."""
        if self.output_dir.is_dir():
            (self.output_dir / STOP_FILE).touch()

    def join(self, timeout: float) -> dict[str, Any]:
        """What the neighbour did: its fio figures, its cgroup's I/O, how it
        ended; ``problem`` says why there are no figures."""
        if self._thread is not None:
            self._thread.join(timeout)
        ended = {
            "stop_reason": self.result.stop_reason if self.result else None,
            "message": self.result.message if self.result else self.error,
            "duration_s": self.result.duration_s if self.result else None,
            "cgroup_io": (self.cgroup.final_io if self.cgroup else None) or "none",
        }
        if self._thread is not None and self._thread.is_alive():
            return {**ended, "problem": "the neighbour did not stop in time"}
        try:
            report = fio_report((self.output_dir / REPORT).read_text())
        except (OSError, ValueError) as error:
            tail = self.result.stderr_tail[-300:] if self.result else self.error
            problem = f"no fio report ({type(error).__name__}); {tail}".strip()
            return {**ended, "problem": problem}
        return {**ended, "fio": fio_figures(report)}
