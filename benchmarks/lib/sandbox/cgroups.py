"""A per-run control group: process count, memory, CPU and block I/O
accounting, and a way to kill everything in it.

cgroup v1 (one hierarchy per controller, as on this project's lab hosts, see
platform.md §7) or the v2 unified hierarchy. The group is created below the
runner's own group (so the runner's limits still apply) and removed afterwards.
Whatever cannot be set up is left out and said in ``notes``: nothing here raises.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

CGROUP_ROOT: Final = Path("/sys/fs/cgroup")
SELF_CGROUP: Final = Path("/proc/self/cgroup")
V1_CONTROLLERS: Final = ("pids", "memory", "cpuacct", "freezer", "blkio")
# cgroup v1 counts a group's I/O on a device (blkio.throttle.io_serviced) only
# where a throttle rule names the device: the run's block devices get one that
# never throttles (an IOPS limit no device reaches).
ACCOUNTING_IOPS: Final = 1_000_000_000
PREFIX: Final = "reprogate-"
STALE_SECONDS: Final = 60  # an empty group this old was left by a killed runner


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _write(path: Path, value: str) -> bool:
    try:
        path.write_text(value)
    except OSError:
        return False
    return True


def _keyed(text: str | None, key: str) -> int:
    """``key N`` from a flat-keyed cgroup file (memory.events, pids.events…)."""
    for line in (text or "").splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return 0


def _blkio_rw(text: str) -> tuple[int, int]:
    """(Read, Write) summed over the devices of a v1 ``blkio.throttle`` file."""
    found = {"Read": 0, "Write": 0}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in found and parts[2].isdigit():
            found[parts[1]] += int(parts[2])
    return found["Read"], found["Write"]


def _io_stat(text: str) -> dict[str, int]:
    """A v2 ``io.stat`` summed over its devices."""
    names = {"rios": "reads", "wios": "writes", "rbytes": "read_bytes",
             "wbytes": "write_bytes"}  # fmt: skip
    found = dict.fromkeys(names.values(), 0)
    for line in text.splitlines():
        for item in line.split()[1:]:
            key, _, value = item.partition("=")
            if key in names and value.isdigit():
                found[names[key]] += int(value)
    return found


def _own_paths(self_cgroup: Path) -> dict[str, str]:
    """controller -> this process's group path; "" key for the v2 hierarchy."""
    paths: dict[str, str] = {}
    for line in (_read(self_cgroup) or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for controller in parts[1].split(","):
            paths[controller.removeprefix("name=")] = parts[2]
    return paths


@dataclass
class Cgroup:
    version: str  # "v1" | "v2"
    dirs: dict[str, Path]  # v1: controller -> group dir; v2: {"unified": dir}
    notes: list[str] = field(default_factory=list)
    v2_limits: frozenset[str] = frozenset()  # v2: limits that were written
    device_allow_list: str = "none"  # "cgroup-v1" when a devices list is in force
    final_io: dict[str, int] | None = None  # io_totals() as the group was removed

    @property
    def enforces(self) -> frozenset[str]:
        """Which limits the group enforces: "pids", "memory"."""
        if self.version == "v2":
            return self.v2_limits
        return frozenset(self.dirs) & {"pids", "memory"}

    @property
    def controllers(self) -> list[str]:
        if self.version == "v2":
            text = _read(self.dirs["unified"].parent / "cgroup.subtree_control") or ""
            return sorted(text.split())
        return sorted(self.dirs)

    def procs_files(self) -> list[bytes]:
        """The files a new process writes "0" to, to join the group."""
        return [os.fsencode(d / "cgroup.procs") for d in self.dirs.values()]

    def _file(self, controller: str, name: str) -> Path | None:
        directory = self.dirs.get("unified" if self.version == "v2" else controller)
        return directory / name if directory else None

    def pids(self) -> set[int]:
        found: set[int] = set()
        for directory in self.dirs.values():
            text = _read(directory / "cgroup.procs") or ""
            found.update(int(p) for p in text.split() if p.isdigit())
        return found

    def oom_kills(self) -> int:
        if self.version == "v2":
            path = self._file("memory", "memory.events")
        else:
            path = self._file("memory", "memory.oom_control")
        return _keyed(_read(path), "oom_kill") if path else 0

    def process_limit_hits(self) -> int:
        """How often a fork failed because of ``pids.max``."""
        path = self._file("pids", "pids.events")
        return _keyed(_read(path), "max") if path else 0

    def cpu_seconds(self) -> float | None:
        if self.version == "v2":
            path = self._file("cpu", "cpu.stat")
            text = _read(path) if path else None
            return _keyed(text, "usage_usec") / 1e6 if text else None
        path = self._file("cpuacct", "cpuacct.usage")
        text = (_read(path) or "").strip() if path else ""
        return int(text) / 1e9 if text.isdigit() else None

    def io_totals(self) -> dict[str, int] | None:
        """The group's block I/O so far, over all devices: ``reads``, ``writes``
        (I/Os), ``read_bytes``, ``write_bytes``; None where the host accounts
        none (no v1 ``blkio`` group, no v2 ``io.stat``)."""
        if self.version == "v2":
            path = self._file("io", "io.stat")
            text = _read(path) if path else None
            return _io_stat(text) if text is not None else None
        directory = self.dirs.get("blkio")
        ios = _read(directory / "blkio.throttle.io_serviced") if directory else None
        size = (
            _read(directory / "blkio.throttle.io_service_bytes") if directory else None
        )
        if ios is None or size is None:
            return None
        reads, writes = _blkio_rw(ios)
        read_bytes, write_bytes = _blkio_rw(size)
        return {
            "reads": reads,
            "writes": writes,
            "read_bytes": read_bytes,
            "write_bytes": write_bytes,
        }

    def kill(self, *, rounds: int = 50) -> int:
        """SIGKILL every process in the group; returns how many survived."""
        kill_file = self._file("", "cgroup.kill") if self.version == "v2" else None
        if kill_file is not None and kill_file.exists():
            _write(kill_file, "1")
        freezer = self.dirs.get("freezer")
        frozen = freezer is not None and _write(freezer / "freezer.state", "FROZEN")
        for _ in range(rounds):
            pids = self.pids()
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)
        if frozen and freezer is not None:
            _write(freezer / "freezer.state", "THAWED")  # killed tasks exit on thaw
        for _ in range(rounds):
            if not self.pids():
                return 0
            time.sleep(0.02)
        return len(self.pids())

    def remove(self) -> None:
        """Remove the group (its I/O totals are kept in ``final_io``)."""
        if self.final_io is None:
            self.final_io = self.io_totals()
        for directory in self.dirs.values():
            for _ in range(50):
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)  # the last tasks are still exiting


