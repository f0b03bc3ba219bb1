"""NVMe controllers, subsystems and namespaces, and block devices.

``/sys/class/nvme`` and ``/sys/class/nvme-subsystem`` first; ``nvme list-subsys
-o json`` fills in the subsystems where sysfs has none (both nvme-cli shapes:
1.x ``{"Subsystems": [{"Name", "NQN"}, {"Paths": […]}]}`` and 2.x ``[{"HostNQN",
"Subsystems": [{"Name", "NQN", "Paths": […]}]}]``), and ``nvme list -o json``
the controllers where ``/sys/class/nvme`` is hidden. Loop, NBD, device-mapper
and MD devices are listed like disks (a lab's test device is often one);
detached loop and NBD devices (size 0) are not.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Final

from benchmarks.lib.environment.sources import (
    Commands,
    link_name,
    listdir,
    read,
    read_int,
)

SKIPPED_BLOCK: Final = ("ram", "zram", "sr")
PCI_ADDRESS = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.\d$")


def nvme(root: Path, commands: Commands) -> list[dict[str, Any]]:
    """NVMe controllers (one per path of a multipath subsystem)."""
    result = []
    for name in listdir(root, "sys/class/nvme"):
        base = f"sys/class/nvme/{name}"
        address = read(root, f"{base}/address")
        result.append(
            {
                "name": name,
                "model": read(root, f"{base}/model"),
                "serial": read(root, f"{base}/serial"),
                "firmware": read(root, f"{base}/firmware_rev"),
                "transport": read(root, f"{base}/transport"),
                "address": address,
                "state": read(root, f"{base}/state"),
                "subsystem_nqn": read(root, f"{base}/subsysnqn"),
                "cntlid": read_int(root, f"{base}/cntlid"),
                "numa_node": _node(read_int(root, f"{base}/numa_node")),
                "pci_address": address
                if address and PCI_ADDRESS.match(address)
                else None,
                "source": "sysfs",
            }
        )
    return result or _nvme_list(commands)


def _node(value: int | None) -> int | None:
    return value if value is not None and value >= 0 else None


def _nvme_list(commands: Commands) -> list[dict[str, Any]]:
    """``nvme list -o json`` where /sys/class/nvme is hidden (1.x: ``Devices``
    of namespaces with ``ModelNumber``; 2.x ``-v``-less: the same key)."""
    doc = _json(commands.run("nvme", "list", "-o", "json"))
    devices = doc.get("Devices") if isinstance(doc, dict) else None
    result = []
    for device in devices if isinstance(devices, list) else []:
        if isinstance(device, dict) and device.get("ModelNumber"):
            result.append(
                {
                    "name": str(device.get("DevicePath", "")).rsplit("/", 1)[-1]
                    or None,
                    "model": str(device["ModelNumber"]).strip(),
                    "serial": str(device.get("SerialNumber", "")).strip() or None,
                    "firmware": str(device.get("Firmware", "")).strip() or None,
                    "transport": None,
                    "address": None,
                    "state": None,
                    "subsystem_nqn": None,
                    "cntlid": None,
                    "numa_node": None,
                    "pci_address": None,
                    "source": "nvme-cli",
                }
            )
    return result


def _json(text: str | None) -> Any:
    if not text:
        return None
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    try:
        return json.loads(text[start:]) if start >= 0 else None
    except ValueError:
        return None


def nvme_subsystems(
    root: Path, commands: Commands, controllers: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """NVMe subsystems with their paths (controllers) and namespaces."""
    by_name = {c["name"]: c for c in controllers}
    result = []
    for name in listdir(root, "sys/class/nvme-subsystem"):
        base = f"sys/class/nvme-subsystem/{name}"
        entries = listdir(root, base)
        paths = [
            _path(by_name.get(e) or {"name": e})
            for e in entries
            if re.match(r"nvme\d+$", e)
        ]
        result.append(
            {
                "name": name,
                "nqn": read(root, f"{base}/subsysnqn"),
                "model": read(root, f"{base}/model"),
                "firmware": read(root, f"{base}/firmware_rev"),
                "iopolicy": read(root, f"{base}/iopolicy"),
                "paths": paths,
                "namespaces": [e for e in entries if re.match(r"nvme\d+n\d+$", e)],
                "source": "sysfs",
            }
        )
    if result:
        return result
    return nvme_cli_subsystems(commands.run("nvme", "list-subsys", "-o", "json"))


def _path(controller: dict[str, Any]) -> dict[str, Any]:
    return {
        "controller": controller.get("name"),
        "transport": controller.get("transport"),
        "address": controller.get("address"),
        "state": controller.get("state"),
    }


def nvme_cli_subsystems(text: str | None) -> list[dict[str, Any]]:
    """Subsystems from ``nvme list-subsys -o json``, either nvme-cli shape."""
    doc = _json(text)
    hosts = doc if isinstance(doc, list) else [doc] if isinstance(doc, dict) else []
    result: list[dict[str, Any]] = []
    for host in hosts:
        entries = host.get("Subsystems") if isinstance(host, dict) else None
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, dict):
                continue
            if entry.get("Name") or entry.get("NQN"):
                result.append(
                    {
                        "name": entry.get("Name"),
                        "nqn": entry.get("NQN"),
                        "model": None,
                        "firmware": None,
                        "iopolicy": entry.get("IOPolicy"),
                        "paths": [],
                        "namespaces": [],
                        "source": "nvme-cli",
                    }
                )
            if isinstance(entry.get("Paths"), list) and result:
                result[-1]["paths"].extend(
                    {
                        "controller": p.get("Name"),
                        "transport": p.get("Transport"),
                        "address": p.get("Address"),
                        "state": p.get("State"),
                    }
                    for p in entry["Paths"]
                    if isinstance(p, dict)
                )
    return result


def block_devices(root: Path) -> list[dict[str, Any]]:
    result = []
    for name in listdir(root, "sys/block"):
        if name.startswith(SKIPPED_BLOCK):
            continue
        base = f"sys/block/{name}"
        sectors = read_int(root, f"{base}/size")
        kind = _kind(name)
        if kind in {"loop", "nbd"} and not sectors:
            continue  # detached
        scheduler = re.search(r"\[(\S+)\]", read(root, f"{base}/queue/scheduler") or "")
        result.append(
            {
                "name": name,
                "kind": kind,
                "dev": read(root, f"{base}/dev"),
                "model": read(root, f"{base}/device/model"),
                "size_bytes": sectors * 512 if sectors is not None else None,
                "rotational": read(root, f"{base}/queue/rotational") == "1",
                "read_only": read(root, f"{base}/ro") == "1",
                "logical_block_size": read_int(
                    root, f"{base}/queue/logical_block_size"
                ),
                "scheduler": scheduler.group(1) if scheduler else None,
                "backing_file": read(root, f"{base}/loop/backing_file"),
                "direct_io": _flag(read(root, f"{base}/loop/dio")),
                "dm_name": read(root, f"{base}/dm/name"),
                "holders": listdir(root, f"{base}/holders"),
                "slaves": listdir(root, f"{base}/slaves"),
                "driver": link_name(root, f"{base}/device/driver"),
            }
        )
    return result


def _kind(name: str) -> str:
    for prefix, kind in (
        ("loop", "loop"),
        ("nbd", "nbd"),
        ("dm-", "dm"),
        ("md", "md"),
        ("nvme", "nvme"),
        ("vd", "virtio"),
        ("sd", "scsi"),
    ):
        if name.startswith(prefix):
            return kind
    return "other"


def _flag(text: str | None) -> bool | None:
    return None if text is None else text == "1"
