"""The embedded default's fault hook (``benchmarks.lib.lab.nbd_fault``) with
real tools: it drives an nbdkit export's error and pause filters (seen by the
example harness's NBD client) and shapes a run's network namespace with
``tc tbf``. A whole failover run: tests/agent/test_failover_run.py."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from benchmarks.lib.lab import nbd_fault
from tests.benchmarks.lab.test_endpoints import free_port

ROOT = Path(__file__).resolve().parents[3]
HARNESS = ROOT / "examples/acme-flash/harness"


def _reason() -> str | None:
    if shutil.which("nbdkit") is None:
        return "needs nbdkit (apt-get install -y nbdkit)"
    return None


pytestmark = pytest.mark.skipif(_reason() is not None, reason=_reason() or "")


def nbdprobe() -> ModuleType:
    spec = importlib.util.spec_from_file_location("nbdprobe", HARNESS / "nbdprobe.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def export(tmp_path: Path) -> Iterator[tuple[Path, int, Path]]:
    """(state dir, port, hook) of a running export."""
    state, port = tmp_path / "nbd", free_port()
    process = nbd_fault.start_export(state, port)
    hook = nbd_fault.write_hook(tmp_path / "hooks" / "fault", state)
    try:
        yield state, port, hook
    finally:
        nbd_fault.stop_export(process)


def hook(
    path: Path, verb: str, action: dict[str, Any]
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(path), verb, json.dumps(action)],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip


def test_the_hook_opens_and_closes_an_error_window_and_a_pause(
    export: tuple[Path, int, Path],
) -> None:
    _, port, fault = export
    probe = nbdprobe()
    client = probe.Client(f"tcp:127.0.0.1:{port}")
    client.read(0)

    assert hook(fault, "start", {"do": "error_window"}).returncode == 0
    with pytest.raises(probe.NbdError, match="Input/output error"):
        client.read(4096)
    assert hook(fault, "stop", {"do": "error_window"}).returncode == 0
    client.read(4096)

    started = hook(fault, "start", {"do": "pause"})
    assert started.stdout.strip() == "pause: paused"
    with pytest.raises(TimeoutError):
        client.read(8192)  # hangs: the client gives up after its timeout
    assert hook(fault, "stop", {"do": "pause"}).stdout.strip() == "pause: resumed"
    fresh = probe.Client(f"tcp:127.0.0.1:{port}")
    fresh.read(8192)
    fresh.close()


def test_the_hook_refuses_what_it_cannot_do_with_a_reason(
    export: tuple[Path, int, Path],
) -> None:
    _, _, fault = export

    no_netns = hook(fault, "start", {"do": "bandwidth", "rate": "1mbit", "netns": ""})
    bad_verb = hook(fault, "begin", {"do": "pause"})
    bad_json = hook(fault, "start", "[")  # type: ignore[arg-type]

    assert no_netns.returncode == 3
    assert "needs the run's network namespace" in no_netns.stderr
    assert bad_verb.returncode == 2
    assert bad_json.returncode == 2


def test_bandwidth_shapes_lo_in_the_run_s_namespace(
    export: tuple[Path, int, Path],
) -> None:
    if os.geteuid() != 0 or shutil.which("tc") is None:
        pytest.skip("needs root and tc (a network namespace of its own)")
    _, _, fault = export
    name = f"reprogate-test-{uuid.uuid4().hex[:8]}"
    subprocess.run(["ip", "netns", "add", name], check=True, timeout=10)
    try:
        action = {"do": "bandwidth", "rate": "8mbit", "netns": f"/run/netns/{name}"}
        started = hook(fault, "start", action)
        shaped = _qdisc(name)
        stopped = hook(fault, "stop", action)
        after = _qdisc(name)
    finally:
        subprocess.run(["ip", "netns", "delete", name], check=False, timeout=10)

    assert started.returncode == 0, started.stderr
    assert "tbf" in shaped
    assert "rate 8Mbit" in shaped
    assert stopped.returncode == 0, stopped.stderr
    assert "tbf" not in after


def _qdisc(netns: str) -> str:
    return subprocess.run(
        ["ip", "netns", "exec", netns, "tc", "qdisc", "show", "dev", "lo"],
        capture_output=True, text=True, timeout=10, check=True,
    ).stdout  # fmt: skip
