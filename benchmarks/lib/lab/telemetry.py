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

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Protocol

from benchmarks.lib.lab.telemetry_blob import Recording, SeriesData

logger = logging.getLogger(__name__)

Key = tuple[str, str]  # (source, device)
Reading = dict[Key, dict[str, int]]

DEFAULT_INTERVAL_S: Final = 1.0
MIN_INTERVAL_S: Final = 0.01
MAX_NET_INTERFACES: Final = 32
# /proc/diskstats columns after the name (iostats.rst fields 1-11).
DISK_FIELDS: Final = (
    "reads_completed",
    "reads_merged",
    "sectors_read",
    "read_ticks_ms",
    "writes_completed",
    "writes_merged",
    "sectors_written",
    "write_ticks_ms",
    "in_flight",
    "io_ticks_ms",
    "time_in_queue_ms",
)
NET_FIELDS: Final = (
    ("rx_bytes", 0),
    ("rx_packets", 1),
    ("rx_errors", 2),
    ("rx_dropped", 3),
    ("tx_bytes", 8),
    ("tx_packets", 9),
    ("tx_errors", 10),
    ("tx_dropped", 11),
)
RDMA_COUNTERS: Final = {
    "port_rcv_data": ("port_rcv_bytes", 4),
    "port_xmit_data": ("port_xmit_bytes", 4),
    "port_rcv_packets": ("port_rcv_packets", 1),
    "port_xmit_packets": ("port_xmit_packets", 1),
    "port_rcv_errors": ("port_rcv_errors", 1),
    "symbol_error": ("symbol_error", 1),
    "link_downed": ("link_downed", 1),
}
GAUGES: Final = frozenset(
    {
        "in_flight",
        "memory_bytes",
        "gpu_util_pct",
        "gpu_mem_util_pct",
        "gpu_mem_used_mib",
        "power_mw",
        "temperature_c",
        "progress_permille",
    }
)


class Source(Protocol):
    name: str

    def read(self) -> Reading: ...


def _text(path: Path) -> str | None:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return None


def _int(text: str | None) -> int | None:
    text = (text or "").strip()
    return int(text) if text.isdigit() else None


# -- block devices -----------------------------------------------------------------


def block_family(
    devices: Iterable[str], sys_class_block: Path = Path("/sys/class/block")
) -> list[str]:
    """The named block devices (``loop0`` or ``/dev/loop0``) with every device
    under them (``slaves``) and over them (``holders``), transitively, sorted."""
    seen: set[str] = set()
    todo = [Path(os.path.realpath(d)).name if "/" in d else d for d in devices]
    while todo:
        name = todo.pop()
        if not name or name in seen:
            continue
        seen.add(name)
        for link in ("slaves", "holders"):
            try:
                todo.extend(sorted(os.listdir(sys_class_block / name / link)))
            except OSError:
                continue
    return sorted(seen)


class DiskstatsSource:
    name = "diskstats"

    def __init__(self, devices: Sequence[str], path: Path = Path("/proc/diskstats")):
        self.devices, self.path = frozenset(devices), path

    def read(self) -> Reading:
        found: Reading = {}
        with self.path.open() as handle:
            for line in handle:
                parts = line.split()
                if len(parts) < 14 or parts[2] not in self.devices:
                    continue
                values = [int(v) for v in parts[3:14]]
                found[(self.name, parts[2])] = dict(
                    zip(DISK_FIELDS, values, strict=True)
                )
        return found


# -- pressure, cgroup --------------------------------------------------------------


def _psi_totals(text: str | None, prefix: str) -> dict[str, int]:
    """``some``/``full`` ``total=`` of a PSI file as ``<prefix>_some_us`` …"""
    found = {}
    for line in (text or "").splitlines():
        kind, _, rest = line.partition(" ")
        for item in rest.split():
            if item.startswith("total=") and kind in ("some", "full"):
                total = _int(item[6:])
                if total is not None:
                    found[f"{prefix}_{kind}_us"] = total
    return found


