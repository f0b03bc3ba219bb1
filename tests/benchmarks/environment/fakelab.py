"""A fake sysfs/procfs tree of a lab host with domestic accelerators (an
Ascend-class NPU, a Moore Threads GPU, a Hygon DCU), an NVIDIA GPU on a PCIe
Gen5 x16 link, the BMC's VGA, a ConnectX RDMA NIC, a local NVMe drive, an
NVMe-oF/TCP and an NVMe-oF/RDMA subsystem with two paths each, and an attached
loop device (besides seven detached ones); and recorded tool outputs."""

from __future__ import annotations

from pathlib import Path

from tests.benchmarks.environment.fakehost import link, write

# The accelerators: (address, class, vendor, device, driver, NUMA node).
ACCELERATORS = (
    ("0000:17:00.0", "0x120000", "0x19e5", "0xd802", "devdrv_device_driver", 0),
    ("0000:31:00.0", "0x030000", "0x1ed5", "0x0323", "mtgpu", 0),
    ("0000:4b:00.0", "0x038000", "0x1d94", "0x55b7", "hydcu", 1),
    ("0000:65:00.0", "0x030200", "0x10de", "0x2330", "nvidia", 1),
)
NQN_TCP = "nqn.2014-08.org.example:tier-tcp"
NQN_RDMA = "nqn.2014-08.org.example:tier-rdma"
# nvme-cli 2.x `nvme list-subsys -o json`: one object per host, paths nested.
NVME_CLI_2 = f"""[
  {{"HostNQN": "nqn.2014-08.org.nvmexpress:uuid:0f0e", "HostID": "0f0e",
    "Subsystems": [
      {{"Name": "nvme-subsys1", "NQN": "{NQN_TCP}", "IOPolicy": "numa",
        "Paths": [
          {{"Name": "nvme1", "Transport": "tcp",
            "Address": "traddr=10.0.0.5,trsvcid=4420,src_addr=10.0.0.9",
            "State": "live"}},
          {{"Name": "nvme2", "Transport": "tcp",
            "Address": "traddr=10.0.1.5,trsvcid=4420,src_addr=10.0.1.9",
            "State": "connecting"}}]}}]}}]
"""
# nvme-cli 1.x: subsystems and their paths as alternating array entries.
NVME_CLI_1 = f"""{{"Subsystems": [
  {{"Name": "nvme-subsys3", "NQN": "{NQN_RDMA}"}},
  {{"Paths": [{{"Name": "nvme3", "Transport": "rdma",
               "Address": "traddr=192.168.7.5 trsvcid=4420", "State": "live"}},
              {{"Name": "nvme4", "Transport": "rdma",
               "Address": "traddr=192.168.8.5 trsvcid=4420", "State": "live"}}]}}]}}
"""


def _pci(root: Path, address: str, klass: str, vendor: str, device: str) -> str:
    base = f"sys/bus/pci/devices/{address}"
    write(root, f"{base}/class", klass + "\n")
    write(root, f"{base}/vendor", vendor + "\n")
    write(root, f"{base}/device", device + "\n")
    return base


def _link(root: Path, base: str, node: int, group: int, gen: str = "32.0") -> None:
    write(root, f"{base}/numa_node", f"{node}\n")
    link(root, f"{base}/iommu_group", f"../../../kernel/iommu_groups/{group}")
    write(root, f"{base}/current_link_speed", "16.0 GT/s PCIe\n")
    write(root, f"{base}/current_link_width", "8\n")
    write(root, f"{base}/max_link_speed", f"{gen} GT/s PCIe\n")
    write(root, f"{base}/max_link_width", "16\n")


def _controller(
    root: Path, n: int, transport: str, address: str, nqn: str, state: str
) -> None:
    base = f"sys/class/nvme/nvme{n}"
    write(root, f"{base}/model", "Acme AF-4000\n")
    write(root, f"{base}/serial", f"AF{n:04d}\n")
    write(root, f"{base}/firmware_rev", "4.2.1\n")
    write(root, f"{base}/transport", transport + "\n")
    write(root, f"{base}/address", address + "\n")
    write(root, f"{base}/state", state + "\n")
    write(root, f"{base}/subsysnqn", nqn + "\n")
    write(root, f"{base}/cntlid", f"{n}\n")
    write(root, f"{base}/numa_node", "-1\n")


def _subsystem(root: Path, n: int, nqn: str, paths: tuple[int, ...]) -> None:
    base = f"sys/class/nvme-subsystem/nvme-subsys{n}"
    write(root, f"{base}/subsysnqn", nqn + "\n")
    write(root, f"{base}/model", "Acme AF-4000\n")
    write(root, f"{base}/firmware_rev", "4.2.1\n")
    write(root, f"{base}/iopolicy", "numa\n")
    for path in paths:
        link(root, f"{base}/nvme{path}", f"../../nvme/nvme{path}")
    (root / f"{base}/nvme{n}n1").mkdir()


def _block(root: Path, name: str, sectors: int, **files: str) -> None:
    write(root, f"sys/block/{name}/size", f"{sectors}\n")
    write(root, f"sys/block/{name}/ro", "0\n")
    write(root, f"sys/block/{name}/queue/rotational", "0\n")
    write(root, f"sys/block/{name}/queue/logical_block_size", "512\n")
    write(root, f"sys/block/{name}/queue/scheduler", "[none] mq-deadline\n")
    for relative, text in files.items():
        write(root, f"sys/block/{name}/{relative.replace('__', '/')}", text + "\n")
    (root / f"sys/block/{name}/holders").mkdir(exist_ok=True)


