"""A fake /proc-/sys-/etc tree of a GPU client host like the one the example
manifests describe (2 x EPYC, 8 x H100 on the PCI bus, ConnectX-7, local PM9A3
NVMe and one NVMe-oF/RDMA controller), and a fake tool runner."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

OS_RELEASE = """PRETTY_NAME="Ubuntu 22.04.5 LTS"
NAME="Ubuntu"
VERSION_ID="22.04"
VERSION="22.04.5 LTS (Jammy Jellyfish)"
ID=ubuntu
ID_LIKE=debian
"""


MEMINFO = """MemTotal:       2113470000 kB
HugePages_Total:  1024
Hugepagesize:       2048 kB
"""
NVRM = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.127.05  Tue Oct  1 2024\n"


def _cpuinfo(sockets: int, cores: int, microcode: str) -> str:
    blocks = []
    for n in range(sockets * cores):
        blocks.append(
            f"processor\t: {n}\nvendor_id\t: AuthenticAMD\n"
            f"model name\t: AMD EPYC 9454 48-Core Processor\n"
            f"microcode\t: {microcode}\nphysical id\t: {n // cores}\n"
            f"core id\t\t: {n % cores}\nflags\t\t: fpu sse\n"
        )
    return "\n".join(blocks) + "\n"


def write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def link(root: Path, relative: str, target: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, path)


def fake_host(
    root: Path,
    *,
    os_release: str = OS_RELEASE,
    kernel: str = "5.15.0-125-generic",
    microcode: str = "0xa101148",
    gpus: int = 8,
    nic_driver: str = "mlx5_core",
    nvme_firmware: str = "GDC7302Q",
    fabric_transport: str | None = "rdma",
) -> Path:
    write(root, "etc/os-release", os_release)
    write(root, "proc/sys/kernel/osrelease", kernel + "\n")
    write(root, "proc/sys/kernel/version", "#135-Ubuntu SMP\n")
    write(root, "proc/sys/kernel/hostname", "gpu-07\n")
    write(root, "proc/sys/kernel/arch", "x86_64\n")
    write(root, "proc/cpuinfo", _cpuinfo(2, 2, microcode))
    write(root, "proc/meminfo", MEMINFO)
    (root / "sys/devices/system/node/node0").mkdir(parents=True)
    (root / "sys/devices/system/node/node1").mkdir(parents=True)
    write(root, "proc/driver/nvidia/version", NVRM)
    for n in range(gpus):
        dev = f"sys/bus/pci/devices/0000:{0x18 + n:02x}:00.0"
        write(root, f"{dev}/class", "0x030200\n")
        write(root, f"{dev}/vendor", "0x10de\n")
        write(root, f"{dev}/device", "0x2330\n")
        link(root, f"{dev}/driver", "../../../bus/pci/drivers/nvidia")
    bmc = "sys/bus/pci/devices/0000:03:00.0"  # the BMC's VGA: not a GPU
    write(root, f"{bmc}/class", "0x030000\n")
    write(root, f"{bmc}/vendor", "0x1a03\n")
    nic = "sys/bus/pci/devices/0000:3b:00.0"
    write(root, f"{nic}/class", "0x020000\n")
    write(root, f"{nic}/vendor", "0x15b3\n")
    write(root, f"{nic}/device", "0x1021\n")
    link(root, f"{nic}/driver", f"../../../bus/pci/drivers/{nic_driver}")
    for name in ("ens1f0np0", "ens1f1np1"):
        link(
            root,
            f"sys/class/net/{name}/device",
            "../../../bus/pci/devices/0000:3b:00.0",
        )
        write(root, f"sys/class/net/{name}/mtu", "4200\n")
        write(root, f"sys/class/net/{name}/speed", "200000\n")
        write(root, f"sys/class/net/{name}/operstate", "up\n")
    write(root, "sys/class/net/lo/mtu", "65536\n")
    write(root, "sys/class/net/docker0/mtu", "1500\n")
    write(root, "sys/class/net/docker0/speed", "-1\n")
    for n in range(2):
        write(
            root,
            f"sys/class/nvme/nvme{n}/model",
            "SAMSUNG MZQL23T8HCLS-00A07 PM9A3 3.84TB\n",
        )
        write(root, f"sys/class/nvme/nvme{n}/firmware_rev", nvme_firmware + "\n")
        write(root, f"sys/class/nvme/nvme{n}/transport", "pcie\n")
        write(root, f"sys/class/nvme/nvme{n}/address", f"0000:{0x41 + n:02x}:00.0\n")
    if fabric_transport:
        write(root, "sys/class/nvme/nvme2/model", "Acme AF-4000\n")
        write(root, "sys/class/nvme/nvme2/firmware_rev", "4.2.1\n")
        write(root, "sys/class/nvme/nvme2/transport", fabric_transport + "\n")
        write(root, "sys/class/nvme/nvme2/address", "traddr=10.0.0.5,trsvcid=4420\n")
    write(root, "sys/block/nvme0n1/size", "7501476528\n")
    write(root, "sys/block/nvme0n1/queue/rotational", "0\n")
    write(root, "sys/block/nvme0n1/queue/scheduler", "[none] mq-deadline\n")
    write(root, "sys/block/loop0/size", "0\n")
    return root


NVIDIA_QUERY = "\n".join(
    "NVIDIA H100 80GB HBM3, 550.127.05, 96.00.99.00.01, 81559, "
    f"00000000:{0x18 + n:02X}:00.0"
    for n in range(8)
)
NVIDIA_HEADER = (
    "+--------------------------------------------------------------------+\n"
    "| NVIDIA-SMI 550.127.05   Driver Version: 550.127.05   CUDA Version: 12.4 |\n"
)
TOOLS: dict[str, str] = {
    "nvidia-smi --query-gpu": NVIDIA_QUERY,
    "nvidia-smi": NVIDIA_HEADER,
    "ethtool -i ens1f0np0": "driver: mlx5_core\nversion: 24.07-0.6.1\n"
    "firmware-version: 28.42.1000 (MT_0000000838)\nbus-info: 0000:3b:00.0\n",
    "ethtool -i ens1f1np1": "driver: mlx5_core\nversion: 24.07-0.6.1\n"
    "firmware-version: 28.42.1000 (MT_0000000838)\nbus-info: 0000:3b:00.0\n",
    "ethtool -i docker0": "driver: bridge\nversion: 2.3\nfirmware-version: N/A\n",
    "lspci -mm -D": '0000:3b:00.0 "Ethernet controller" "Mellanox Technologies" '
    '"MT2910 Family [ConnectX-7]" -p00 "Mellanox Technologies" "Device 0041"\n'
    'garbage "unterminated\n',
    "fio --version": "fio-3.37\n",
    "dpkg-query": "fio 3.37-1\nrdma-core 50.0-2ubuntu1\n",
    "/usr/bin/python3": '{"python": "3.10.12", "packages": {"torch": "2.4.0", '
    '"vllm": "0.6.3", "lmcache": "0.1.4", "numpy": null}}\n',
}


class FakeTools:
    """A Runner answering from ``outputs`` (longest matching argv prefix); other
    tools are absent; ``slow`` ones time out."""

    def __init__(
        self, outputs: Mapping[str, str] = TOOLS, slow: Sequence[str] = ()
    ) -> None:
        self.outputs = dict(outputs)
        self.slow = set(slow)
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, argv: Sequence[str]) -> str:
        self.calls.append(tuple(argv))
        if argv[0] in self.slow:
            raise subprocess.TimeoutExpired(list(argv), 10)
        line = " ".join(argv)
        for prefix in sorted(self.outputs, key=len, reverse=True):
            if line.startswith(prefix):
                return self.outputs[prefix]
        raise FileNotFoundError(argv[0])
