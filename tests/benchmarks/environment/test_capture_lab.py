"""Deep capture: goldens on a fake lab host (domestic accelerators, NVMe-oF
subsystems with two paths, RDMA, a loop device, nvme-cli's two JSON shapes) and
the real capture of this machine checked against what it reads independently.

Regenerate the golden after a deliberate schema change with
``REPROGATE_UPDATE_GOLDENS=1`` set when running this file."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks.lib.environment import capture_environment
from benchmarks.lib.environment.pci import ACCELERATOR_VENDORS
from benchmarks.lib.environment.storage import nvme_cli_subsystems
from tests.benchmarks.environment import fakehost
from tests.benchmarks.environment.fakehost import FakeTools
from tests.benchmarks.environment.fakelab import (
    NQN_RDMA,
    NQN_TCP,
    NVME_CLI_1,
    NVME_CLI_2,
    TOOLS,
    fake_lab_host,
)

GOLDEN = Path(__file__).parent / "goldens" / "lab_host.json"


def _captured(root: Path, **kwargs: Any) -> dict[str, Any]:
    env = capture_environment(root, runner=FakeTools(TOOLS), **kwargs)
    env.pop("captured_at")
    return env


def test_the_fake_lab_host_matches_its_golden(tmp_path: Path) -> None:
    env = _captured(fake_lab_host(tmp_path))

    if os.environ.get("REPROGATE_UPDATE_GOLDENS"):
        GOLDEN.write_text(json.dumps(env, indent=1, sort_keys=True) + "\n")
    assert env == json.loads(GOLDEN.read_text())


def test_every_vendors_accelerator_is_kept_and_nothing_else(tmp_path: Path) -> None:
    env = _captured(fake_lab_host(tmp_path))

    found = {(g["vendor"], g["kind"], g["class"]) for g in env["gpus"]}
    assert found == {
        ("Huawei", "npu", "0x120000"),
        ("Moore Threads", "gpu", "0x030000"),
        ("Hygon", "dcu", "0x038000"),
        ("NVIDIA", "gpu", "0x030200"),
    }  # the BMC's VGA (0x1a03) and the Huawei NIC (class 0x0200) are not
    moore = next(g for g in env["gpus"] if g["vendor"] == "Moore Threads")
    assert (moore["driver"], moore["driver_version"]) == ("mtgpu", "2.7.0")
    nvidia = next(g for g in env["gpus"] if g["vendor"] == "NVIDIA")
    assert nvidia["link"] == {
        "current_speed": "16.0 GT/s PCIe", "current_width": 8,
        "max_speed": "32.0 GT/s PCIe", "max_width": 16,
    }  # fmt: skip
    assert (nvidia["numa_node"], nvidia["iommu_group"]) == (1, 13)
    assert env["accelerator_tools"]["npu-smi"].startswith("+ npu-smi 23.0.3")
    assert env["accelerator_tools"]["hy-smi"] is None
    assert env["tools"]["hy-smi"] == "absent"
    assert "cnmon" not in env["tools"]  # no Cambricon device: its tool is not run


def test_every_pci_function_is_listed_with_its_facts(tmp_path: Path) -> None:
    env = _captured(fake_lab_host(tmp_path))

    addresses = [f["address"] for f in env["pci"]]
    assert addresses == sorted(os.listdir(tmp_path / "sys/bus/pci/devices"))
    nic = next(f for f in env["pci"] if f["address"] == "0000:98:00.0")
    assert (nic["class"], nic["vendor_id"], nic["driver"]) == (
        "0x020700", "0x15b3", "mlx5_core",
    )  # fmt: skip
    bmc = next(f for f in env["pci"] if f["address"] == "0000:03:00.0")
    assert (bmc["numa_node"], bmc["iommu_group"], bmc["link"]["max_width"]) == (
        None, None, None,
    )  # fmt: skip


def test_nvme_of_subsystems_have_their_two_paths(tmp_path: Path) -> None:
    env = _captured(fake_lab_host(tmp_path))

    subsystems = {s["nqn"]: s for s in env["nvme_subsystems"]}
    assert set(subsystems) == {NQN_TCP, NQN_RDMA}
    tcp = subsystems[NQN_TCP]
    assert [(p["controller"], p["transport"], p["state"]) for p in tcp["paths"]] == [
        ("nvme1", "tcp", "live"), ("nvme2", "tcp", "connecting"),
    ]  # fmt: skip
    assert tcp["namespaces"] == ["nvme1n1"]
    assert {p["transport"] for p in subsystems[NQN_RDMA]["paths"]} == {"rdma"}
    nvme1 = next(c for c in env["nvme"] if c["name"] == "nvme1")
    assert (nvme1["address"], nvme1["subsystem_nqn"]) == (
        "traddr=10.0.0.5,trsvcid=4420", NQN_TCP,
    )  # fmt: skip


def test_nvme_cli_2_fills_in_subsystems_sysfs_lacks(tmp_path: Path) -> None:
    env = _captured(fake_lab_host(tmp_path, fabrics_in_sysfs=False))

    assert [(s["name"], s["nqn"], s["source"]) for s in env["nvme_subsystems"]] == [
        ("nvme-subsys1", NQN_TCP, "nvme-cli"),
    ]
    assert [p["address"] for p in env["nvme_subsystems"][0]["paths"]] == [
        "traddr=10.0.0.5,trsvcid=4420,src_addr=10.0.0.9",
        "traddr=10.0.1.5,trsvcid=4420,src_addr=10.0.1.9",
    ]


def test_nvme_cli_1_shape_and_junk() -> None:
    (subsystem,) = nvme_cli_subsystems(NVME_CLI_1)

    assert (subsystem["name"], subsystem["nqn"]) == ("nvme-subsys3", NQN_RDMA)
    assert [p["controller"] for p in subsystem["paths"]] == ["nvme3", "nvme4"]
    assert nvme_cli_subsystems("Failed to scan topology\n") == []
    assert nvme_cli_subsystems('{"Subsystems": [{"Paths": [1]}, "x"]}') == []
    assert nvme_cli_subsystems("warning first\n" + NVME_CLI_2)[0]["nqn"] == NQN_TCP


def test_rdma_loop_and_kernel_tunables(tmp_path: Path) -> None:
    env = _captured(fake_lab_host(tmp_path))

    (hca,) = env["rdma"]
    assert (hca["name"], hca["firmware"], hca["pci_address"]) == (
        "mlx5_0", "28.42.1000", "0000:98:00.0",
    )  # fmt: skip
    assert hca["ports"][0]["rate"] == "400 Gb/sec (4X NDR)"
    loops = [b for b in env["block"] if b["kind"] == "loop"]
    assert [(b["name"], b["backing_file"], b["direct_io"]) for b in loops] == [
        ("loop0", "/srv/scratch0.img", True),
    ]  # the seven detached loop devices are left out
    assert env["kernel"]["cmdline"] == "BOOT_IMAGE=/vmlinuz root=/dev/sda1 iommu=pt"
    assert env["kernel"]["sysctls"]["vm.swappiness"] == "10"
    assert env["kernel"]["sysctls"]["vm.dirty_ratio"] is None
    assert env["kernel"]["thp"] == {"enabled": "madvise", "defrag": "always"}
    assert (env["cpu"]["governor"], env["cpu"]["microcode"]) == (
        "performance", "0x2b000603",
    )  # fmt: skip


def test_the_vendor_table_is_lower_case_hex() -> None:
    assert all(v.startswith("0x") and v == v.lower() for v in ACCELERATOR_VENDORS)
    assert len(ACCELERATOR_VENDORS) == 10


# -- the real capture of this machine --------------------------------------------


def _text(path: str) -> str:
    return Path(path).read_text().strip()


def test_the_real_capture_agrees_with_procfs_and_sysfs() -> None:
    env = capture_environment()

    assert env["kernel"]["cmdline"] == _text("/proc/cmdline")
    assert env["kernel"]["sysctls"]["vm.swappiness"] == _text("/proc/sys/vm/swappiness")
    assert [f["address"] for f in env["pci"]] == sorted(
        os.listdir("/sys/bus/pci/devices")
    )
    for function in env["pci"]:
        base = f"/sys/bus/pci/devices/{function['address']}"
        assert function["vendor_id"] == _text(f"{base}/vendor")
        assert function["class"] == _text(f"{base}/class")
    partitions = {
        line.split()[3]
        for line in _text("/proc/partitions").splitlines()[1:]
        if line.strip() and not line.split()[3][-1].isdigit()
    }
    disks = {b["name"] for b in env["block"]}
    assert {p for p in partitions if not p.startswith(("zram", "ram"))} <= disks
    assert json.loads(json.dumps(env)) == env


@pytest.fixture
def loop_device(tmp_path: Path) -> Iterator[str]:
    if os.geteuid() != 0 or not shutil.which("losetup"):
        pytest.skip("needs root and losetup to attach a loop device")
    image = tmp_path / "scratch.img"
    image.write_bytes(b"\0" * (1 << 20))
    done = subprocess.run(
        ["losetup", "--find", "--show", str(image)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"losetup cannot attach here: {done.stderr.strip()}")
    device = done.stdout.strip()
    try:
        yield device
    finally:
        subprocess.run(["losetup", "-d", device], check=False)


def test_an_attached_loop_device_is_in_the_real_capture(
    loop_device: str, tmp_path: Path
) -> None:
    env = capture_environment()

    name = loop_device.rsplit("/", 1)[-1]
    (entry,) = [b for b in env["block"] if b["name"] == name]
    assert entry["kind"] == "loop"
    assert entry["size_bytes"] == 1 << 20
    assert entry["backing_file"] == str(tmp_path / "scratch.img")
    assert entry["dev"] == f"7:{os.minor(os.stat(loop_device).st_rdev)}"


def test_a_nic_without_ethtool_takes_its_rdma_functions_firmware(
    tmp_path: Path,
) -> None:
    root = fake_lab_host(tmp_path)
    fakehost.link(
        root, "sys/class/net/ibp152s0/device", "../../../bus/pci/devices/0000:98:00.0"
    )

    env = _captured(root)

    (nic,) = env["nics"]
    assert (nic["pci_address"], nic["firmware"]) == ("0000:98:00.0", "28.42.1000")
    assert nic["numa_node"] == 1