def _sweep(parent: Path) -> None:
    """Remove empty groups of ours that a killed runner left behind (a group
    with processes cannot be removed; a fresh one may be about to be joined)."""
    now = time.time()
    for directory in parent.glob(f"{PREFIX}*"):
        with contextlib.suppress(OSError):
            if now - directory.stat().st_mtime > STALE_SECONDS:
                directory.rmdir()


def cgroup_create(
    name: str,
    *,
    memory_bytes: int | None,
    processes: int | None,
    root: Path = CGROUP_ROOT,
    self_cgroup: Path = SELF_CGROUP,
    device_rules: list[str] | None = None,
) -> tuple[Cgroup | None, list[str]]:
    """Create group ``name`` with the given limits; (None, notes) when the host
    has no usable hierarchy. ``device_rules`` (``devices.allow`` lines): a
    cgroup v1 ``devices`` allow-list where the host offers one (everything else
    denied); on cgroup v2 (an eBPF program, not written here) none is set and
    ``device_allow_list`` stays "none"."""
    own = _own_paths(self_cgroup)
    if (root / "cgroup.controllers").exists():
        group, notes = _create_v2(name, own.get("", "/"), root, memory_bytes, processes)
        if device_rules is not None:
            notes.append("no device allow-list: cgroup v2 has no devices files")
        return group, notes
    group, notes = _create_v1(name, own, root, memory_bytes, processes)
    if device_rules is not None:
        notes += _device_list(group, name, own, root, device_rules)
        notes += _io_accounting(group, device_rules)
    return group, notes


def _io_accounting(group: Cgroup | None, rules: list[str]) -> list[str]:
    """The never-throttling rule that makes cgroup v1 count the group's I/O
    on each block device of ``rules`` (``devices.allow`` lines)."""
    directory = group.dirs.get("blkio") if group is not None else None
    if directory is None:
        return []
    limits = directory / "blkio.throttle.read_iops_device"
    for rule in rules:
        kind, _, rest = rule.partition(" ")
        numbers = rest.split(" ")[0]
        if (
            kind == "b"
            and "*" not in numbers
            and not _write(limits, f"{numbers} {ACCOUNTING_IOPS}")
        ):
            return [f"cgroup blkio: no I/O accounting on {numbers} (rule not written)"]
    return []


