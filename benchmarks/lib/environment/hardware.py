"""Hardware facts: CPU, memory, GPUs, NICs, NVMe controllers, block devices.

Each function reads ``root`` (/proc, /sys) first and fills in from a tool when
it is there (lscpu, nvidia-smi, ethtool, lspci, nvme). Missing values are None.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchmarks.lib.environment import pci
from benchmarks.lib.environment.sources import (
    Commands,
    key_values,
    link_name,
    listdir,
    read,
    read_int,
)


def cpu(root: Path, commands: Commands) -> dict[str, Any]:
    blocks = [
        key_values(b, ":") for b in (read(root, "proc/cpuinfo") or "").split("\n\n")
    ]
    blocks = [b for b in blocks if "processor" in b]
    first = blocks[0] if blocks else {}
    sockets = {b.get("physical id") for b in blocks if "physical id" in b}
    cores = {(b.get("physical id"), b.get("core id")) for b in blocks if "core id" in b}
    lscpu = key_values(commands.run("lscpu"), ":")
    model = first.get("model name") or lscpu.get("Model name")
    nodes = [
        n for n in listdir(root, "sys/devices/system/node") if re.match(r"node\d+$", n)
    ]
    cpus = [
        c for c in listdir(root, "sys/devices/system/cpu") if re.match(r"cpu\d+$", c)
    ]
    return {
        "model": " ".join(model.split()) if model else None,
        "vendor": first.get("vendor_id") or lscpu.get("Vendor ID"),
        "microcode": first.get("microcode")
        or read(root, "sys/devices/system/cpu/cpu0/microcode/version"),
        "sockets": len(sockets)
        or _int(lscpu.get("Socket(s)"))
        or (1 if blocks else None),
        "cores": len(cores) or None,
        "threads": len(blocks) or _int(lscpu.get("CPU(s)")),
        "numa_nodes": len(nodes) or None,
        "governor": _one_or_many(
            read(root, f"sys/devices/system/cpu/{c}/cpufreq/scaling_governor")
            for c in cpus
        ),
        "scaling_driver": read(
            root, "sys/devices/system/cpu/cpufreq/policy0/scaling_driver"
        )
        or read(root, "sys/devices/system/cpu/cpu0/cpufreq/scaling_driver"),
    }


def _one_or_many(values: Iterable[str | None]) -> str | None:
    """One value when every CPU agrees, else the distinct values joined."""
    distinct = sorted({v for v in values if v})
    return ",".join(distinct) or None


def memory(root: Path) -> dict[str, Any]:
    info = key_values(read(root, "proc/meminfo"), ":")

    def kib(key: str) -> int | None:
        value = _int(info.get(key, "").split(" ")[0])
        return value * 1024 if value is not None else None

    return {
        "total_bytes": kib("MemTotal"),
        "hugepages_total": _int(info.get("HugePages_Total")),
        "hugepage_size_bytes": kib("Hugepagesize"),
    }


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text not in (None, "") else None
    except ValueError:
        return None


def lspci_names(commands: Commands) -> dict[str, str]:
    """PCI address -> "vendor device" names from ``lspci -mm -D``."""
    names = {}
    for line in (commands.run("lspci", "-mm", "-D") or "").splitlines():
        try:
            parts = shlex.split(line)
        except ValueError:
            continue
        if len(parts) >= 4:
            names[parts[0]] = f"{parts[2]} {parts[3]}"
    return names


def gpus(
    root: Path, commands: Commands, functions: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Accelerators of every vendor: NVIDIA's from nvidia-smi when it answers
    (with the PCI facts of their functions), the rest from sysfs."""
    by_address = {f["address"].lower(): f for f in functions}
    found = _nvidia_smi(commands)
    for gpu in found:
        function = by_address.get(gpu["pci_address"], {})
        gpu.update(
            vendor="NVIDIA",
            kind="gpu",
            vendor_id=function.get("vendor_id", "0x10de"),
            device_id=function.get("device_id"),
            **{"class": function.get("class")},
            numa_node=function.get("numa_node"),
            iommu_group=function.get("iommu_group"),
            link=function.get("link"),
        )
    listed = {g["pci_address"] for g in found}
    return found + pci.accelerators(root, functions, listed)