def fake_lab_host(root: Path, *, fabrics_in_sysfs: bool = True) -> Path:
    write(root, "proc/sys/kernel/osrelease", "6.1.0-27-amd64\n")
    write(root, "proc/sys/kernel/arch", "aarch64\n")
    write(root, "proc/cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/sda1 iommu=pt\n")
    write(root, "proc/sys/vm/swappiness", "10\n")
    write(root, "proc/sys/kernel/numa_balancing", "0\n")
    thp = "sys/kernel/mm/transparent_hugepage"
    write(root, f"{thp}/enabled", "always [madvise] never\n")
    write(root, f"{thp}/defrag", "[always] defer madvise never\n")
    for cpu in (0, 1):
        cpufreq = f"sys/devices/system/cpu/cpu{cpu}/cpufreq"
        write(root, f"{cpufreq}/scaling_governor", "performance\n")
    write(root, "sys/devices/system/cpu/cpufreq/policy0/scaling_driver", "cppc\n")
    write(root, "sys/devices/system/cpu/cpu0/microcode/version", "0x2b000603\n")
    for n, (address, klass, vendor, device, driver, node) in enumerate(ACCELERATORS):
        base = _pci(root, address, klass, vendor, device)
        link(root, f"{base}/driver", f"../../../bus/pci/drivers/{driver}")
        _link(root, base, node, 10 + n, "32.0" if vendor == "0x10de" else "16.0")
    write(root, "sys/module/mtgpu/version", "2.7.0\n")
    _pci(root, "0000:03:00.0", "0x030000", "0x1a03", "0x2000")  # BMC VGA
    _pci(root, "0000:7d:00.0", "0x020000", "0x19e5", "0x0222")  # Huawei NIC
    nic = _pci(root, "0000:98:00.0", "0x020700", "0x15b3", "0x1021")
    link(root, f"{nic}/driver", "../../../bus/pci/drivers/mlx5_core")
    _link(root, nic, 1, 30)
    ib = "sys/class/infiniband/mlx5_0"
    link(root, f"{ib}/device", "../../../bus/pci/devices/0000:98:00.0")
    write(root, f"{ib}/fw_ver", "28.42.1000\n")
    write(root, f"{ib}/hca_type", "MT4129\n")
    write(root, f"{ib}/board_id", "MT_0000000838\n")
    write(root, f"{ib}/node_type", "1: CA\n")
    write(root, f"{ib}/node_guid", "a088:c203:0012:3456\n")
    write(root, f"{ib}/ports/1/state", "4: ACTIVE\n")
    write(root, f"{ib}/ports/1/phys_state", "5: LinkUp\n")
    write(root, f"{ib}/ports/1/rate", "400 Gb/sec (4X NDR)\n")
    write(root, f"{ib}/ports/1/link_layer", "InfiniBand\n")
    local = _pci(root, "0000:c1:00.0", "0x010802", "0x144d", "0xa80a")
    _link(root, local, 1, 40, "16.0")
    base = "sys/class/nvme/nvme0"
    write(root, f"{base}/model", "SAMSUNG MZQL23T8HCLS-00A07\n")
    write(root, f"{base}/firmware_rev", "GDC7302Q\n")
    write(root, f"{base}/transport", "pcie\n")
    write(root, f"{base}/address", "0000:c1:00.0\n")
    write(root, f"{base}/state", "live\n")
    write(root, f"{base}/subsysnqn", "nqn.1994-11.com.samsung:nvme:PM9A3\n")
    write(root, f"{base}/numa_node", "1\n")
    for n, (transport, address, nqn, state) in enumerate(
        (
            ("tcp", "traddr=10.0.0.5,trsvcid=4420", NQN_TCP, "live"),
            ("tcp", "traddr=10.0.1.5,trsvcid=4420", NQN_TCP, "connecting"),
            ("rdma", "traddr=192.168.7.5,trsvcid=4420", NQN_RDMA, "live"),
            ("rdma", "traddr=192.168.8.5,trsvcid=4420", NQN_RDMA, "live"),
        ),
        start=1,
    ):
        _controller(root, n, transport, address, nqn, state)
    if fabrics_in_sysfs:
        _subsystem(root, 1, NQN_TCP, (1, 2))
        _subsystem(root, 3, NQN_RDMA, (3, 4))
    _block(root, "nvme0n1", 7501476528, dev="259:0", device__model="PM9A3")
    _block(root, "nvme1n1", 2147483648, dev="259:1")
    _block(root, "nvme3n1", 2147483648, dev="259:2")
    _block(root, "loop0", 524288, dev="7:0", loop__backing_file="/srv/scratch0.img")
    write(root, "sys/block/loop0/loop/dio", "1\n")
    for n in range(1, 8):
        _block(root, f"loop{n}", 0, dev=f"7:{n}")
    _block(root, "zram0", 0)
    return root


TOOLS: dict[str, str] = {
    "npu-smi info": "+ npu-smi 23.0.3   Version: 23.0.3 +\n| 0  910B3  OK |\n",
    "mthreads-gmi -q": "Driver Version : 2.7.0\nProduct Name : MTT S4000\n",
    "nvme list-subsys": NVME_CLI_2,
}
