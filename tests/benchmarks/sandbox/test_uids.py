"""Dedicated uids: leases never shared, processes found and killed by uid,
files handed back, reachability for the fallback methods."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from benchmarks.lib.sandbox.uids import (
    UID_BASE,
    UID_COUNT,
    chown_tree,
    traversable_by_others,
    uid_kill,
    uid_lease,
    uid_processes,
)

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root")


def test_two_leases_never_share_a_uid(tmp_path: Path) -> None:
    first = uid_lease(lock_dir=tmp_path, start=5)
    second = uid_lease(lock_dir=tmp_path, start=5)
    assert first is not None
    assert second is not None

    assert first.uid == UID_BASE + 5
    assert second.uid == UID_BASE + 6

    first.release()
    third = uid_lease(lock_dir=tmp_path, start=5)
    assert third is not None
    assert third.uid == UID_BASE + 5
    second.release()
    third.release()


def test_lease_wraps_around_the_range(tmp_path: Path) -> None:
    lease = uid_lease(lock_dir=tmp_path, start=UID_COUNT + 3)

    assert lease is not None
    assert lease.uid == UID_BASE + 3
    lease.release()


def test_unusable_lock_directory_means_no_lease(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")

    assert uid_lease(lock_dir=tmp_path / "file" / "locks") is None


@needs_root
def test_processes_of_a_uid_are_found_and_all_killed(tmp_path: Path) -> None:
    lease = uid_lease(lock_dir=tmp_path)
    assert lease is not None
    try:
        child = subprocess.Popen(
            ["/bin/sh", "-c", "setsid sleep 86396 & sleep 86396 & wait"],
            user=lease.uid,
            group=lease.gid,
            extra_groups=[],
            start_new_session=True,
        )
        for _ in range(100):
            if len(uid_processes(lease.uid)) >= 3:
                break
            subprocess.run(["sleep", "0.02"], check=True)
        assert len(uid_processes(lease.uid)) == 3

        assert uid_kill(lease.uid) == 0

        assert uid_processes(lease.uid) == []
        assert child.wait(timeout=5) == -9
    finally:
        lease.release()


@needs_root
def test_chown_tree_changes_only_what_it_should_and_follows_no_link(
    tmp_path: Path,
) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_text("x")
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.write_text("y")
    (tmp_path / "d" / "link").symlink_to(outside)

    changed = chown_tree(tmp_path / "d", UID_BASE, UID_BASE)

    assert changed == 3
    assert (tmp_path / "d" / "f").stat().st_uid == UID_BASE
    assert (tmp_path / "d" / "link").lstat().st_uid == UID_BASE
    assert outside.stat().st_uid == os.geteuid()
    chown_tree(tmp_path / "d", 0, 0, only_uid=UID_BASE)
    assert (tmp_path / "d" / "f").stat().st_uid == 0
    outside.unlink()


def test_traversable_by_others() -> None:
    base = Path(tempfile.mkdtemp())  # mode 0700
    try:
        (base / "inner").mkdir(mode=0o755)
        assert traversable_by_others(base / "inner") is False
        base.chmod(0o755)
        assert traversable_by_others(base / "inner") is True
        assert traversable_by_others(base / "missing") is False
    finally:
        shutil.rmtree(base)


@needs_root
def test_lease_kills_orphans_a_killed_runner_left_on_the_uid(tmp_path: Path) -> None:
    first = uid_lease(lock_dir=tmp_path, start=7)
    assert first is not None
    started = subprocess.run(  # the sleep outlives its shell: an orphan
        ["/bin/sh", "-c", "sleep 86396 >/dev/null 2>&1 & echo $!"],
        user=first.uid,
        group=first.gid,
        extra_groups=[],
        capture_output=True,
        text=True,
        check=True,
    )
    orphan = int(started.stdout)
    assert uid_processes(first.uid) == [orphan]
    first.release()  # its runner died without cleaning up

    second = uid_lease(lock_dir=tmp_path, start=7)

    assert second is not None
    assert second.uid == first.uid
    assert uid_processes(second.uid, zombies=True) == []
    second.release()
