"""A loop device a pool's policy allows is the run's, as the run's uid and
nothing more: written and read back with O_DIRECT; absent without the policy;
read-only with "access": "r"; another loop device never reachable; the host's
node never re-moded."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from benchmarks.lib.lab.devices import policy_extras
from benchmarks.lib.sandbox import HarnessResult, SandboxLimits, run_harness, setup
from benchmarks.lib.sandbox.extras import SandboxExtras, allow_list
from tests.benchmarks.lab.loops import block_spec, loop_device, needs_loop

pytestmark = needs_loop

# Writes 4 MiB of random bytes with O_DIRECT, reads them back with O_DIRECT and
# compares; then lists what of the host's loop devices the sandbox can see.
HARNESS = """#!/bin/sh
set -u
DEV="$1"
OTHER="$2"
echo "uid=$(id -u)"
head -c 4194304 /dev/urandom > /tmp/data
if dd if=/tmp/data of="$DEV" bs=1M count=4 oflag=direct conv=fsync 2>/tmp/werr; then
  echo "write=ok"
else
  echo "write=failed: $(tail -n1 /tmp/werr)"
fi
if dd if="$DEV" of=/tmp/back bs=1M count=4 iflag=direct 2>/tmp/rerr; then
  echo "read=ok"
else
  echo "read=failed: $(tail -n1 /tmp/rerr)"
fi
cmp -s /tmp/data /tmp/back && echo "same=yes" || echo "same=no"
[ -e "$OTHER" ] && echo "other=visible" || echo "other=absent"
python3 -c "import os,sys
try:
    os.mknod('/tmp/x', 0o60600, os.makedev(7, int(sys.argv[1])))
    print('mknod=ok')
except OSError as e:
    print('mknod=' + e.strerror)" "${OTHER#/dev/loop}"
echo "devices=$REPROGATE_DEVICES"
ls /dev | tr '\\n' ' '
echo
"""


@pytest.fixture
def loops(tmp_path: Path) -> Iterator[tuple[str, str]]:
    with (
        loop_device(tmp_path, "scratch") as scratch,
        loop_device(tmp_path, "other") as other,
    ):
        yield scratch, other


def run(tmp_path: Path, extras: SandboxExtras, dev: str, other: str) -> HarnessResult:
    bundle = tmp_path / "bundle"
    bundle.mkdir(exist_ok=True)
    (bundle / "run.sh").write_text(
        HARNESS.replace('DEV="$1"', f'DEV="{dev}"').replace(
            'OTHER="$2"', f'OTHER="{other}"'
        )
    )
    return run_harness(
        bundle_dir=bundle,
        entrypoint="run.sh",
        output_dir=tmp_path / "out",
        env={"REPROGATE_RUN_ID": "r1"},
        limits=SandboxLimits(wall_seconds=60),
        extras=extras,
    )


def lines(result: HarnessResult) -> dict[str, str]:
    found = {}
    for line in result.stdout_tail.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            found[key] = value
    return found


def extras_for(tmp_path: Path, scratch: str, access: str) -> SandboxExtras:
    cdi = tmp_path / "cdi"
    block_spec(cdi, {"scratch0": scratch})
    policy = {
        "schema": "reprogate.lab-policy/v1",
        "devices": [{"name": "reprogate.dev/block=scratch0", "access": access}],
    }
    extras, _ = policy_extras(policy, root=True, environ={}, dirs=[cdi])
    return extras


def test_allowed_loop_device_is_written_and_read_with_o_direct(
    tmp_path: Path, loops: tuple[str, str]
) -> None:
    scratch, other = loops
    mode_before = os.stat(scratch).st_mode
    result = run(tmp_path, extras_for(tmp_path, scratch, "rw"), scratch, other)
    seen = lines(result)
    assert result.succeeded, result.stderr_tail
    assert seen["uid"] != "0"
    assert result.isolation["uid_dropped"] is True
    assert (seen["write"], seen["read"], seen["same"]) == ("ok", "ok", "yes")
    assert seen["other"] == "absent"
    assert seen["mknod"] == "Operation not permitted"
    assert json.loads(seen["devices"]) == {"reprogate.dev/block=scratch0": scratch}
    assert os.stat(scratch).st_mode == mode_before  # the host's node untouched
    [device] = result.isolation["devices"]
    assert (device["path"], device["type"], device["access"]) == (scratch, "b", "rw")
    assert device["major"] == os.major(os.stat(scratch).st_rdev)
    assert result.isolation["network"] == "none"
    allow_list = result.isolation["device_allow_list"]
    assert allow_list in ("cgroup-v1", "none")


def test_without_the_policy_the_device_does_not_exist(
    tmp_path: Path, loops: tuple[str, str]
) -> None:
    scratch, other = loops
    result = run(tmp_path, SandboxExtras(), scratch, other)
    seen = lines(result)
    assert seen["write"].startswith("failed")
    assert seen["read"].startswith("failed")
    assert os.path.basename(scratch) not in result.stdout_tail.split("\n")[-2]
    assert "devices" not in seen or seen["devices"] == ""
    assert result.isolation["devices"] == []


def test_read_only_access_refuses_writes(
    tmp_path: Path, loops: tuple[str, str]
) -> None:
    scratch, other = loops
    result = run(tmp_path, extras_for(tmp_path, scratch, "r"), scratch, other)
    seen = lines(result)
    assert seen["write"].startswith("failed")
    assert "Permission denied" in seen["write"]
    assert seen["read"] == "ok"
    assert result.isolation["devices"][0]["access"] == "r"
    assert seen["other"] == "absent"


def test_the_device_allow_list_denies_even_a_node_of_the_run(
    tmp_path: Path, loops: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Defence in depth: where cgroup v1 offers ``devices``, a node the
    allow-list leaves out cannot be opened, even one owned by the run's uid
    (here the list is cut to the first device, as a runner bug would)."""
    if not Path("/sys/fs/cgroup/devices/devices.allow").exists():
        pytest.skip("the host has no cgroup v1 devices controller")
    scratch, other = loops
    cdi = tmp_path / "cdi"
    block_spec(cdi, {"scratch0": scratch, "other": other})
    policy = {
        "schema": "reprogate.lab-policy/v1",
        "devices": [
            {"name": "reprogate.dev/block=scratch0"},
            {"name": "reprogate.dev/block=other"},
        ],
    }
    extras, _ = policy_extras(policy, root=True, environ={}, dirs=[cdi])
    first_only = replace(extras, devices=extras.devices[:1])
    monkeypatch.setattr(setup, "allow_list", lambda _: allow_list(first_only))
    result = run(tmp_path, extras, other, "/dev/none")
    seen = lines(result)
    assert result.isolation["device_allow_list"] == "cgroup-v1"
    assert seen["write"].startswith("failed")
    assert "Operation not permitted" in seen["read"]
    assert len(result.isolation["devices"]) == 2
