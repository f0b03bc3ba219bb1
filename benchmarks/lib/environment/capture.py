"""``capture_environment``: what the host a run executes on is made of.

Schema "reprogate.host-environment/v1" (JSON-able; every value may be None when
it cannot be found; lists may be empty)::

    {"schema", "captured_at" (UTC ISO 8601), "hostname", "container": bool,
     "os": {"name", "id", "version_id", "version", "pretty_name"},
     "kernel": {"release", "version", "machine", "cmdline",
                "sysctls": {<name>: text}, "thp": {"enabled", "defrag"}},
     "cpu": {"model", "vendor", "microcode", "sockets", "cores", "threads",
             "numa_nodes", "governor", "scaling_driver"},
     "memory": {"total_bytes", "hugepages_total", "hugepage_size_bytes"},
     "pci": [{"address", "class", "vendor_id", "device_id",
              "subsystem_vendor_id", "subsystem_device_id", "revision", "name",
              "driver", "numa_node", "iommu_group",
              "link": {"current_speed", "current_width", "max_speed",
                       "max_width"}}],
     "gpus": [{"model", "vendor", "kind", "vendor_id", "device_id", "class",
               "driver", "driver_version", "firmware", "memory_bytes",
               "pci_address", "numa_node", "iommu_group", "link", "source"}],
              # every accelerator (GPU, NPU, MLU, DCU…), of every vendor
     "accelerator_tools": {<vendor tool>: summary text | None},
     "nics": [{"name", "virtual", "driver", "driver_version", "firmware", "model",
               "pci_address", "speed_mbps", "mtu", "state", "numa_node", "link"}],
     "rdma": [{"name", "firmware", "hca_type", "board_id", "node_type",
               "node_guid", "driver", "pci_address", "netdevs",
               "ports": [{"port", "state", "phys_state", "rate", "link_layer"}]}],
     "nvme": [{"name", "model", "serial", "firmware", "transport", "address",
               "state", "subsystem_nqn", "cntlid", "numa_node", "pci_address",
               "source"}],
     "nvme_subsystems": [{"name", "nqn", "model", "firmware", "iopolicy",
                          "paths": [{"controller", "transport", "address",
                                     "state"}],
                          "namespaces", "source"}],
     "block": [{"name", "kind", "dev", "model", "size_bytes", "rotational",
                "read_only", "logical_block_size", "scheduler", "backing_file",
                "direct_io", "dm_name", "holders", "slaves", "driver"}],
     "packages": {"python", "runner_python", "glibc", "fio", "nvme-cli", "bwrap",
                  "nvidia-driver", "cuda", <Debian packages>,
                  <packages of the system python3>},
     "tools": {"lscpu": "ok" | "absent" | "failed" | "timeout" | "not run", …}}

``root`` points the /proc, /sys and /etc reads at another tree (tests use fake
trees); commands run only for the real root unless a ``runner`` is given.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from benchmarks.lib.environment import hardware, kernel, pci, storage
from benchmarks.lib.environment.sources import (
    Commands,
    Runner,
    key_values,
    read,
    system_runner,
)

SCHEMA: Final = "reprogate.host-environment/v1"
DEBIAN_PACKAGES: Final = ("fio", "nvme-cli", "rdma-core", "ibverbs-providers")
PYTHON_PACKAGES: Final = ("torch", "vllm", "lmcache", "numpy")
_SYSTEM_PYTHON_PROBE: Final = (
    "import json, sys, importlib.metadata as m\n"
    "v = {}\n"
    "for n in sys.argv[1:]:\n"
    "    try: v[n] = m.version(n)\n"
    "    except Exception: v[n] = None\n"
    "print(json.dumps({'python': sys.version.split()[0], 'packages': v}))\n"
)


def capture_environment(
    root: Path | str = "/", *, runner: Runner | None = None
) -> dict[str, Any]:
    """JSON-able description of this host (or of the tree at ``root``)."""
    root = Path(root)
    real = root == Path("/")
    commands = Commands(
        runner if runner is not None else system_runner if real else None
    )
    names = hardware.lspci_names(commands)
    functions = pci.pci_functions(root, names)
    gpus = hardware.gpus(root, commands, functions)
    controllers = storage.nvme(root, commands)
    rdma = hardware.rdma(root)
    return {
        "schema": SCHEMA,
        "captured_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "hostname": read(root, "proc/sys/kernel/hostname"),
        "container": any(
            (root / p).exists() for p in (".dockerenv", "run/.containerenv")
        ),
        "os": _os(root),
        "kernel": kernel.kernel(root, real),
        "cpu": hardware.cpu(root, commands),
        "memory": hardware.memory(root),
        "pci": functions,
        "gpus": gpus,
        "accelerator_tools": pci.vendor_tools(commands, gpus),
        "nics": hardware.with_rdma_firmware(
            hardware.nics(root, commands, names, functions), rdma
        ),
        "rdma": rdma,
        "nvme": controllers,
        "nvme_subsystems": storage.nvme_subsystems(root, commands, controllers),
        "block": storage.block_devices(root),
        "packages": _packages(commands, gpus, real),
        "tools": dict(sorted(commands.status.items())),
    }


def _os(root: Path) -> dict[str, Any] | None:
    fields = key_values(
        read(root, "etc/os-release") or read(root, "usr/lib/os-release")
    )
    if not fields:
        return None
    return {
        "name": fields.get("NAME"),
        "id": fields.get("ID"),
        "version_id": fields.get("VERSION_ID"),
        "version": fields.get("VERSION"),
        "pretty_name": fields.get("PRETTY_NAME"),
    }


def _first_version(text: str | None) -> str | None:
    match = re.search(r"\d+(?:\.\d+)+(?:[-.]\w+)*", text or "")
    return match.group(0) if match else None


def _packages(
    commands: Commands, gpus: list[dict[str, Any]], real: bool
) -> dict[str, Any]:
    versions: dict[str, Any] = {
        "runner_python": platform.python_version() if real else None,
        "glibc": _first_version(os.confstr("CS_GNU_LIBC_VERSION")) if real else None,
        "fio": _first_version(commands.run("fio", "--version")),
        "nvme-cli": _first_version(commands.run("nvme", "version")),
        "bwrap": _first_version(commands.run("bwrap", "--version")),
        "nvidia-driver": next(
            (
                g["driver_version"]
                for g in gpus
                if g["driver_version"] and g.get("vendor") == "NVIDIA"
            ),
            None,
        ),
        "cuda": hardware.cuda_version(commands) if gpus else None,
    }
    dpkg = commands.run(
        "dpkg-query", "-W", "-f", "${Package} ${Version}\n", *DEBIAN_PACKAGES
    )
    for line in (dpkg or "").splitlines():
        name, _, version = line.partition(" ")
        if name in DEBIAN_PACKAGES and version.strip() and not versions.get(name):
            versions[name] = version.strip()
    probe = commands.run(
        "/usr/bin/python3", "-c", _SYSTEM_PYTHON_PROBE, *PYTHON_PACKAGES
    )
    try:
        system = json.loads(probe or "{}")
    except ValueError:
        system = {}
    if isinstance(system, Mapping):
        versions["python"] = system.get("python")
        packages = system.get("packages")
        for name, version in packages.items() if isinstance(packages, Mapping) else ():
            versions[str(name)] = version if isinstance(version, str) else None
    versions.setdefault("python", None)
    return versions
