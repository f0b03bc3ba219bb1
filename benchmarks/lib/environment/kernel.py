"""The kernel a run executes on: release, command line, a fixed list of
sysctls and transparent huge pages. Values are the files' text; a sysctl the
kernel does not have is None."""

from __future__ import annotations

import platform
import re
from pathlib import Path
from typing import Any, Final

from benchmarks.lib.environment.sources import read

# The tunables that move storage and accelerator benchmarks (page cache
# write-back, NUMA, huge pages, socket buffers, async I/O): captured always.
SYSCTLS: Final = (
    "fs.aio-max-nr",
    "fs.file-max",
    "kernel.numa_balancing",
    "kernel.randomize_va_space",
    "kernel.sched_autogroup_enabled",
    "net.core.rmem_max",
    "net.core.wmem_max",
    "net.ipv4.tcp_congestion_control",
    "vm.dirty_background_ratio",
    "vm.dirty_ratio",
    "vm.max_map_count",
    "vm.nr_hugepages",
    "vm.overcommit_memory",
    "vm.swappiness",
    "vm.zone_reclaim_mode",
)


def kernel(root: Path, real: bool) -> dict[str, Any]:
    thp = "sys/kernel/mm/transparent_hugepage"
    return {
        "release": read(root, "proc/sys/kernel/osrelease"),
        "version": read(root, "proc/sys/kernel/version"),
        "machine": platform.machine() if real else read(root, "proc/sys/kernel/arch"),
        "cmdline": read(root, "proc/cmdline"),
        "sysctls": {
            name: read(root, "proc/sys/" + name.replace(".", "/")) for name in SYSCTLS
        },
        "thp": {
            "enabled": _chosen(read(root, f"{thp}/enabled")),
            "defrag": _chosen(read(root, f"{thp}/defrag")),
        },
    }


def _chosen(text: str | None) -> str | None:
    """``always [madvise] never`` -> ``madvise``."""
    match = re.search(r"\[([^\]]+)\]", text or "")
    return match.group(1) if match else text
