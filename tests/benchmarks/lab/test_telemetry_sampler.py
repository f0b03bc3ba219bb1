"""The telemetry sampler: against a real loop device (root), its sources on fake
procfs/sysfs trees, and the rule that no source starts a process."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from benchmarks.lib.lab.telemetry import Recorder, Sampler
from benchmarks.lib.lab.telemetry_sources import (
    CgroupSource,
    DiskstatsSource,
    NetSource,
    NvmlSource,
    PressureSource,
    RdmaSource,
    Reading,
    block_family,
)
from tests.django_free import web_modules_loaded_by


def _diskstats(device: str) -> dict[str, int]:
    for line in Path("/proc/diskstats").read_text().splitlines():
        parts = line.split()
        if parts[2] == device:
            return {"reads": int(parts[3]), "writes": int(parts[7])}
    raise AssertionError(f"{device} not in /proc/diskstats")


@pytest.fixture
def loop_device(tmp_path: Path) -> Any:
    if os.geteuid() != 0 or not Path("/dev/loop-control").exists():
        pytest.skip("needs root and /dev/loop-control for a loop device")
    if shutil.which("losetup") is None:
        pytest.skip("losetup is not installed")
    image = tmp_path / "disk.img"
    with image.open("wb") as handle:
        handle.truncate(64 << 20)
    made = subprocess.run(
        ["losetup", "--find", "--show", "--direct-io=on", str(image)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if made.returncode != 0:
        pytest.skip(f"losetup refused: {made.stderr.strip()}")
    device = made.stdout.strip()
    yield device
    subprocess.run(["losetup", "-d", device], check=False)


def test_the_samples_add_up_to_the_device_s_own_counters(loop_device: str) -> None:
    name = Path(loop_device).name
    sampler = Sampler([DiskstatsSource(block_family([loop_device]))], interval_s=0.1)
    before = _diskstats(name)
    sampler.start()
    fd = os.open(loop_device, os.O_RDWR | os.O_DIRECT)
    try:
        import mmap

        buffer = mmap.mmap(-1, 4096)
        buffer.write(b"x" * 4096)
        for i in range(1024):  # 4 MiB written, then read back, 4 KiB at a time
            os.pwrite(fd, buffer, i * 4096)
            if i % 256 == 0:
                time.sleep(0.15)
        for i in range(1024):
            assert os.preadv(fd, [buffer], i * 4096) == 4096
    finally:
        os.close(fd)
    time.sleep(0.2)
    recording = sampler.stop()
    after = _diskstats(name)

    (series,) = [s for s in recording.series if s.device == name]
    assert recording.t_ms[0] == 0
    assert series.fields["reads_completed"][0] == 0
    assert len(recording.t_ms) >= 5  # sampled all along, not only at both ends
    reads, writes = (
        (after["reads"] - before["reads"]),
        (after["writes"] - before["writes"]),
    )
    assert reads >= 1024
    assert writes >= 1024
    assert abs(sum(series.fields["reads_completed"]) - reads) <= reads / 100
    assert abs(sum(series.fields["writes_completed"]) - writes) <= writes / 100
    assert sum(series.fields["sectors_written"]) >= 8192  # 4 MiB in 512-byte sectors


def test_a_device_brings_those_under_and_over_it(tmp_path: Path) -> None:
    for name, slaves, holders in (
        ("md0", ["nvme0n1", "nvme1n1"], []),
        ("nvme0n1", [], ["md0"]),
        ("nvme1n1", [], ["md0"]),
        ("loop3", [], []),
    ):
        for link, names in (("slaves", slaves), ("holders", holders)):
            (tmp_path / name / link).mkdir(parents=True, exist_ok=True)
            for other in names:
                (tmp_path / name / link / other).touch()
    assert block_family(["/dev/nvme0n1"], tmp_path) == ["md0", "nvme0n1", "nvme1n1"]
    assert block_family(["loop3", "sdz"], tmp_path) == ["loop3", "sdz"]


def test_counters_become_interval_deltas_and_gauges_stay(tmp_path: Path) -> None:
    recorder = Recorder()
    key = ("diskstats", "loop0")
    recorder.add(0, {key: {"reads_completed": 100, "in_flight": 3}})
    recorder.add(1000, {key: {"reads_completed": 150, "in_flight": 1}})
    recorder.add(2000, {key: {"reads_completed": 10, "in_flight": 0}})  # reset
    recorder.add(2500, {})  # the device went away
    fields = recorder.series[key]
    assert fields["reads_completed"] == [0, 50, 0, 0]
    assert fields["in_flight"] == [3, 1, 0, 0]
    recorder.add(3000, {("net", "eth9"): {"rx_bytes": 5}})  # appears late
    assert recorder.series[("net", "eth9")]["rx_bytes"] == [0, 0, 0, 0, 0]


def test_pressure_net_and_rdma_sources_read_the_kernel_s_files(tmp_path: Path) -> None:
    (tmp_path / "pressure").mkdir()
    (tmp_path / "pressure" / "io").write_text(
        "some avg10=0.00 avg60=0.00 avg300=0.00 total=1200\n"
        "full avg10=0.00 avg60=0.00 avg300=0.00 total=800\n"
    )
    (tmp_path / "pressure" / "cpu").write_text(
        "some avg10=1 avg60=1 avg300=1 total=5\n"
    )
    assert PressureSource(tmp_path / "pressure").read() == {
        ("pressure", "host"): {"io_some_us": 1200, "io_full_us": 800, "cpu_some_us": 5}
    }
    (tmp_path / "dev").write_text(
        "Inter-|   Receive  |  Transmit\n face |bytes packets errs drop ...\n"
        "    lo: 9 1 0 0 0 0 0 0 9 1 0 0 0 0 0 0\n"
        "  eth0: 1000 10 1 2 0 0 0 0 2000 20 3 4 0 0 0 0\n"
    )
    net = NetSource(path=tmp_path / "dev").read()
    assert list(net) == [("net", "eth0")]
    assert net[("net", "eth0")]["tx_bytes"] == 2000
    assert net[("net", "eth0")]["rx_dropped"] == 2
    counters = tmp_path / "ib" / "mlx5_0" / "ports" / "1" / "counters"
    counters.mkdir(parents=True)
    (counters / "port_rcv_data").write_text("250\n")  # 4-byte words
    (counters / "port_xmit_packets").write_text("7\n")
    rdma = RdmaSource(tmp_path / "ib").read()
    assert rdma == {
        ("rdma", "mlx5_0/1"): {"port_rcv_bytes": 1000, "port_xmit_packets": 7}
    }


def test_the_cgroup_source_reads_the_run_s_group_once_attached(tmp_path: Path) -> None:
    source = CgroupSource()
    assert source.read() == {}  # no sandbox yet
    (tmp_path / "cpu.stat").write_text("usage_usec 5000\nuser_usec 4000\n")
    (tmp_path / "memory.current").write_text("1048576\n")
    (tmp_path / "io.stat").write_text(
        "7:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n"
        "253:1 rbytes=4096 wbytes=0 rios=1 wios=0\n"
    )
    source.attach("v2", {"unified": tmp_path})
    assert source.read() == {
        ("cgroup", "run"): {
            "cpu_usage_us": 5000, "cpu_user_us": 4000, "memory_bytes": 1048576,
            "io_read_bytes": 8192, "io_write_bytes": 8192, "io_reads": 2,
            "io_writes": 2,
        }
    }  # fmt: skip


def test_gpus_are_read_through_the_nvml_library() -> None:
    calls: list[str] = []

    class FakeNvml:
        def nvmlInit(self) -> None:
            calls.append("init")

        def nvmlDeviceGetCount(self) -> int:
            return 2

        def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
            return i

        def nvmlDeviceGetUtilizationRates(self, h: int) -> Any:
            return SimpleNamespace(gpu=90 - h, memory=40)

        def nvmlDeviceGetMemoryInfo(self, h: int) -> Any:
            return SimpleNamespace(used=(h + 1) << 30)

        def nvmlDeviceGetPowerUsage(self, h: int) -> int:
            if h == 1:
                raise RuntimeError("not supported")
            return 250_000

    reading = NvmlSource(FakeNvml()).read()
    assert calls == ["init"]
    assert reading[("gpu", "gpu0")] == {
        "gpu_util_pct": 90, "gpu_mem_util_pct": 40, "gpu_mem_used_mib": 1024,
        "power_mw": 250_000,
    }  # fmt: skip
    assert "power_mw" not in reading[("gpu", "gpu1")]


class Broken:
    name = "broken"

    def read(self) -> Reading:
        raise OSError("gone")


def test_a_failing_source_is_dropped_with_a_note_and_the_rest_go_on(
    tmp_path: Path,
) -> None:
    (tmp_path / "io").write_text("full avg10=0 avg60=0 avg300=0 total=1\n")
    sampler = Sampler([Broken(), PressureSource(tmp_path)], interval_s=0.05)
    sampler.start()
    time.sleep(0.2)
    recording = sampler.stop()
    assert [s.source for s in recording.series] == ["pressure"]
    assert len(recording.series[0].fields["io_full_us"]) == len(recording.t_ms)
    assert recording.notes[0].startswith("broken: dropped at 0 ms (OSError: gone)")


def test_the_sampler_module_is_django_free() -> None:
    assert web_modules_loaded_by("import benchmarks.lib.lab.telemetry") == "none"
