"""Per-I/O block latency, when a run's policy asks for it and the host can: one
``bpftrace`` child for the whole run (never one per sample) on the block layer's
``block_rq_issue``/``block_rq_complete`` tracepoints, filtered to the run's
devices, printing a log2 histogram of microseconds per device at exit.

``/proc/diskstats`` gives only each interval's mean service time; percentiles of
single I/Os come from this histogram alone, each reported as the upper bound of
its log2 bucket (so within a factor of 2 above the true value)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

ATTACH_SECONDS: Final = 15.0
READY: Final = "reprogate-ready"
STOP_SECONDS: Final = 10.0
TRACEFS: Final = (Path("/sys/kernel/tracing"), Path("/sys/kernel/debug/tracing"))


@dataclass(frozen=True)
class Histogram:
    device: str
    buckets: list[tuple[int, int, int]]  # (min µs, max µs, count)

    def as_json(self) -> dict[str, Any]:
        return {
            "source": "block_latency",
            "device": self.device,
            "unit": "us",
            "buckets": [list(b) for b in self.buckets],
        }

    @property
    def count(self) -> int:
        return sum(b[2] for b in self.buckets)

    def percentile(self, p: float) -> float:
        """The upper bound of the bucket holding the p-th percentile I/O."""
        rank, seen = p / 100 * self.count, 0
        for _low, high, count in self.buckets:
            seen += count
            if seen >= rank and count:
                return float(high)
        return float(self.buckets[-1][1]) if self.buckets else 0.0


def kernel_dev(name: str, sys_class_block: Path = Path("/sys/class/block")) -> int:
    """A block device's dev_t as tracepoints see it: major << 20 | minor."""
    major, _, minor = (
        (sys_class_block / name / "dev").read_text().strip().partition(":")
    )
    return (int(major) << 20) | int(minor)


def script(devs: Sequence[int]) -> str:
    match = " || ".join(f"args->dev == {d}" for d in devs)
    key = "args->dev, args->sector"
    return (
        f'BEGIN {{ printf("{READY}\\n"); }} '
        f"tracepoint:block:block_rq_issue /{match}/ {{ @start[{key}] = nsecs; }} "
        f"tracepoint:block:block_rq_complete /@start[{key}]/ {{ "
        f"@us[args->dev] = hist((nsecs - @start[{key}]) / 1000); "
        f"delete(@start[{key}]); }} END {{ clear(@start); }}"
    )


def _bucket(entry: dict[str, Any]) -> tuple[int, int, int]:
    low = int(entry.get("min") or 0)
    high = entry.get("max")
    return low, int(high) if high is not None else low, int(entry["count"])


def parse(output: str, names: dict[int, str]) -> list[Histogram]:
    """bpftrace's ``-f json`` lines → one histogram per device."""
    found = []
    for line in output.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict) or event.get("type") != "hist":
            continue
        per_dev = (event.get("data") or {}).get("@us") or {}
        for dev, buckets in sorted(per_dev.items()):
            rows = [_bucket(b) for b in buckets if isinstance(b, dict) and "count" in b]
            name = names.get(int(dev), str(dev)) if str(dev).isdigit() else str(dev)
            found.append(Histogram(name, rows))
    return found


class BlockLatencyTracer:
    """``start()`` returns "" once the probes are attached, else why not;
    ``stop()`` returns the histograms and a note ("" when all went well)."""

    def __init__(self, devices: Sequence[str], bpftrace: str | None = None) -> None:
        self.devices = list(devices)
        self.bpftrace = bpftrace or shutil.which("bpftrace")
        self.process: subprocess.Popen[str] | None = None
        self.lines: list[str] = []
        self.attached = threading.Event()
        self.reader: threading.Thread | None = None
        self.names: dict[int, str] = {}

    def why_not(self) -> str:
        if not self.devices:
            return "no block device to trace"
        if self.bpftrace is None:
            return "bpftrace is not installed"
        if os.geteuid() != 0:
            return "tracing needs root"
        if not any((t / "events" / "block").is_dir() for t in TRACEFS):
            return "the block tracepoints are not visible (tracefs not mounted)"
        return ""

    def start(self) -> str:
        why = self.why_not()
        if why:
            return why
        try:
            self.names = {kernel_dev(d): d for d in self.devices}
        except (OSError, ValueError) as error:
            return f"device numbers unreadable ({error})"
        argv = [str(self.bpftrace), "-f", "json", "-e", script(sorted(self.names))]
        self.process = subprocess.Popen(  # noqa: S603  the operator's own tool
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        if not self.attached.wait(ATTACH_SECONDS):
            self._kill()
            return "bpftrace did not attach its probes"
        return ""

    def _read(self) -> None:
        stdout = self.process.stdout if self.process is not None else None
        for line in stdout or ():
            self.lines.append(line)
            if READY in line:  # BEGIN runs once every probe is attached
                self.attached.set()

    def _kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def stop(self) -> tuple[list[Histogram], str]:
        if self.process is None:
            return [], ""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)  # prints the maps, exits
        try:
            self.process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self._kill()
            return [], "bpftrace did not stop in time: no histogram"
        if self.reader is not None:
            self.reader.join(STOP_SECONDS)
        return parse("".join(self.lines), self.names), ""
