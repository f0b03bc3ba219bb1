"""The run's block I/O from its own cgroup: v1 ``blkio`` (with the rule that
makes the kernel count a device's I/O), v2 ``io.stat``, none where neither;
the totals outlive the group's removal. On a fake tree, then for real on a
loop device where the host can."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest

from benchmarks.lib.sandbox.cgroups import ACCOUNTING_IOPS, Cgroup, cgroup_create
from benchmarks.lib.sandbox.extras import (
    BASIC_NODES,
    DeviceNode,
    SandboxExtras,
    allow_list,
)
from tests.benchmarks.lab.loops import loop_device, loop_reason

V1_SERVICED = "7:0 Read 120\n7:0 Write 30\n7:0 Total 150\n7:1 Read 5\nTotal 155\n"
V1_BYTES = "7:0 Read 491520\n7:0 Write 122880\n7:0 Total 614400\nTotal 614400\n"


def fake_v1(root: Path) -> Path:
    for name in ("pids", "blkio"):
        (root / name).mkdir(parents=True)
        (root / name / "cgroup.procs").write_text("")
    (root / "self").write_text("9:pids:/\n7:blkio:/\n")
    return root / "self"


def rules() -> list[str]:
    extras = SandboxExtras(devices=(DeviceNode("/dev/loop0", "b", 7, 0, "rw"),))
    return allow_list(extras)


def test_v1_group_gets_a_never_throttling_rule_per_block_device(
    tmp_path: Path,
) -> None:
    group, _ = cgroup_create("reprogate-io1", memory_bytes=None, processes=8,
                             root=tmp_path, self_cgroup=fake_v1(tmp_path),
                             device_rules=rules())  # fmt: skip

    assert group is not None
    limit = tmp_path / "blkio/reprogate-io1/blkio.throttle.read_iops_device"
    assert limit.read_text() == f"7:0 {ACCOUNTING_IOPS}"


def test_v1_totals_sum_the_devices(tmp_path: Path) -> None:
    group, _ = cgroup_create("reprogate-io2", memory_bytes=None, processes=8,
                             root=tmp_path, self_cgroup=fake_v1(tmp_path))  # fmt: skip
    assert group is not None
    directory = tmp_path / "blkio/reprogate-io2"
    (directory / "blkio.throttle.io_serviced").write_text(V1_SERVICED)
    (directory / "blkio.throttle.io_service_bytes").write_text(V1_BYTES)
    expected = {"reads": 125, "writes": 30, "read_bytes": 491520,
                "write_bytes": 122880}  # fmt: skip

    assert group.io_totals() == expected


def test_v2_totals_come_from_io_stat(tmp_path: Path) -> None:
    (tmp_path / "io.stat").write_text(
        "7:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n"
        "259:0 rbytes=4096 wbytes=0 rios=1 wios=0 dbytes=0 dios=0\n"
    )
    group = Cgroup(version="v2", dirs={"unified": tmp_path})

    assert group.io_totals() == {
        "reads": 2, "writes": 2, "read_bytes": 8192, "write_bytes": 8192,
    }  # fmt: skip


def test_no_blkio_and_no_io_stat_means_no_totals(tmp_path: Path) -> None:
    assert Cgroup(version="v1", dirs={"pids": tmp_path}).io_totals() is None
    assert Cgroup(version="v2", dirs={"unified": tmp_path}).io_totals() is None


def _blkio_reason() -> str | None:
    if loop_reason():
        return loop_reason()
    if not Path("/sys/fs/cgroup/blkio/blkio.throttle.io_serviced").exists():
        return "needs the cgroup v1 blkio controller"
    return None


@pytest.mark.skipif(_blkio_reason() is not None, reason=_blkio_reason() or "")
def test_a_real_group_counts_its_direct_reads_of_a_loop_device(tmp_path: Path) -> None:
    with loop_device(tmp_path, "acct", size_mib=8) as device:
        numbers = Path(f"/sys/block/{Path(device).name}/dev").read_text().strip()
        group, _ = cgroup_create(
            f"reprogate-test-{uuid.uuid4().hex[:8]}", memory_bytes=None,
            processes=16, device_rules=[*BASIC_NODES, f"b {numbers} rw"],
        )  # fmt: skip
        assert group is not None
        procs = group.procs_files()

        def join() -> None:
            for path in procs:
                Path(path.decode()).write_text("0")

        try:
            subprocess.run(
                ["dd", f"if={device}", "of=/dev/null", "bs=4096", "count=64",
                 "iflag=direct", "status=none"],
                preexec_fn=join, check=True, timeout=30,
            )  # fmt: skip
        finally:
            group.remove()

    assert not any(d.exists() for d in group.dirs.values())
    assert group.final_io is not None
    assert group.final_io["reads"] == 64
    assert group.final_io["read_bytes"] == 64 * 4096
