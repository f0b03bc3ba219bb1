"""PCI functions and the accelerators among them, from ``/sys/bus/pci``.

Every function is listed with its class, vendor/device id, driver, PCIe link
(current and maximum speed and width), NUMA node and IOMMU group. An
accelerator is a function of class 0x0302 (3D controller) or 0x12xx
(processing accelerator) from any vendor, or of class 0x03xx (display) or
0x0b40 (co-processor) from a vendor of ``ACCELERATOR_VENDORS``: a BMC's VGA
(class 0x0300, ASPEED 0x1a03) is not one, nor a Huawei NIC (class 0x0200).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Final, NamedTuple

from benchmarks.lib.environment.sources import (
    Commands,
    link_name,
    listdir,
    read,
    read_int,
)


class Vendor(NamedTuple):
    name: str
    kind: str  # its accelerators: "gpu", "npu", "mlu", "dcu", "xpu", "gcu"
    tool: str | None  # the vendor's management CLI, run when installed
    pci_ids: bool  # in pci.ids 2023.04.10 (False: GPUStack's detectors only)


# Vendor ids checked against /usr/share/misc/pci.ids (2023.04.10). Cambricon
# 0xcabc, MetaX 0x9999 and Iluvatar 0x1e3e are not in that list: they come from
# GPUStack's device detectors (gpustack/runtime, Apache-2.0) and are unverified.
ACCELERATOR_VENDORS: Final[dict[str, Vendor]] = {
    "0x10de": Vendor("NVIDIA", "gpu", "nvidia-smi", True),
    "0x1002": Vendor("AMD", "gpu", None, True),
    "0x19e5": Vendor("Huawei", "npu", "npu-smi", True),
    "0xcabc": Vendor("Cambricon", "mlu", "cnmon", False),
    "0x1ed5": Vendor("Moore Threads", "gpu", "mthreads-gmi", True),
    "0x1d94": Vendor("Hygon", "dcu", "hy-smi", True),
    "0x9999": Vendor("MetaX", "gpu", "mx-smi", False),
    "0x1e3e": Vendor("Iluvatar", "gpu", "ixsmi", False),
    "0x1d22": Vendor("Kunlunxin", "xpu", None, True),
    "0x1e36": Vendor("Enflame", "gcu", None, True),
}
# How each vendor tool is asked for a summary (run only when the vendor's
# device is on the bus; time-bounded like every command; output kept short).
VENDOR_TOOL_ARGS: Final[dict[str, tuple[str, ...]]] = {
    "npu-smi": ("info",),
    "cnmon": ("info",),
    "mthreads-gmi": ("-q",),
    "hy-smi": ("--showdriverversion", "--showproductname"),
    "mx-smi": (),
    "ixsmi": ("-q",),
}
TOOL_OUTPUT_CHARS: Final = 4096
ANY_VENDOR_CLASSES: Final = ("0x0302", "0x12")
TABLE_VENDOR_CLASSES: Final = ("0x03", "0x0b40")


def pci_functions(root: Path, names: dict[str, str]) -> list[dict[str, Any]]:
    """Every PCI function on the bus, sorted by address."""
    return [_function(root, a, names) for a in listdir(root, "sys/bus/pci/devices")]


def _function(root: Path, address: str, names: dict[str, str]) -> dict[str, Any]:
    base = f"sys/bus/pci/devices/{address}"
    numa = read_int(root, f"{base}/numa_node")
    return {
        "address": address,
        "class": read(root, f"{base}/class"),
        "vendor_id": read(root, f"{base}/vendor"),
        "device_id": read(root, f"{base}/device"),
        "subsystem_vendor_id": read(root, f"{base}/subsystem_vendor"),
        "subsystem_device_id": read(root, f"{base}/subsystem_device"),
        "revision": read(root, f"{base}/revision"),
        "name": names.get(address),
        "driver": link_name(root, f"{base}/driver"),
        "numa_node": numa if numa is not None and numa >= 0 else None,
        "iommu_group": _int_or_none(link_name(root, f"{base}/iommu_group")),
        "link": {
            "current_speed": read(root, f"{base}/current_link_speed"),
            "current_width": read_int(root, f"{base}/current_link_width"),
            "max_speed": read(root, f"{base}/max_link_speed"),
            "max_width": read_int(root, f"{base}/max_link_width"),
        },
    }


def _int_or_none(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None


def is_accelerator(function: dict[str, Any]) -> bool:
    pci_class = str(function.get("class") or "").lower()
    if pci_class.startswith(ANY_VENDOR_CLASSES):
        return True
    vendor = str(function.get("vendor_id") or "").lower()
    return vendor in ACCELERATOR_VENDORS and pci_class.startswith(TABLE_VENDOR_CLASSES)


def accelerators(
    root: Path, functions: list[dict[str, Any]], listed: set[str]
) -> list[dict[str, Any]]:
    """The accelerators among ``functions`` not already ``listed`` by a tool."""
    nvrm = re.search(
        r"Kernel Module\s+(\S+)", read(root, "proc/driver/nvidia/version") or ""
    )
    found = []
    for function in functions:
        if not is_accelerator(function) or function["address"].lower() in listed:
            continue
        vendor_id = str(function["vendor_id"] or "").lower()
        vendor = ACCELERATOR_VENDORS.get(vendor_id)
        base = f"sys/bus/pci/devices/{function['address']}"
        driver = function["driver"]
        driver_version = (
            nvrm.group(1)
            if nvrm and vendor_id == "0x10de"
            else read(root, f"sys/module/{driver}/version")
            if driver
            else None
        )
        found.append(
            {
                "model": function["name"]
                or f"{vendor.name if vendor else vendor_id} {function['device_id']}",
                "vendor": vendor.name if vendor else None,
                "kind": vendor.kind if vendor else "accelerator",
                "vendor_id": function["vendor_id"],
                "device_id": function["device_id"],
                "class": function["class"],
                "driver": driver,
                "driver_version": driver_version,
                "firmware": read(root, f"{base}/vbios_version"),
                "memory_bytes": read_int(root, f"{base}/mem_info_vram_total"),
                "pci_address": function["address"],
                "numa_node": function["numa_node"],
                "iommu_group": function["iommu_group"],
                "link": function["link"],
                "source": "sysfs",
            }
        )
    return found


def vendor_tools(
    commands: Commands, accelerators: list[dict[str, Any]]
) -> dict[str, str | None]:
    """Each present vendor's tool (not nvidia-smi, queried apart): its summary,
    or None when it is absent, failed or timed out (``tools`` says which)."""
    result: dict[str, str | None] = {}
    for vendor_id in sorted({str(a.get("vendor_id") or "") for a in accelerators}):
        vendor = ACCELERATOR_VENDORS.get(vendor_id)
        if vendor is None or vendor.tool is None or vendor.tool == "nvidia-smi":
            continue
        output = commands.run(vendor.tool, *VENDOR_TOOL_ARGS.get(vendor.tool, ()))
        result[vendor.tool] = output[:TOOL_OUTPUT_CHARS] if output else None
    return result
