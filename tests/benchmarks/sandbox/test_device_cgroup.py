"""The cgroup v1 ``devices`` allow-list on a fake hierarchy: everything denied,
then bubblewrap's basic nodes and the policy's with their access; none on v2
or where the controller is missing, said in the notes."""

from __future__ import annotations

from pathlib import Path

from benchmarks.lib.sandbox.cgroups import cgroup_create
from benchmarks.lib.sandbox.extras import (
    BASIC_NODES,
    DeviceNode,
    SandboxExtras,
    allow_list,
)


def fake_v1(root: Path, controllers: tuple[str, ...]) -> Path:
    for name in controllers:
        (root / name).mkdir(parents=True)
        (root / name / "cgroup.procs").write_text("")
        if name == "devices":
            (root / name / "devices.allow").write_text("")
    self_cgroup = root / "self"
    self_cgroup.write_text("".join(f"{i}:{c}:/\n" for i, c in enumerate(controllers)))
    return self_cgroup


def extras() -> SandboxExtras:
    return SandboxExtras(
        devices=(
            DeviceNode("/dev/loop0", "b", 7, 0, "rw"),
            DeviceNode("/dev/nvme0n1", "b", 259, 0, "r"),
        )
    )


def test_the_allow_list_denies_all_but_the_basic_nodes_and_the_policy_s(
    tmp_path: Path,
) -> None:
    self_cgroup = fake_v1(tmp_path, ("pids", "devices"))
    rules = allow_list(extras())

    group, notes = cgroup_create(
        "reprogate-t1",
        memory_bytes=None,
        processes=10,
        root=tmp_path,
        self_cgroup=self_cgroup,
        device_rules=rules,
    )

    assert group is not None
    assert notes == []
    assert group.device_allow_list == "cgroup-v1"
    directory = tmp_path / "devices" / "reprogate-t1"
    assert (directory / "devices.deny").read_text() == "a"
    # a fake file keeps the last write only; the real one appends each rule
    assert (directory / "devices.allow").read_text() == "b 259:0 r"
    assert rules == [*BASIC_NODES, "b 7:0 rw", "b 259:0 r"]
    assert "devices" in group.controllers


def test_no_devices_controller_means_no_allow_list(tmp_path: Path) -> None:
    self_cgroup = fake_v1(tmp_path, ("pids",))

    group, notes = cgroup_create(
        "reprogate-t2",
        memory_bytes=None,
        processes=10,
        root=tmp_path,
        self_cgroup=self_cgroup,
        device_rules=allow_list(extras()),
    )

    assert group is not None
    assert group.device_allow_list == "none"
    assert notes == [
        "no device allow-list: the host has no cgroup v1 devices controller"
    ]


def test_without_a_device_policy_no_devices_group_is_made(tmp_path: Path) -> None:
    self_cgroup = fake_v1(tmp_path, ("pids", "devices"))

    group, _ = cgroup_create(
        "reprogate-t3",
        memory_bytes=None,
        processes=10,
        root=tmp_path,
        self_cgroup=self_cgroup,
    )

    assert group is not None
    assert "devices" not in group.dirs
    assert not (tmp_path / "devices" / "reprogate-t3").exists()
