"""The runner's telemetry sampler: a thread that reads the host's counters at a
fixed interval from the harness's start to its exit, with a last sample at exit.

Sources (each optional; one that fails is dropped with a note, the others go on):

- ``diskstats``: ``/proc/diskstats`` for the given block devices and the devices
  under and over them (``/sys/class/block/<d>/slaves`` and ``holders``); field
  names after the kernel's ``Documentation/admin-guide/iostats.rst``;
- ``pressure``: ``/proc/pressure/{cpu,io,memory}`` ``total=`` (µs stalled);
- ``cgroup``: the run's cgroup (v2 ``cpu.stat``, ``memory.current``, ``io.stat``,
  ``io.pressure``; v1 ``cpuacct.usage``, ``memory.usage_in_bytes``), attached
  once the sandbox made it;
- ``net``: ``/proc/net/dev``; ``rdma``: ``/sys/class/infiniband/*/ports/*/counters``
  (``port_*_data`` count 4-byte words: stored as bytes);
- ``gpu``: NVML through ``pynvml`` (nvidia-ml-py) when installed, in process;
- ``harness``: the progress the harness reported, to align charts with it.

Every source reads files or calls a library: none starts a process. Counter
fields become per-interval deltas (0 at ``t_ms`` 0; a counter that went back
counts 0); gauges are kept as read."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Final

from benchmarks.lib.lab.telemetry_blob import Recording, SeriesData
from benchmarks.lib.lab.telemetry_sources import GAUGES, Key, Reading, Source

logger = logging.getLogger(__name__)

DEFAULT_INTERVAL_S: Final = 1.0
MIN_INTERVAL_S: Final = 0.01


# -- the sampler -------------------------------------------------------------------


class Recorder:
    """Readings in, per-interval series out: counters as deltas, gauges as read."""

    def __init__(self) -> None:
        self.t_ms: list[int] = []
        self.series: dict[Key, dict[str, list[int]]] = {}
        self.last: dict[Key, dict[str, int]] = {}

    def add(self, t_ms: int, reading: Reading) -> None:
        n = len(self.t_ms)
        self.t_ms.append(t_ms)
        for key, fields in reading.items():
            columns = self.series.setdefault(key, {})
            before = self.last.get(key, {})
            for field, value in fields.items():
                column = columns.setdefault(field, [0] * n)
                if field in GAUGES:
                    column.append(value)
                elif field in before:
                    column.append(max(0, value - before[field]))
                else:
                    column.append(0)  # first seen: nothing happened before it
            self.last[key] = {**before, **fields}
        for columns in self.series.values():
            for column in columns.values():
                if len(column) == n:  # not read this time
                    column.append(0)

    def recording(
        self, interval_ms: int, started: str, notes: list[str], devices: list[str]
    ) -> Recording:
        return Recording(
            interval_ms=interval_ms,
            started=started,
            t_ms=list(self.t_ms),
            series=[
                SeriesData(source, device, {f: list(v) for f, v in fields.items()})
                for (source, device), fields in sorted(self.series.items())
            ],
            notes=list(notes),
            devices=list(devices),
        )


class Sampler:
    """``start()`` takes the first sample and starts the thread; ``stop()`` ends
    it, takes the last sample and returns the recording. A source that raises is
    dropped with a note; the sampler never stops the run."""

    def __init__(
        self,
        sources: Sequence[Source],
        *,
        interval_s: float = DEFAULT_INTERVAL_S,
        notes: Sequence[str] = (),
        devices: Sequence[str] = (),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.sources = list(sources)
        self.devices = list(devices)
        self.interval_s = max(MIN_INTERVAL_S, float(interval_s))
        self.notes = list(notes)
        self.clock = clock
        self.recorder = Recorder()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0
        self._started = ""

    def start(self) -> None:
        self._t0 = self.clock()
        now = datetime.now(UTC)
        self._started = (
            now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"
        )
        self.sample()
        self._thread = threading.Thread(
            target=self._loop, name="telemetry", daemon=True
        )
        self._thread.start()

    def _loop(self) -> None:
        deadline = self._t0
        while True:
            deadline += self.interval_s
            if self._stop.wait(max(0.0, deadline - self.clock())):
                return
            self.sample()

    def sample(self) -> None:
        with self._lock:
            t_ms = round((self.clock() - self._t0) * 1000)
            if self.recorder.t_ms and t_ms <= self.recorder.t_ms[-1]:
                return
            reading: Reading = {}
            for source in list(self.sources):
                try:
                    reading.update(source.read())
                except Exception as error:
                    self.sources.remove(source)
                    why = f"{type(error).__name__}: {error}"
                    note = f"{source.name}: dropped at {t_ms} ms ({why})"
                    self.notes.append(note[:300])
                    logger.warning("telemetry source %s", note)
            self.recorder.add(t_ms, reading)

    def stop(self) -> Recording:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.sample()
        return self.recorder.recording(
            round(self.interval_s * 1000), self._started, self.notes, self.devices
        )
