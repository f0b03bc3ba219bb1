"""environment_drift: what differs from the bundle's manifest, and how much.
Captures come from the fake GPU client host; manifests are the examples'."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.lib.environment import (
    Drift,
    capture_environment,
    drift_counts,
    environment_drift,
)
from benchmarks.lib.environment.matching import same_model, same_version
from tests.benchmarks.environment.fakehost import TOOLS, FakeTools, fake_host

MANIFESTS = Path(__file__).parent / "manifests"


def manifest(name: str = "acme-flash") -> dict[str, Any]:
    return json.loads((MANIFESTS / f"{name}.json").read_text())


def capture(
    tmp_path: Path, tools: FakeTools | None = None, **host: Any
) -> dict[str, Any]:
    root = fake_host(tmp_path / "root", **host)
    return capture_environment(root, runner=tools or FakeTools())


def by_field(drifts: list[Drift]) -> dict[str, Drift]:
    return {d.field: d for d in drifts}


def test_matching_host_has_no_major_or_minor_drift(tmp_path: Path) -> None:
    drifts = environment_drift(capture(tmp_path), manifest())

    assert [d for d in drifts if d.severity != "info"] == []
    fields = by_field(drifts)
    assert fields["hosts.storage_target"].message.endswith("not compared")
    assert "hosts.gpu.gpu.driver" not in fields
    assert set(fields) == {"hosts.storage_target", "packages.nvme-cli"}


def test_other_vendors_manifest_shows_major_drift(tmp_path: Path) -> None:
    drifts = by_field(environment_drift(capture(tmp_path), manifest("bolt-storage")))

    major = {f for f, d in drifts.items() if d.severity == "major"}
    assert major == {
        "hosts.gpu.os", "hosts.gpu.kernel", "hosts.gpu.gpu.driver",
        "hosts.gpu.nics[0].driver", "nvmeof.transport",
    }  # fmt: skip
    assert drifts["hosts.gpu.kernel"].declared == "6.8.0-45-generic"
    assert drifts["hosts.gpu.kernel"].captured == "5.15.0-125-generic"
    assert drifts["hosts.gpu.local_nvme[0].model"].severity == "info"
    assert drifts["packages.fio"].severity == "minor"


def test_results_come_most_severe_first(tmp_path: Path) -> None:
    drifts = environment_drift(capture(tmp_path), manifest("bolt-storage"))

    order = [d.severity for d in drifts]
    assert order == sorted(order, key=["major", "minor", "info"].index)
    assert drift_counts(drifts)["major"] == 5


@pytest.mark.parametrize(
    ("os_release", "severity"),
    [
        ('NAME="Ubuntu"\nID=ubuntu\nVERSION="22.04.3 LTS (Jammy)"\n'
         'PRETTY_NAME="Ubuntu 22.04.3 LTS"\n', "minor"),
        ('NAME="Ubuntu"\nID=ubuntu\nVERSION="24.04.1 LTS"\n'
         'PRETTY_NAME="Ubuntu 24.04.1 LTS"\n', "major"),
        ('NAME="Debian GNU/Linux"\nID=debian\nVERSION="12 (bookworm)"\n'
         'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n', "major"),
    ],
)  # fmt: skip
def test_os_point_release_is_minor_other_release_major(
    tmp_path: Path, os_release: str, severity: str
) -> None:
    drifts = by_field(
        environment_drift(capture(tmp_path, os_release=os_release), manifest())
    )

    assert drifts["hosts.gpu.os"].severity == severity


def test_kernel_mismatch_is_major_and_prefix_matches(tmp_path: Path) -> None:
    captured = capture(tmp_path, kernel="5.15.0-126-generic")
    declared = manifest()

    assert by_field(environment_drift(captured, declared))[
        "hosts.gpu.kernel"
    ].severity == ("major")
    declared["hosts"]["gpu"]["kernel"] = "5.15"
    assert "hosts.gpu.kernel" not in by_field(environment_drift(captured, declared))


def test_microcode_is_minor_and_compared_as_a_number(tmp_path: Path) -> None:
    declared = manifest()
    declared["hosts"]["gpu"]["cpu"]["microcode"] = "0x0A101148"

    assert "hosts.gpu.cpu.microcode" not in by_field(
        environment_drift(capture(tmp_path), declared)
    )
    changed = capture(tmp_path / "b", microcode="0xa10114a")
    other = by_field(environment_drift(changed, manifest()))
    assert other["hosts.gpu.cpu.microcode"].severity == "minor"


def test_gpu_firmware_cuda_and_count(tmp_path: Path) -> None:
    declared = manifest()
    declared["hosts"]["gpu"]["gpu"].update(vbios="96.00.AA.00.01", cuda="12.6", count=4)

    drifts = by_field(environment_drift(capture(tmp_path), declared))

    vbios = drifts["hosts.gpu.gpu.vbios"]
    assert (vbios.severity, vbios.rule) == ("minor", "accelerator.firmware.patch")
    assert drifts["hosts.gpu.gpu.cuda"].severity == "minor"
    count = drifts["hosts.gpu.gpu.count"]
    assert (count.severity, count.rule, count.captured) == (
        "major", "accelerator.count", "8",
    )  # fmt: skip


def test_nic_driver_version_is_major_firmware_minor_by_level(tmp_path: Path) -> None:
    declared = manifest()
    nic = declared["hosts"]["gpu"]["nics"][0]
    nic.update(driver="mlx5_core (MLNX_OFED 23.10-1.1.9.0)", firmware="28.39.1002")

    drifts = by_field(environment_drift(capture(tmp_path), declared))

    assert drifts["hosts.gpu.nics[0].driver"].severity == "major"
    assert drifts["hosts.gpu.nics[0].driver"].captured == "24.07-0.6.1"
    firmware = drifts["hosts.gpu.nics[0].firmware"]  # 28.42 -> 28.39: minor
    assert (firmware.severity, firmware.rule) == ("minor", "nic.firmware.minor")


def test_nvme_firmware_of_the_same_model_is_major(tmp_path: Path) -> None:
    drifts = by_field(
        environment_drift(capture(tmp_path, nvme_firmware="GDC7502Q"), manifest())
    )

    drift = drifts["hosts.gpu.local_nvme[0].firmware"]
    assert (drift.severity, drift.declared, drift.captured) == (
        "major",
        "GDC7302Q",
        "GDC7502Q",
    )


def test_transport_mismatch_is_major_absent_fabric_is_info(tmp_path: Path) -> None:
    tcp = by_field(
        environment_drift(capture(tmp_path, fabric_transport="tcp"), manifest())
    )
    none = by_field(
        environment_drift(capture(tmp_path / "b", fabric_transport=None), manifest())
    )

    assert tcp["nvmeof.transport"].severity == "major"
    assert none["nvmeof.transport"].severity == "info"


def test_host_without_the_declared_hardware_reports_info(tmp_path: Path) -> None:
    no_gpu_tools = FakeTools({k: v for k, v in TOOLS.items() if "nvidia" not in k})
    captured = capture(tmp_path, tools=no_gpu_tools, gpus=0)

    drifts = by_field(environment_drift(captured, manifest()))

    assert drifts["hosts.gpu.gpu.count"].captured == "0"
    assert drifts["hosts.gpu.gpu.vbios"].severity == "info"
    assert "not found on this host" in drifts["hosts.gpu.gpu.vbios"].message


def test_flat_manifest_and_host_list_with_roles(tmp_path: Path) -> None:
    captured = capture(tmp_path)
    flat = {"OS": "Ubuntu 22.04.5", "Kernel-Release": "5.15.0-99-generic",
            "packages": {"FIO": "3.37"}}  # fmt: skip
    listed = {"hosts": [{"role": "storage target", "kernel": "6.1"},
                        {"role": "client", "kernel": "5.15.0-99-generic"}]}  # fmt: skip

    flat_drifts = by_field(environment_drift(captured, flat))
    listed_drifts = by_field(environment_drift(captured, listed))

    assert set(flat_drifts) == {"Kernel-Release"}
    assert listed_drifts["hosts.client.kernel"].severity == "major"
    assert listed_drifts["hosts.storage target"].severity == "info"


@pytest.mark.parametrize(
    "declared",
    [[], "text", {"hosts": []}, {"hosts": {"gpu": "x"}}, {"hosts": {"gpu": {"cpu": 3,
     "gpu": [1, None], "nics": "x", "local_nvme": [{"count": 2}]}}}, {"nvmeof": 4}],
)  # fmt: skip
def test_odd_manifests_never_crash(tmp_path: Path, declared: Any) -> None:
    drifts = environment_drift(capture(tmp_path), declared)

    assert all(d.severity in {"major", "minor", "info"} for d in drifts)
    assert all(isinstance(d.as_dict(), dict) for d in drifts)


def test_odd_captures_never_crash() -> None:
    declared = manifest()
    junk = {"os": "x", "kernel": None, "cpu": [], "gpus": [3], "nics": {"a": 1},
            "nvme": None, "packages": "x"}  # fmt: skip

    drifts = environment_drift(copy.deepcopy(junk), declared)

    assert {d.severity for d in drifts} <= {"info", "major"}


@pytest.mark.parametrize(
    ("declared", "captured", "same"),
    [("5.15", "5.15.0-125-generic", True), ("5.15.0", "5.15.01", False),
     ("550.127.05", "550.127.05", True), ("3.3", "3.37", False), ("a", "a.b", True)],
)  # fmt: skip
def test_same_version(declared: str, captured: str, same: bool) -> None:
    assert same_version(declared, captured) is same


@pytest.mark.parametrize(
    ("declared", "captured", "same"),
    [("AMD EPYC 9454 48-Core", "AMD EPYC 9454 48-Core Processor", True),
     ("AMD EPYC 9454 48-Core", "AMD EPYC", False),
     ("Samsung PM9A3 3.84TB", "SAMSUNG MZQL23T8HCLS-00A07 PM9A3 3.84TB", True),
     ("NVIDIA H100 80GB HBM3", "NVIDIA A100 80GB", False)],
)  # fmt: skip
def test_same_model(declared: str, captured: str, same: bool) -> None:
    assert same_model(declared, captured) is same
