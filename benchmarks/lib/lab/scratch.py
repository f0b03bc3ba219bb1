"""The embedded default's scratch block device: a loop device on a sparse file
in the var dir, named ``reprogate.dev/block=scratch0`` by a CDI spec the lab
agent reads, so that the demo's harnesses do their SSD-tier I/O on a real
block device (``O_DIRECT``) and the sampler watches it.

``scratch_attach`` makes (or reuses) ``<var>/lab/scratch0.img`` (256 MiB,
sparse), attaches it with ``losetup --find --show --direct-io=on`` unless a
loop device already holds that file (a start after an unclean stop reuses it,
never leaks another), and writes ``<var>/lab/cdi/reprogate-scratch.json``.
Where the host cannot (not root, no ``/dev/loop-control`` or ``losetup``, an
attach refused) it says why, and removes a spec left by an earlier start, so
the agent never resolves a stale device. ``scratch_detach`` detaches every
loop device on the file and removes the spec (the supervisor's stop).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

SCRATCH_NAME: Final = "scratch0"
SCRATCH_KIND: Final = "reprogate.dev/block"
SCRATCH_DEVICE: Final = f"{SCRATCH_KIND}={SCRATCH_NAME}"
SCRATCH_BYTES: Final = 256 << 20
LAB_DIR: Final = "lab"
CDI_DIR: Final = f"{LAB_DIR}/cdi"
SPEC_FILE: Final = "reprogate-scratch.json"
LOSETUP_TIMEOUT_S: Final = 30
Runner = Callable[..., "subprocess.CompletedProcess[str]"]


@dataclass(frozen=True)
class Scratch:
    backing: Path
    cdi_dir: Path
    device: str | None = None  # /dev/loopN when attached
    reason: str = ""  # why there is none
    reused: bool = False  # an attachment left by an earlier start

    def describe(self) -> str:
        """One line for the console."""
        if self.device is None:
            return (
                f"no scratch block device ({self.reason}): the demo's harnesses "
                "run file-backed"
            )
        how = "reused" if self.reused else "attached"
        return (
            f"{SCRATCH_DEVICE} is {self.device} ({how}, {SCRATCH_BYTES >> 20} MiB "
            f"on {self.backing}, direct I/O): the demo's harnesses use it"
        )


def backing_file(var_dir: Path) -> Path:
    return var_dir / LAB_DIR / f"{SCRATCH_NAME}.img"


def cdi_dir(var_dir: Path) -> Path:
    return var_dir / CDI_DIR


def host_reason(
    *, euid: int | None = None, loop_control: Path = Path("/dev/loop-control")
) -> str | None:
    """Why this host cannot attach a loop device (None: it can try)."""
    if (os.geteuid() if euid is None else euid) != 0:
        return "not root"
    if not loop_control.exists():
        return f"no {loop_control}"
    if shutil.which("losetup") is None:
        return "losetup is not installed"
    return None


def block_spec(devices: dict[str, str]) -> dict[str, object]:
    """A CDI spec naming each ``name -> /dev/path`` as ``reprogate.dev/block``."""
    return {
        "cdiVersion": "0.6.0",
        "kind": SCRATCH_KIND,
        "devices": [
            {"name": name, "containerEdits": {"deviceNodes": [{"path": path}]}}
            for name, path in sorted(devices.items())
        ],
    }


def attached(backing: Path, run: Runner = subprocess.run) -> list[str]:
    """The loop devices attached to ``backing`` ([] when none or on error)."""
    done = run(
        ["losetup", "--list", "--noheadings", "--output=NAME", f"-j{backing}"],
        capture_output=True,
        text=True,
        check=False,
        timeout=LOSETUP_TIMEOUT_S,
    )
    if done.returncode != 0:
        return []
    return [line.strip() for line in done.stdout.splitlines() if line.strip()]


def _make_backing(backing: Path) -> None:
    backing.parent.mkdir(parents=True, exist_ok=True)
    if not backing.exists() or backing.stat().st_size < SCRATCH_BYTES:
        with backing.open("ab") as handle:
            handle.truncate(SCRATCH_BYTES)  # sparse: no disk used until written
    backing.chmod(0o600)


def _write_spec(directory: Path, device: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    scratch = directory / f".{SPEC_FILE}.{os.getpid()}"
    scratch.write_text(json.dumps(block_spec({SCRATCH_NAME: device}), indent=1))
    os.replace(scratch, directory / SPEC_FILE)


def scratch_attach(
    var_dir: Path, *, run: Runner = subprocess.run, reason: str | None = None
) -> Scratch:
    """The scratch device attached (or reused) and its CDI spec written; or
    why not, with no spec left behind. ``reason``: the host's (``host_reason``
    when None)."""
    backing, directory = backing_file(var_dir), cdi_dir(var_dir)
    why = host_reason() if reason is None else reason
    device, reused = None, False
    if not why:
        try:
            _make_backing(backing)
            found = attached(backing, run)
            if found:
                device, reused = found[0], True
            else:
                done = run(
                    ["losetup", "--find", "--show", "--direct-io=on", str(backing)],
                    capture_output=True,
                    text=True,
                    check=False,
                    timeout=LOSETUP_TIMEOUT_S,
                )
                device = done.stdout.strip() if done.returncode == 0 else None
                lines = (done.stderr or "").strip().splitlines()
                why = "" if device else f"losetup: {lines[-1] if lines else 'failed'}"
        except (OSError, subprocess.SubprocessError) as error:
            device, why = None, f"cannot make {backing}: {error}"
    if device is None:
        (directory / SPEC_FILE).unlink(missing_ok=True)
        return Scratch(backing, directory, reason=why or "unknown")
    _write_spec(directory, device)
    return Scratch(backing, directory, device=device, reused=reused)


def scratch_detach(var_dir: Path, *, run: Runner = subprocess.run) -> list[str]:
    """Detach every loop device on the scratch file and remove its spec; the
    devices detached."""
    backing = backing_file(var_dir)
    (cdi_dir(var_dir) / SPEC_FILE).unlink(missing_ok=True)
    if not backing.exists() or host_reason() is not None:
        return []
    detached = []
    for device in attached(backing, run):
        done = run(
            ["losetup", "--detach", device],
            capture_output=True,
            text=True,
            check=False,
            timeout=LOSETUP_TIMEOUT_S,
        )
        if done.returncode == 0:
            detached.append(device)
    return detached
