"""The telemetry sampler's sources (``benchmarks.lib.lab.telemetry``): each
reads files or calls a library and returns ``{(source, device): {field: int}}``
with the counters as the kernel keeps them; none starts a process."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Final, Protocol

Key = tuple[str, str]  # (source, device)
Reading = dict[Key, dict[str, int]]

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
        import pynvml  # type: ignore[import-untyped,unused-ignore]
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
