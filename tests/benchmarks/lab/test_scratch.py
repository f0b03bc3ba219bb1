"""The embedded default's scratch block device (``benchmarks.lib.lab.scratch``):
a sparse file in the var dir on a loop device with direct I/O, reused rather
than attached again, named by a CDI spec the agent resolves; where the host
cannot, no spec is left and the reason is said; the stop detaches it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from benchmarks.lib.lab.cdi import load_specs, resolve
from benchmarks.lib.lab.policy import parse_policy
from benchmarks.lib.lab.scratch import (
    SCRATCH_BYTES,
    SCRATCH_DEVICE,
    SPEC_FILE,
    backing_file,
    cdi_dir,
    host_reason,
    scratch_attach,
    scratch_detach,
)
from tests.benchmarks.lab.loops import needs_loop

POLICY = {
    "schema": "reprogate.lab-policy/v1",
    "devices": [{"name": SCRATCH_DEVICE, "access": "rw"}],
}


class FakeLosetup:
    """``losetup`` as a list of calls: ``attached`` answers the listing."""

    def __init__(self, attached: list[str], attach: str = "/dev/loop5") -> None:
        self.attached, self.attach, self.calls = attached, attach, []  # type: ignore[var-annotated]

    def __call__(self, argv: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        self.calls.append(argv)
        if "--list" in argv:
            out = "".join(f"{d}\n" for d in self.attached)
        elif "--find" in argv:
            out = "" if not self.attach else f"{self.attach}\n"
            return subprocess.CompletedProcess(
                argv, 0 if out else 1, out, "" if out else "losetup: no free loop"
            )
        else:
            out = ""
        return subprocess.CompletedProcess(argv, 0, out, "")


def test_a_fresh_var_dir_gets_a_sparse_file_attached_with_direct_io(
    tmp_path: Path,
) -> None:
    fake = FakeLosetup([])

    scratch = scratch_attach(tmp_path, run=fake, reason="")

    assert scratch.device == "/dev/loop5"
    assert not scratch.reused
    assert backing_file(tmp_path).stat().st_size == SCRATCH_BYTES
    assert backing_file(tmp_path).stat().st_blocks < 64  # sparse
    assert fake.calls[-1] == [
        "losetup", "--find", "--show", "--direct-io=on", str(backing_file(tmp_path))
    ]  # fmt: skip
    assert "/dev/loop5" in scratch.describe()


def test_an_existing_attachment_of_the_file_is_reused_not_leaked(
    tmp_path: Path,
) -> None:
    fake = FakeLosetup(["/dev/loop2"])

    scratch = scratch_attach(tmp_path, run=fake, reason="")

    assert (scratch.device, scratch.reused) == ("/dev/loop2", True)
    assert not [c for c in fake.calls if "--find" in c]


def test_the_spec_names_the_device_for_the_agent(tmp_path: Path) -> None:
    scratch_attach(tmp_path, run=FakeLosetup([]), reason="")
    registry = load_specs([cdi_dir(tmp_path)])

    resolution = resolve(
        parse_policy(POLICY), registry, stat_fn=lambda p: Path("/dev/null").stat()
    )

    assert registry.problems == {}
    # /dev/null stands in for the node: a character device, so no block node
    assert resolution.problems == []
    spec = json.loads((cdi_dir(tmp_path) / SPEC_FILE).read_text())
    assert spec["devices"][0]["containerEdits"]["deviceNodes"] == [
        {"path": "/dev/loop5"}
    ]


@pytest.mark.parametrize(
    ("fake", "reason", "said"),
    [
        (FakeLosetup([]), "not root", "not root"),
        (FakeLosetup([], attach=""), "", "losetup: no free loop"),
    ],
)
def test_where_the_host_cannot_no_spec_is_left_and_the_reason_is_said(
    tmp_path: Path, fake: FakeLosetup, reason: str, said: str
) -> None:
    cdi_dir(tmp_path).mkdir(parents=True)
    (cdi_dir(tmp_path) / SPEC_FILE).write_text("{}")  # an earlier start's

    scratch = scratch_attach(tmp_path, run=fake, reason=reason)

    assert scratch.device is None
    assert said in scratch.reason
    assert "file-backed" in scratch.describe()
    assert not (cdi_dir(tmp_path) / SPEC_FILE).exists()


def test_the_host_reason_names_root_and_the_loop_control(tmp_path: Path) -> None:
    assert host_reason(euid=1000) == "not root"
    missing = tmp_path / "loop-control"
    assert host_reason(euid=0, loop_control=missing) == f"no {missing}"


@needs_loop
def test_a_real_attach_is_reused_at_the_next_start_and_detached_at_stop(
    tmp_path: Path,
) -> None:
    first = scratch_attach(tmp_path)
    try:
        second = scratch_attach(tmp_path)

        assert first.device is not None, first.reason
        assert (second.device, second.reused) == (first.device, True)
        name = Path(first.device).name
        assert Path(f"/sys/block/{name}/loop/dio").read_text().strip() == "1"
    finally:
        detached = scratch_detach(tmp_path)

    assert detached == [first.device]
    listed = subprocess.run(
        ["losetup", "-j", str(backing_file(tmp_path))],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert listed.stdout == ""
    assert not (cdi_dir(tmp_path) / SPEC_FILE).exists()