class PressureSource:
    name = "pressure"

    def __init__(self, root: Path = Path("/proc/pressure")) -> None:
        self.root = root

    def read(self) -> Reading:
        fields: dict[str, int] = {}
        for resource in ("cpu", "io", "memory"):
            fields.update(_psi_totals(_text(self.root / resource), resource))
        return {(self.name, "host"): fields} if fields else {}


class CgroupSource:
    """The run's cgroup once ``attach`` names it (its dirs by controller, as
    ``benchmarks.lib.sandbox.cgroups.Cgroup`` keeps them)."""

    name = "cgroup"

    def __init__(self) -> None:
        self.version: str | None = None
        self.dirs: dict[str, Path] = {}

    def attach(self, version: str, dirs: dict[str, Path]) -> None:
        self.version, self.dirs = version, dict(dirs)

    def read(self) -> Reading:
        if self.version == "v2":
            fields = self._v2(self.dirs["unified"])
        elif self.version == "v1":
            fields = self._v1()
        else:
            return {}
        return {(self.name, "run"): fields} if fields else {}

    def _v2(self, root: Path) -> dict[str, int]:
        fields: dict[str, int] = {}
        for line in (_text(root / "cpu.stat") or "").splitlines():
            key, _, value = line.partition(" ")
            if (
                key in ("usage_usec", "user_usec", "system_usec")
                and _int(value) is not None
            ):
                fields["cpu_" + key.replace("usec", "us")] = int(value)
        memory = _int(_text(root / "memory.current"))
        if memory is not None:
            fields["memory_bytes"] = memory
        io = {"rbytes": 0, "wbytes": 0, "rios": 0, "wios": 0}
        for line in (_text(root / "io.stat") or "").splitlines():
            for item in line.split()[1:]:
                key, _, value = item.partition("=")
                if key in io and value.isdigit():
                    io[key] += int(value)
        if (root / "io.stat").exists():
            fields.update(
                io_read_bytes=io["rbytes"],
                io_write_bytes=io["wbytes"],
                io_reads=io["rios"],
                io_writes=io["wios"],
            )
        fields.update(_psi_totals(_text(root / "io.pressure"), "io"))
        return fields

    def _v1(self) -> dict[str, int]:
        fields: dict[str, int] = {}
        if "cpuacct" in self.dirs:
            usage = _int(_text(self.dirs["cpuacct"] / "cpuacct.usage"))
            if usage is not None:
                fields["cpu_usage_us"] = usage // 1000
        if "memory" in self.dirs:
            memory = _int(_text(self.dirs["memory"] / "memory.usage_in_bytes"))
            if memory is not None:
                fields["memory_bytes"] = memory
        if "blkio" in self.dirs:
            text = _text(self.dirs["blkio"] / "blkio.throttle.io_service_bytes")
            for line in (text or "").splitlines():
                parts = line.split()
                if (
                    len(parts) == 3
                    and parts[1] in ("Read", "Write")
                    and parts[2].isdigit()
                ):
                    key = "io_read_bytes" if parts[1] == "Read" else "io_write_bytes"
                    fields[key] = fields.get(key, 0) + int(parts[2])
        return fields


# -- network, RDMA -----------------------------------------------------------------


class NetSource:
    name = "net"

    def __init__(
        self,
        interfaces: Sequence[str] | None = None,
        path: Path = Path("/proc/net/dev"),
    ) -> None:
        self.interfaces = frozenset(interfaces) if interfaces is not None else None
        self.path = path

    def read(self) -> Reading:
        found: Reading = {}
        for line in (_text(self.path) or "").splitlines()[2:]:
            name, _, rest = line.partition(":")
            name, values = name.strip(), rest.split()
            wanted = (
                name != "lo" if self.interfaces is None else name in self.interfaces
            )
            if not wanted or len(values) < 16 or len(found) >= MAX_NET_INTERFACES:
                continue
            numbers = [int(v) for v in values[:16]]
            found[(self.name, name)] = {f: numbers[i] for f, i in NET_FIELDS}
        return found