def _nvidia_smi(commands: Commands) -> list[dict[str, Any]]:
    fields = "name,driver_version,vbios_version,memory.total,pci.bus_id"
    out = commands.run(
        "nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits"
    )
    result = []
    for line in (out or "").splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 5 or not parts[0]:
            continue
        mib = _int(parts[3])
        bus = parts[4].lower()
        address = bus[4:] if len(bus) == 16 else bus  # 00000000:18:00.0 -> 0000:18:00.0
        result.append(
            {
                "model": parts[0],
                "driver": "nvidia",
                "driver_version": parts[1] or None,
                "firmware": parts[2] or None,
                "memory_bytes": mib * 1024 * 1024 if mib is not None else None,
                "pci_address": address,
                "source": "nvidia-smi",
            }
        )
    return result


def cuda_version(commands: Commands) -> str | None:
    """The CUDA version the NVIDIA driver supports (``nvidia-smi`` header)."""
    match = re.search(r"CUDA Version:\s*([\d.]+)", commands.run("nvidia-smi") or "")
    return match.group(1) if match else None


def nics(
    root: Path, commands: Commands, names: dict[str, str], functions: list[Any]
) -> list[dict[str, Any]]:
    by_address = {f["address"]: f for f in functions}
    result = []
    for name in listdir(root, "sys/class/net"):
        if name == "lo":
            continue
        base = f"sys/class/net/{name}"
        device = link_name(root, f"{base}/device")
        ethtool = key_values(commands.run("ethtool", "-i", name), ":")
        bus = ethtool.get("bus-info") or device
        pci = bus if bus and re.match(r"[0-9a-f]{4}:[0-9a-f]{2}:", bus) else None
        speed = read_int(root, f"{base}/speed")
        result.append(
            {
                "name": name,
                "virtual": device is None,
                "driver": link_name(root, f"{base}/device/driver")
                or ethtool.get("driver"),
                "driver_version": ethtool.get("version") or None,
                "firmware": _firmware(ethtool.get("firmware-version")),
                "model": names.get(pci or "") or _ids(root, f"{base}/device"),
                "pci_address": pci,
                "speed_mbps": speed if speed is not None and speed > 0 else None,
                "mtu": read_int(root, f"{base}/mtu"),
                "state": read(root, f"{base}/operstate"),
                "numa_node": by_address.get(pci or "", {}).get("numa_node"),
                "link": by_address.get(pci or "", {}).get("link"),
            }
        )
    return result


def _firmware(text: str | None) -> str | None:
    return None if not text or text.upper() in {"N/A", "NA"} else text


def _ids(root: Path, relative: str) -> str | None:
    vendor, device = read(root, f"{relative}/vendor"), read(root, f"{relative}/device")
    return f"{vendor}:{device}" if vendor and device else None


def rdma(root: Path) -> list[dict[str, Any]]:
    """RDMA devices (``/sys/class/infiniband``) with firmware and ports."""
    result = []
    for name in listdir(root, "sys/class/infiniband"):
        base = f"sys/class/infiniband/{name}"
        device = link_name(root, f"{base}/device")
        ports = []
        for port in listdir(root, f"{base}/ports"):
            pbase = f"{base}/ports/{port}"
            ports.append(
                {
                    "port": _int(port),
                    "state": read(root, f"{pbase}/state"),
                    "phys_state": read(root, f"{pbase}/phys_state"),
                    "rate": read(root, f"{pbase}/rate"),
                    "link_layer": read(root, f"{pbase}/link_layer"),
                }
            )
        result.append(
            {
                "name": name,
                "firmware": read(root, f"{base}/fw_ver"),
                "hca_type": read(root, f"{base}/hca_type"),
                "board_id": read(root, f"{base}/board_id"),
                "node_type": read(root, f"{base}/node_type"),
                "node_guid": read(root, f"{base}/node_guid"),
                "driver": link_name(root, f"{base}/device/driver"),
                "pci_address": device
                if device and re.match(r"[0-9a-f]{4}:[0-9a-f]{2}:", device)
                else None,
                "netdevs": listdir(root, f"{base}/device/net"),
                "ports": ports,
            }
        )
    return result


def with_rdma_firmware(
    nics: list[dict[str, Any]], rdma: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """NICs whose firmware ethtool did not give take their RDMA function's
    (``fw_ver``: one firmware per PCI function, e.g. a ConnectX port)."""
    firmware = {d["pci_address"]: d["firmware"] for d in rdma if d["pci_address"]}
    for nic in nics:
        if not nic["firmware"] and nic["pci_address"] in firmware:
            nic["firmware"] = firmware[nic["pci_address"]]
    return nics
