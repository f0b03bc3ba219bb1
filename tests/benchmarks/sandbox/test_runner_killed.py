"""A worker SIGKILLed mid-run takes its harness down
with it. With a pid namespace (bwrap, unshare) every process of the run dies;
without one ("none") only the harness process itself does: its children are
orphans, which the next run leasing the same uid kills (test_uids)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks.lib.sandbox.capabilities import host_support
from tests.benchmarks.sandbox.conftest import Bundle, processes_with

REPO = Path(__file__).resolve().parents[3]
SCRIPT = '#!/bin/sh\necho started >"$REPROGATE_OUTPUT_DIR/started"\nsleep "$MARK"\n'
WORKER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from benchmarks.lib.sandbox import SandboxLimits, run_harness
    run_harness(bundle_dir=Path(sys.argv[1]), entrypoint="harness/run.sh",
                output_dir=Path(sys.argv[2]), env={"MARK": sys.argv[4]},
                method=sys.argv[3], limits=SandboxLimits(wall_seconds=120))
    """
)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_for(predicate: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


@pytest.mark.parametrize(
    "method",
    [
        pytest.param("bwrap", marks=pytest.mark.skipif(
            not host_support().bwrap_works, reason="no bwrap")),
        pytest.param("unshare", marks=pytest.mark.skipif(
            not host_support().unshare_works, reason="no unshare")),
    ],
)  # fmt: skip
def test_killed_runner_leaves_no_harness(
    make_bundle: Callable[[str], Bundle], method: str
) -> None:
    bundle = make_bundle(SCRIPT)
    worker = subprocess.Popen(
        [
            sys.executable,
            "-c",
            WORKER,
            str(bundle.dir),
            str(bundle.output),
            method,
            bundle.mark,
        ],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert wait_for(lambda: (bundle.output / "started").exists(), 20)
        assert set(processes_with(bundle.mark)) - {worker.pid}

        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)

        assert wait_for(lambda: processes_with(bundle.mark) == [], 5)
    finally:
        if worker.poll() is None:
            worker.kill()


@pytest.mark.skipif(not host_support().setpriv, reason="no setpriv")
def test_killed_runner_without_namespaces_kills_the_harness_process(
    make_bundle: Callable[[str], Bundle],
) -> None:
    bundle = make_bundle(SCRIPT)
    worker = subprocess.Popen(
        [
            sys.executable,
            "-c",
            WORKER,
            str(bundle.dir),
            str(bundle.output),
            "none",
            bundle.mark,
        ],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert wait_for(lambda: (bundle.output / "started").exists(), 20)
        (child,) = set(processes_with(bundle.mark)) - {worker.pid}
        harness = int(
            Path(f"/proc/{child}/stat").read_text().rpartition(")")[2].split()[1]
        )
        assert harness != worker.pid

        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)

        assert wait_for(lambda: not alive(harness), 5)
    finally:
        for pid in processes_with(bundle.mark):  # the orphaned child, see above
            os.kill(pid, signal.SIGKILL)
        if worker.poll() is None:
            worker.kill()