class RdmaSource:
    name = "rdma"

    def __init__(self, root: Path = Path("/sys/class/infiniband")) -> None:
        self.counters: list[tuple[str, Path]] = []
        for port in sorted(root.glob("*/ports/*")):
            self.counters.append(
                (f"{port.parent.parent.name}/{port.name}", port / "counters")
            )

    def read(self) -> Reading:
        found: Reading = {}
        for device, folder in self.counters:
            fields = {}
            for counter, (field, scale) in RDMA_COUNTERS.items():
                value = _int(_text(folder / counter))
                if value is not None:
                    fields[field] = value * scale
            if fields:
                found[(self.name, device)] = fields
        return found


# -- GPUs through NVML -----------------------------------------------------------


class NvmlSource:
    """GPUs through an NVML binding (``pynvml``): in-process calls, no exec."""

    name = "gpu"

    def __init__(self, nvml: Any) -> None:
        self.nvml = nvml
        nvml.nvmlInit()
        count = nvml.nvmlDeviceGetCount()
        self.handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]

    def read(self) -> Reading:
        found: Reading = {}
        for index, handle in enumerate(self.handles):
            rates = self.nvml.nvmlDeviceGetUtilizationRates(handle)
            memory = self.nvml.nvmlDeviceGetMemoryInfo(handle)
            fields = {
                "gpu_util_pct": int(rates.gpu),
                "gpu_mem_util_pct": int(rates.memory),
                "gpu_mem_used_mib": int(memory.used) >> 20,
            }
            with contextlib.suppress(Exception):
                fields["power_mw"] = int(self.nvml.nvmlDeviceGetPowerUsage(handle))
            found[(self.name, f"gpu{index}")] = fields
        return found


def nvml_source() -> tuple[NvmlSource | None, str]:
    """NVML when ``pynvml`` (nvidia-ml-py) is installed and a driver answers;
    otherwise None and why."""
    try:
        import pynvml  # type: ignore[import-not-found]
    except ImportError:
        return None, "gpu telemetry unavailable (nvidia-ml-py not installed)"
    try:
        return NvmlSource(pynvml), ""
    except Exception as error:
        return None, f"gpu telemetry unavailable (NVML: {error})"


class ProgressSource:
    """The harness's own progress (0-1 as ``::progress::`` said), in ‰."""

    name = "harness"

    def __init__(self, progress: Callable[[], float | None]) -> None:
        self.progress = progress

    def read(self) -> Reading:
        value = self.progress()
        if value is None:
            return {}
        return {(self.name, "progress"): {"progress_permille": round(1000 * value)}}


def block_device_of(path: Path, sys_dev_block: Path = Path("/sys/dev/block")) -> str:
    """The block device holding ``path`` (``vda1``), or "" (an overlay, tmpfs)."""
    try:
        number = os.stat(path).st_dev
    except OSError:
        return ""
    link = sys_dev_block / f"{os.major(number)}:{os.minor(number)}"
    return Path(os.path.realpath(link)).name if link.exists() else ""


def default_sources(
    devices: Sequence[str] = (),
    *,
    progress: Callable[[], float | None] | None = None,
    sys_class_block: Path = Path("/sys/class/block"),
) -> tuple[list[Source], list[str]]:
    """The sources for a run on this host, and notes on the ones missing."""
    sources: list[Source] = [PressureSource(), NetSource()]
    notes: list[str] = []
    if devices:
        sources.insert(0, DiskstatsSource(block_family(devices, sys_class_block)))
    if Path("/sys/class/infiniband").is_dir():
        sources.append(RdmaSource())
    gpu, why = nvml_source()
    if gpu is not None:
        sources.append(gpu)
    elif Path("/dev/nvidiactl").exists():
        notes.append(why)
    if progress is not None:
        sources.append(ProgressSource(progress))
    return sources, notes


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