def _device_list(
    group: Cgroup | None,
    name: str,
    own: dict[str, str],
    root: Path,
    rules: list[str],
) -> list[str]:
    """Add a v1 ``devices`` group that denies all but ``rules`` to ``group``."""
    mount = root / "devices"
    if group is None or not (mount / "devices.allow").exists():
        return ["no device allow-list: the host has no cgroup v1 devices controller"]
    parent = mount / own.get("devices", "/").lstrip("/")
    parent = parent if parent.is_dir() else mount
    _sweep(parent)
    directory = parent / name
    try:
        directory.mkdir()
    except OSError as exc:
        return [f"no device allow-list: cannot create the group ({exc.strerror})"]
    written = _write(directory / "devices.deny", "a") and all(
        _write(directory / "devices.allow", rule) for rule in rules
    )
    if not written:
        with contextlib.suppress(OSError):
            directory.rmdir()
        return ["no device allow-list: devices.deny/allow not writable"]
    group.dirs["devices"] = directory
    group.device_allow_list = "cgroup-v1"
    return []


def _create_v1(
    name: str,
    own: dict[str, str],
    root: Path,
    memory_bytes: int | None,
    processes: int | None,
) -> tuple[Cgroup | None, list[str]]:
    notes: list[str] = []
    dirs: dict[str, Path] = {}
    for controller in V1_CONTROLLERS:
        mount = root / controller
        if not (mount / "cgroup.procs").exists():
            continue
        parent = mount / own.get(controller, "/").lstrip("/")
        if not parent.is_dir():
            parent = mount
        _sweep(parent)
        directory = parent / name
        try:
            directory.mkdir()
        except OSError as exc:
            notes.append(f"cgroup {controller}: cannot create ({exc.strerror})")
            continue
        dirs[controller] = directory
    group = Cgroup(version="v1", dirs=dirs, notes=notes)
    if (
        processes
        and "pids" in dirs
        and not _write(dirs["pids"] / "pids.max", str(processes))
    ):
        notes.append("cgroup pids: pids.max not writable")
        group.dirs.pop("pids")
    if memory_bytes and "memory" in dirs:
        if _write(dirs["memory"] / "memory.limit_in_bytes", str(memory_bytes)):
            _write(dirs["memory"] / "memory.memsw.limit_in_bytes", str(memory_bytes))
        else:
            notes.append("cgroup memory: memory.limit_in_bytes not writable")
            group.dirs.pop("memory")
    for controller, directory in dirs.items():
        if controller not in group.dirs:
            with contextlib.suppress(OSError):
                directory.rmdir()
    if not group.dirs:
        return None, [*notes, "no usable cgroup v1 controller"]
    return group, notes


def _create_v2(
    name: str,
    own: str,
    root: Path,
    memory_bytes: int | None,
    processes: int | None,
) -> tuple[Cgroup | None, list[str]]:
    parent = root / own.lstrip("/")
    if not parent.is_dir():
        parent = root
    wanted = {"pids", "memory", "cpu", "io"} & set(
        (_read(parent / "cgroup.controllers") or "").split()
    )
    enabled = set((_read(parent / "cgroup.subtree_control") or "").split())
    for controller in sorted(wanted - enabled):
        _write(parent / "cgroup.subtree_control", f"+{controller}")
    enabled = set((_read(parent / "cgroup.subtree_control") or "").split())
    if not enabled & {"pids", "memory"}:
        return None, [f"cgroup v2: controllers not delegated below {parent}"]
    _sweep(parent)
    directory = parent / name
    try:
        directory.mkdir()
    except OSError as exc:
        return None, [f"cgroup v2: cannot create ({exc.strerror})"]
    notes, written = [], set()
    for limit, filename, value in (
        ("pids", "pids.max", processes),
        ("memory", "memory.max", memory_bytes),
    ):
        if value and limit in enabled and _write(directory / filename, str(value)):
            written.add(limit)
        elif value:
            notes.append(f"cgroup v2: {filename} not set")
    _write(directory / "memory.swap.max", "0")
    group = Cgroup(
        version="v2",
        dirs={"unified": directory},
        notes=notes,
        v2_limits=frozenset(written),
    )
    return group, notes
