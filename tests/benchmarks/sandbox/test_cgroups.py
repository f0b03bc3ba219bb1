"""The per-run control group, on a fake hierarchy and (where allowed) for real."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest

from benchmarks.lib.sandbox.capabilities import host_support
from benchmarks.lib.sandbox.cgroups import cgroup_create


def fake_v1(root: Path, own: str = "/runner") -> Path:
    """A cgroup v1 tree like the lab hosts': one directory per controller."""
    for controller in ("pids", "memory", "cpuacct"):
        group = root / controller / own.lstrip("/")
        group.mkdir(parents=True)
        (root / controller / "cgroup.procs").write_text("")
        (group / "cgroup.procs").write_text("")
    self_cgroup = root / "self_cgroup"
    self_cgroup.write_text(f"9:pids:{own}\n4:memory:{own}\n3:cpu,cpuacct:{own}\n0::/\n")
    return self_cgroup


def test_v1_group_is_made_below_the_runner_with_limits(tmp_path: Path) -> None:
    self_cgroup = fake_v1(tmp_path)

    group, notes = cgroup_create(
        "run-1",
        memory_bytes=1 << 30,
        processes=64,
        root=tmp_path,
        self_cgroup=self_cgroup,
    )

    assert group is not None
    assert notes == []
    assert group.version == "v1"
    assert group.enforces == {"pids", "memory"}
    assert (tmp_path / "pids/runner/run-1/pids.max").read_text() == "64"
    assert (tmp_path / "memory/runner/run-1/memory.limit_in_bytes").read_text() == str(
        1 << 30
    )
    assert set(group.procs_files()) == {
        str(tmp_path / c / "runner/run-1/cgroup.procs").encode()
        for c in ("pids", "memory", "cpuacct")
    }


def test_v1_group_reads_counters(tmp_path: Path) -> None:
    group, _ = cgroup_create(
        "run-2", memory_bytes=None, processes=None, root=tmp_path,
        self_cgroup=fake_v1(tmp_path),
    )  # fmt: skip
    assert group is not None
    base = tmp_path / "{}/runner/run-2"

    Path(str(base).format("memory"), "memory.oom_control").write_text(
        "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n"
    )
    Path(str(base).format("pids"), "pids.events").write_text("max 5\n")
    Path(str(base).format("cpuacct"), "cpuacct.usage").write_text("2500000000\n")
    Path(str(base).format("pids"), "cgroup.procs").write_text("12\n13\n")

    assert group.oom_kills() == 2
    assert group.process_limit_hits() == 5
    assert group.cpu_seconds() == 2.5
    assert group.pids() == {12, 13}


def test_no_hierarchy_means_no_group_and_a_note(tmp_path: Path) -> None:
    (tmp_path / "self").write_text("")

    group, notes = cgroup_create(
        "x",
        memory_bytes=1,
        processes=1,
        root=tmp_path / "none",
        self_cgroup=tmp_path / "self",
    )

    assert group is None
    assert notes


def test_v2_group_needs_delegated_controllers(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpu memory pids\n")
    (tmp_path / "runner").mkdir()
    (tmp_path / "runner" / "cgroup.controllers").write_text("cpu memory pids\n")
    (tmp_path / "runner" / "cgroup.subtree_control").write_text("cpu memory pids\n")
    (tmp_path / "self").write_text("0::/runner\n")

    group, _notes = cgroup_create(
        "run",
        memory_bytes=1 << 20,
        processes=8,
        root=tmp_path,
        self_cgroup=tmp_path / "self",
    )

    assert group is not None
    assert group.version == "v2"
    assert group.enforces == {"pids", "memory"}
    assert (tmp_path / "runner/run/pids.max").read_text() == "8"
    assert (tmp_path / "runner/run/memory.max").read_text() == str(1 << 20)


@pytest.mark.skipif(
    "pids" not in host_support().cgroup_controllers, reason="no pids cgroup"
)
def test_real_group_holds_limits_and_kills_everything() -> None:
    group, _ = cgroup_create(f"reprogate-test-{uuid.uuid4().hex[:8]}",
                             memory_bytes=64 << 20, processes=16)  # fmt: skip
    assert group is not None
    procs = group.procs_files()

    def join() -> None:
        for path in procs:
            Path(path.decode()).write_text("0")

    child = subprocess.Popen(
        ["/bin/sh", "-c", "sleep 86395 & sleep 86395 & wait"], preexec_fn=join
    )
    try:
        deadline = 50
        while len(group.pids()) < 3 and deadline:
            deadline -= 1
            subprocess.run(["sleep", "0.02"], check=True)
        assert len(group.pids()) == 3

        assert group.kill() == 0

        assert group.pids() == set()
        assert child.wait(timeout=5) == -9
    finally:
        group.remove()
    assert not any(d.exists() for d in group.dirs.values())


def test_v2_without_delegation_gives_no_group(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpu memory pids\n")
    (tmp_path / "cgroup.subtree_control").write_text("")
    (tmp_path / "self").write_text("0::/\n")

    group, notes = cgroup_create(
        "run", memory_bytes=1, processes=8, root=tmp_path, self_cgroup=tmp_path / "self"
    )

    assert group is None
    assert "not delegated" in notes[0]
    assert not (tmp_path / "run").exists()
