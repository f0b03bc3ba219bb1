"""Drift of devices: GPUs, NICs, NVMe drives and the NVMe-oF transport."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchmarks.lib.environment.matching import (
    Diff,
    count,
    get,
    same_model,
    same_version,
    text,
    versions,
)


def compare_gpu(
    diff: Diff, field: str, gpu: Mapping[str, Any], captured: Mapping[str, Any]
) -> None:
    have = [g for g in captured.get("gpus") or [] if isinstance(g, Mapping)]
    key, model = get(gpu, "model", "name")
    if model is not None and not any(
        same_model(str(model), str(g.get("model") or "")) for g in have
    ):
        models = ", ".join(sorted({str(g.get("model")) for g in have})) or None
        diff.add(
            f"{field}.{key}",
            model,
            models,
            "accelerator.model",
            f"GPU model {text(model)} "
            + (
                f"not found; this host has {models}"
                if models
                else "not found on this host"
            ),
        )
    count(diff, field, gpu, len(have), "GPU", "accelerator.count")
    key, driver = get(gpu, "driver", "driver_version")
    if driver is not None:
        diff.versions(
            f"{field}.{key}",
            driver,
            [g.get("driver_version") for g in have],
            "GPU driver",
            "accelerator.driver",
        )
    key, firmware = get(gpu, "vbios", "vbios_version", "firmware", "fw")
    if firmware is not None:
        diff.versions(
            f"{field}.{key}",
            firmware,
            [g.get("firmware") for g in have],
            "GPU firmware",
            "accelerator.firmware",
        )
    key, cuda = get(gpu, "cuda", "cuda_version")
    if cuda is not None:
        diff.versions(
            f"{field}.{key}",
            cuda,
            [(captured.get("packages") or {}).get("cuda")],
            "CUDA",
            "cuda",
        )


def compare_nic(
    diff: Diff, field: str, nic: Mapping[str, Any], have: list[Any]
) -> None:
    physical = [n for n in have if isinstance(n, Mapping) and not n.get("virtual")]
    key, driver = get(nic, "driver", "drivers", "ofed")
    matched = physical
    if driver is not None:
        module = str(driver).split()[0].lower()
        matched = [n for n in physical if str(n.get("driver") or "").lower() == module]
        if not physical:
            diff.missing(f"{field}.{key}", driver, "NIC driver")
        elif not matched:
            modules = ", ".join(sorted({str(n.get("driver")) for n in physical}))
            diff.add(
                f"{field}.{key}",
                driver,
                modules,
                "nic.driver",
                f"NIC driver: declared {text(driver)}, this host's NICs use {modules}",
            )
        else:
            wanted = versions(
                str(driver).split(None, 1)[1] if " " in str(driver) else ""
            )
            got = [str(n["driver_version"]) for n in matched if n.get("driver_version")]
            if (
                wanted
                and got
                and not any(
                    same_version(w, g) or same_version(g, w)
                    for w in wanted
                    for g in got
                )
            ):
                diff.add(
                    f"{field}.{key}",
                    driver,
                    ", ".join(sorted(set(got))),
                    "nic.driver",
                    f"NIC driver version: declared {text(driver)}, this host has "
                    f"{', '.join(sorted(set(got)))}",
                )
    key, firmware = get(nic, "firmware", "fw", "firmware_version")
    if firmware is not None and matched:
        diff.versions(
            f"{field}.{key}",
            firmware,
            [str(n.get("firmware") or "").split(" ")[0] for n in matched],
            "NIC firmware",
            "nic.firmware",
        )
    elif firmware is not None:
        diff.missing(f"{field}.{key}", firmware, "NIC firmware")
    if physical:
        named = str(driver).split()[0] if driver is not None else None
        what = f"NIC ({named})" if named else "NIC"
        count(diff, field, nic, len(matched), what, "nic.count")


def compare_nvme(
    diff: Diff, field: str, drive: Mapping[str, Any], have: list[Any]
) -> None:
    key, model = get(drive, "model", "name")
    if model is None:
        return
    matched = [
        d
        for d in have
        if isinstance(d, Mapping) and same_model(str(model), str(d.get("model") or ""))
    ]
    if not matched:
        diff.add(
            f"{field}.{key}",
            model,
            None,
            "nvme.model",
            f"declared NVMe drive {text(model)}; not found on this host",
        )
        return
    count(diff, field, drive, len(matched), "NVMe drive", "nvme.count")
    key, firmware = get(drive, "firmware", "fw", "firmware_rev")
    if firmware is not None:
        diff.versions(
            f"{field}.{key}",
            firmware,
            [d.get("firmware") for d in matched],
            f"NVMe firmware of {text(model)}",
            "nvme.firmware",
        )


def compare_transport(
    diff: Diff, field: str, declared: Any, captured: Mapping[str, Any]
) -> None:
    fabrics = sorted(
        {
            str(d.get("transport"))
            for d in captured.get("nvme") or []
            if isinstance(d, Mapping)
            and d.get("transport")
            and d.get("transport") != "pcie"
        }
    )
    want = str(declared).strip().lower()
    if not fabrics:
        diff.add(
            field,
            declared,
            None,
            "nvmeof.absent",
            f"declared NVMe-oF transport {declared}; no NVMe-oF controller "
            "is connected on this host",
        )
    elif want not in fabrics:
        diff.add(
            field,
            declared,
            ", ".join(fabrics),
            "nvmeof.transport",
            f"NVMe-oF transport: declared {declared}, "
            f"this host uses {', '.join(fabrics)}",
        )
