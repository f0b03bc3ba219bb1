"""capture_environment on fake trees (with and without tools) and on this host."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path

import pytest

from benchmarks.lib.environment import SCHEMA, capture_environment
from tests.benchmarks.environment.fakehost import TOOLS, FakeTools, fake_host, write


@pytest.fixture
def host(tmp_path: Path) -> Path:
    return fake_host(tmp_path / "root")


def test_fake_tree_without_tools_reads_proc_sys_and_etc(host: Path) -> None:
    env = capture_environment(host)

    assert env["schema"] == SCHEMA
    assert env["os"]["pretty_name"] == "Ubuntu 22.04.5 LTS"
    assert env["os"]["id"] == "ubuntu"
    assert (env["kernel"]["release"], env["kernel"]["version"]) == (
        "5.15.0-125-generic",
        "#135-Ubuntu SMP",
    )
    assert env["kernel"]["machine"] == "x86_64"
    assert env["kernel"]["cmdline"] is None  # the fake tree has none
    assert set(env["kernel"]["sysctls"].values()) == {None}
    assert env["hostname"] == "gpu-07"
    assert env["cpu"] == {
        "model": "AMD EPYC 9454 48-Core Processor",
        "vendor": "AuthenticAMD",
        "microcode": "0xa101148",
        "sockets": 2,
        "cores": 4,
        "threads": 4,
        "numa_nodes": 2,
        "governor": None,
        "scaling_driver": None,
    }
    assert env["memory"]["total_bytes"] == 2113470000 * 1024
    assert env["memory"]["hugepage_size_bytes"] == 2 << 20
    assert set(env["tools"].values()) == {"not run"}


def test_fake_tree_devices_from_sysfs(host: Path) -> None:
    env = capture_environment(host)

    assert len(env["gpus"]) == 8  # the BMC's VGA device is not a GPU
    gpu = env["gpus"][0]
    assert {k: gpu[k] for k in ("model", "vendor", "kind", "driver")} == {
        "model": "NVIDIA 0x2330",
        "vendor": "NVIDIA",
        "kind": "gpu",
        "driver": "nvidia",
    }
    assert (gpu["driver_version"], gpu["pci_address"], gpu["source"]) == (
        "550.127.05",
        "0000:18:00.0",
        "sysfs",
    )
    assert len(env["pci"]) == 10  # 8 GPUs, the BMC's VGA and the NIC
    physical = [n for n in env["nics"] if not n["virtual"]]
    assert [n["name"] for n in physical] == ["ens1f0np0", "ens1f1np1"]
    assert physical[0]["driver"] == "mlx5_core"
    assert physical[0]["speed_mbps"] == 200000
    assert [n["name"] for n in env["nics"] if n["virtual"]] == ["docker0"]
    assert [(d["name"], d["transport"]) for d in env["nvme"]] == [
        ("nvme0", "pcie"), ("nvme1", "pcie"), ("nvme2", "rdma"),
    ]  # fmt: skip
    assert env["nvme"][0]["firmware"] == "GDC7302Q"
    # the detached loop0 (size 0) is left out
    assert [(b["name"], b["kind"], b["size_bytes"]) for b in env["block"]] == [
        ("nvme0n1", "nvme", 7501476528 * 512),
    ]
    assert (env["block"][0]["rotational"], env["block"][0]["scheduler"]) == (
        False,
        "none",
    )


def test_tools_fill_in_names_versions_and_firmware(host: Path) -> None:
    tools = FakeTools(slow=["lscpu"])

    env = capture_environment(host, runner=tools)

    gpu = env["gpus"][0]
    assert (gpu["model"], gpu["firmware"], gpu["source"]) == (
        "NVIDIA H100 80GB HBM3", "96.00.99.00.01", "nvidia-smi",
    )  # fmt: skip
    assert gpu["memory_bytes"] == 81559 << 20
    assert len(env["gpus"]) == 8  # nvidia-smi and sysfs entries are not doubled
    nic = next(n for n in env["nics"] if n["name"] == "ens1f0np0")
    assert nic["firmware"] == "28.42.1000 (MT_0000000838)"
    assert nic["driver_version"] == "24.07-0.6.1"
    assert nic["model"] == "Mellanox Technologies MT2910 Family [ConnectX-7]"
    assert env["packages"]["cuda"] == "12.4"
    assert env["packages"]["nvidia-driver"] == "550.127.05"
    assert env["packages"]["fio"] == "3.37"
    assert env["packages"]["rdma-core"] == "50.0-2ubuntu1"
    assert env["packages"]["python"] == "3.10.12"
    assert env["packages"]["vllm"] == "0.6.3"
    assert env["packages"]["numpy"] is None
    assert env["tools"]["lscpu"] == "timeout"
    assert env["tools"]["nvme"] == "absent"
    assert env["tools"]["nvidia-smi"] == "ok"
    bridge = next(n for n in env["nics"] if n["name"] == "docker0")
    assert (bridge["driver"], bridge["firmware"]) == ("bridge", None)


def test_nvme_cli_is_used_when_sysfs_hides_controllers(tmp_path: Path) -> None:
    listing = json.dumps(
        {"Devices": [{"DevicePath": "/dev/nvme0n1", "ModelNumber": "Micron_7450 ",
                      "Firmware": "E2MU200 "}, {"DevicePath": "/dev/x"}, "junk"]}
    )  # fmt: skip
    env = capture_environment(tmp_path, runner=FakeTools({"nvme list": listing}))

    assert [
        {k: d[k] for k in ("name", "model", "firmware", "transport", "source")}
        for d in env["nvme"]
    ] == [
        {"name": "nvme0n1", "model": "Micron_7450", "firmware": "E2MU200",
         "transport": None, "source": "nvme-cli"},
    ]  # fmt: skip


def test_empty_tree_gives_nones_not_errors(tmp_path: Path) -> None:
    env = capture_environment(tmp_path)

    assert env["os"] is None
    assert env["kernel"]["release"] is None
    assert env["cpu"]["model"] is None
    assert env["cpu"]["sockets"] is None
    assert env["gpus"] == env["nics"] == env["nvme"] == env["block"] == []
    assert json.loads(json.dumps(env)) == env


def test_garbage_files_and_tool_output_do_not_crash(tmp_path: Path) -> None:
    write(tmp_path, "proc/cpuinfo", "\x00\xff garbage\n\n: :\nprocessor\n")
    write(tmp_path, "proc/meminfo", "MemTotal: lots kB\n")
    write(tmp_path, "etc/os-release", "no equals here\n")
    write(tmp_path, "sys/class/net/eth0/speed", "fast\n")
    write(tmp_path, "sys/class/nvme/nvme0/model", "")
    junk = dict.fromkeys(TOOLS, "\x00garbage, , ,\n{not json")

    env = capture_environment(tmp_path, runner=FakeTools(junk))

    assert env["memory"]["total_bytes"] is None
    assert env["nics"][0]["speed_mbps"] is None
    assert env["gpus"] == []
    assert env["packages"]["python"] is None
    assert json.loads(json.dumps(env)) == env


def test_this_host_is_captured() -> None:
    env = capture_environment()

    assert env["kernel"]["release"] == os.uname().release
    assert env["kernel"]["machine"] == platform.machine()
    assert env["cpu"]["threads"]
    assert env["cpu"]["threads"] >= 1
    assert env["memory"]["total_bytes"] > 0
    assert env["packages"]["runner_python"] == platform.python_version()
    assert {"lscpu", "nvidia-smi", "fio"} <= set(env["tools"])
    assert set(env["tools"].values()) <= {"ok", "absent", "failed", "timeout"}
    assert json.loads(json.dumps(env)) == env
