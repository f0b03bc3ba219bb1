"""Loop devices for the device-policy tests: made fresh on temp files, always
detached afterwards; the tests using them skip where the host cannot."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from benchmarks.lib.sandbox.capabilities import host_support


def loop_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root (per-run device nodes)"
    if not Path("/dev/loop-control").exists() or not shutil.which("losetup"):
        return "needs loop devices (/dev/loop-control, losetup)"
    if not host_support().bwrap_works:
        return "needs bubblewrap"
    return None


needs_loop = pytest.mark.skipif(loop_reason() is not None, reason=loop_reason() or "")


@contextmanager
def loop_device(directory: Path, name: str, size_mib: int = 16) -> Iterator[str]:
    """A fresh loop device on a file of ``size_mib`` MiB; detached on exit."""
    backing = directory / f"{name}.img"
    with backing.open("wb") as handle:
        handle.truncate(size_mib << 20)
    device = subprocess.run(
        ["losetup", "--find", "--show", str(backing)],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout.strip()
    try:
        yield device
    finally:
        subprocess.run(["losetup", "-d", device], check=False, timeout=30)


def block_spec(cdi_dir: Path, devices: dict[str, str]) -> Path:
    """A ReproGate-written CDI spec: ``reprogate.dev/block=<name>`` per device."""
    cdi_dir.mkdir(parents=True, exist_ok=True)
    spec = {
        "cdiVersion": "0.6.0",
        "kind": "reprogate.dev/block",
        "devices": [
            {"name": name, "containerEdits": {"deviceNodes": [{"path": path}]}}
            for name, path in devices.items()
        ],
    }
    path = cdi_dir / "reprogate-block.json"
    path.write_text(json.dumps(spec))
    return path
