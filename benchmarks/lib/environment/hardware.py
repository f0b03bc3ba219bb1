"""Hardware facts: CPU, memory, GPUs, NICs, NVMe controllers, block devices.

Each function reads ``root`` (/proc, /sys) first and fills in from a tool when
it is there (lscpu, nvidia-smi, ethtool, lspci, nvme). Missing values are None.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any, Final

from benchmarks.lib.environment.sources import (
    Commands,
    key_values,
    link_name,
    listdir,
    read,
    read_int,
)

GPU_VENDORS: Final = {"0x10de": "NVIDIA", "0x1002": "AMD", "0x8086": "Intel"}
SKIPPED_BLOCK: Final = ("loop", "ram", "zram", "dm-", "md", "sr", "nbd")


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
    return {
        "model": " ".join(model.split()) if model else None,
        "vendor": first.get("vendor_id") or lscpu.get("Vendor ID"),
        "microcode": first.get("microcode"),
        "sockets": len(sockets)
        or _int(lscpu.get("Socket(s)"))
        or (1 if blocks else None),
        "cores": len(cores) or None,
        "threads": len(blocks) or _int(lscpu.get("CPU(s)")),
        "numa_nodes": len(nodes) or None,
    }


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


def _pci(root: Path, address: str) -> dict[str, Any]:
    base = f"sys/bus/pci/devices/{address}"
    return {
        "vendor_id": read(root, f"{base}/vendor"),
        "device_id": read(root, f"{base}/device"),
        "driver": link_name(root, f"{base}/driver"),
    }


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


def gpus(root: Path, commands: Commands, names: dict[str, str]) -> list[dict[str, Any]]:
    found = _nvidia_smi(commands)
    listed = {g["pci_address"] for g in found}
    nvrm = re.search(
        r"Kernel Module\s+(\S+)", read(root, "proc/driver/nvidia/version") or ""
    )
    for address in listdir(root, "sys/bus/pci/devices"):
        pci_class = read(root, f"sys/bus/pci/devices/{address}/class") or ""
        info = _pci(root, address)
        vendor = info["vendor_id"]
        is_gpu = pci_class.startswith("0x0302") or (
            pci_class.startswith("0x0300") and vendor in {"0x10de", "0x1002"}
        )
        if not is_gpu or address.lower() in listed:
            continue
        base = f"sys/bus/pci/devices/{address}"
        found.append(
            {
                "model": names.get(address)
                or f"{GPU_VENDORS.get(vendor or '', vendor)} {info['device_id']}",
                "driver": info["driver"],
                "driver_version": nvrm.group(1)
                if nvrm and vendor == "0x10de"
                else None,
                "firmware": read(root, f"{base}/vbios_version"),
                "memory_bytes": read_int(root, f"{base}/mem_info_vram_total"),
                "pci_address": address,
                "source": "sysfs",
            }
        )
    return found


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


def nics(root: Path, commands: Commands, names: dict[str, str]) -> list[dict[str, Any]]:
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
            }
        )
    return result


def _firmware(text: str | None) -> str | None:
    return None if not text or text.upper() in {"N/A", "NA"} else text


def _ids(root: Path, relative: str) -> str | None:
    vendor, device = read(root, f"{relative}/vendor"), read(root, f"{relative}/device")
    return f"{vendor}:{device}" if vendor and device else None


def nvme(root: Path, commands: Commands) -> list[dict[str, Any]]:
    result = []
    for name in listdir(root, "sys/class/nvme"):
        base = f"sys/class/nvme/{name}"
        result.append(
            {
                "name": name,
                "model": read(root, f"{base}/model"),
                "firmware": read(root, f"{base}/firmware_rev"),
                "transport": read(root, f"{base}/transport"),
                "address": read(root, f"{base}/address"),
                "source": "sysfs",
            }
        )
    if result:
        return result
    return _nvme_list(commands)


def _nvme_list(commands: Commands) -> list[dict[str, Any]]:
    """``nvme list -o json`` (nvme-cli 1.x shape) where /sys/class/nvme is hidden."""
    try:
        doc = json.loads(commands.run("nvme", "list", "-o", "json") or "{}")
    except ValueError:
        return []
    devices = doc.get("Devices") if isinstance(doc, dict) else None
    result = []
    for device in devices if isinstance(devices, list) else []:
        if isinstance(device, dict) and device.get("ModelNumber"):
            result.append(
                {
                    "name": str(device.get("DevicePath", "")).rsplit("/", 1)[-1]
                    or None,
                    "model": str(device["ModelNumber"]).strip(),
                    "firmware": str(device.get("Firmware", "")).strip() or None,
                    "transport": None,
                    "address": None,
                    "source": "nvme-cli",
                }
            )
    return result


def block_devices(root: Path) -> list[dict[str, Any]]:
    result = []
    for name in listdir(root, "sys/block"):
        if name.startswith(SKIPPED_BLOCK):
            continue
        base = f"sys/block/{name}"
        sectors = read_int(root, f"{base}/size")
        scheduler = re.search(r"\[(\S+)\]", read(root, f"{base}/queue/scheduler") or "")
        result.append(
            {
                "name": name,
                "model": read(root, f"{base}/device/model"),
                "size_bytes": sectors * 512 if sectors is not None else None,
                "rotational": read(root, f"{base}/queue/rotational") == "1",
                "scheduler": scheduler.group(1) if scheduler else None,
            }
        )
    return result
