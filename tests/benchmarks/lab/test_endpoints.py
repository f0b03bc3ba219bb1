"""Endpoints: an nbdkit export on a unix socket and one on 127.0.0.1 are the
only addresses a sandboxed harness reaches; fio's ``nbd`` engine reads and
writes through the allowed one, another port and any other address are
refused, and a policy without endpoints leaves the harness no network."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from benchmarks.lib.lab.devices import policy_extras
from benchmarks.lib.sandbox import HarnessResult, SandboxLimits, run_harness
from benchmarks.lib.sandbox.capabilities import host_support


def _reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root (a per-run network namespace)"
    if not host_support().bwrap_works:
        return "needs bubblewrap"
    missing = [t for t in ("nbdkit", "fio", "ip") if not shutil.which(t)]
    if missing:
        return f"needs {', '.join(missing)} (apt-get install -y nbdkit fio iproute2)"
    return None


pytestmark = pytest.mark.skipif(_reason() is not None, reason=_reason() or "")

# fio through each URI given, then bare TCP connections to the given addresses.
HARNESS = """#!/bin/sh
for uri in $URIS; do
  if fio --name=probe --ioengine=nbd --uri="$uri" --rw=randrw --bs=4k --size=1M \\
       --io_size=256k --output-format=terse >/tmp/fio.out 2>/tmp/fio.err; then
    echo "fio $uri ok"
  else
    echo "fio $uri failed: $(head -c 200 /tmp/fio.err | tr '\\n' ' ')"
  fi
done
python3 -c '
import os, socket
for address in os.environ["CONNECT"].split():
    host, port = address.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=3).close()
        print("connect", address, "ok")
    except OSError as e:
        print("connect", address, "failed:", e.strerror or e)
'
echo "endpoints=$REPROGATE_ENDPOINTS"
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError("nbdkit did not come up")
        time.sleep(0.05)


def _tcp_up(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


@pytest.fixture
def nbd(tmp_path: Path) -> Iterator[dict[str, object]]:
    """Three nbdkit memory exports: a unix socket, 127.0.0.1:A and :B."""
    sock = tmp_path / "nbd.sock"
    allowed, other = free_port(), free_port()
    servers = [
        ["nbdkit", "-f", "-U", str(sock), "memory", "16M"],
        ["nbdkit", "-f", "-i", "127.0.0.1", "-p", str(allowed), "memory", "16M"],
        ["nbdkit", "-f", "-i", "127.0.0.1", "-p", str(other), "memory", "16M"],
    ]
    started = [subprocess.Popen(argv) for argv in servers]
    try:
        wait_for(sock.exists)
        wait_for(lambda: _tcp_up(allowed) and _tcp_up(other))
        yield {"socket": str(sock), "allowed": allowed, "other": other}
    finally:
        for process in started:
            process.terminate()
            process.wait(timeout=10)


def run(
    tmp_path: Path, policy: Mapping[str, object], uris: str, connect: str
) -> HarnessResult:
    bundle = tmp_path / "bundle"
    bundle.mkdir(exist_ok=True)
    (bundle / "run.sh").write_text(HARNESS)
    extras, _ = policy_extras(policy, root=True, environ={}, dirs=[tmp_path / "none"])
    return run_harness(
        bundle_dir=bundle,
        entrypoint="run.sh",
        output_dir=tmp_path / "out",
        env={"URIS": uris, "CONNECT": connect},
        limits=SandboxLimits(wall_seconds=120),
        extras=extras,
    )


def outcome(result: HarnessResult, prefix: str) -> str:
    for line in result.stdout_tail.splitlines():
        if line.startswith(prefix + " "):
            return line[len(prefix) + 1 :]
    raise AssertionError(f"no line for {prefix!r} in {result.stdout_tail!r}")


def test_only_the_allowed_tcp_endpoint_answers(
    tmp_path: Path, nbd: dict[str, object]
) -> None:
    allowed, other = nbd["allowed"], nbd["other"]
    policy = {
        "schema": "reprogate.lab-policy/v1",
        "endpoints": [{"name": "kv-tier", "address": f"tcp:127.0.0.1:{allowed}"}],
    }
    uris = f"nbd://127.0.0.1:{allowed} nbd://127.0.0.1:{other}"
    connect = f"127.0.0.1:{other} 127.0.0.2:{allowed} 10.255.0.1:{allowed}"
    result = run(tmp_path, policy, uris, connect)
    assert result.succeeded, result.stderr_tail
    assert outcome(result, f"fio nbd://127.0.0.1:{allowed}") == "ok"
    assert outcome(result, f"fio nbd://127.0.0.1:{other}").startswith("failed")
    assert "refused" in outcome(result, f"connect 127.0.0.1:{other}")
    assert outcome(result, f"connect 127.0.0.2:{allowed}").startswith("failed")
    assert "unreachable" in outcome(result, f"connect 10.255.0.1:{allowed}")
    assert result.isolation["network"] == "endpoints"
    [record] = result.isolation["endpoints"]
    assert record["via"] == "netns-relay"
    # fio's 256 KiB of reads and writes went through the relay
    assert record["bytes_in"] + record["bytes_out"] > 256 * 1024
    assert record["connections"] >= 1


def test_a_unix_socket_endpoint_without_any_network(
    tmp_path: Path, nbd: dict[str, object]
) -> None:
    allowed = nbd["allowed"]
    policy = {
        "schema": "reprogate.lab-policy/v1",
        "endpoints": [{"name": "nbd0", "address": f"unix:{nbd['socket']}"}],
    }
    uris = f"nbd+unix:///?socket={nbd['socket']} nbd://127.0.0.1:{allowed}"
    result = run(tmp_path, policy, uris, f"127.0.0.1:{allowed}")
    assert outcome(result, f"fio nbd+unix:///?socket={nbd['socket']}") == "ok"
    assert outcome(result, f"fio nbd://127.0.0.1:{allowed}").startswith("failed")
    assert outcome(result, f"connect 127.0.0.1:{allowed}").startswith("failed")
    assert result.isolation["endpoints"][0]["via"] == "unix-relay"
    said = result.stdout_tail.split("endpoints=", 1)[1].splitlines()[0]
    assert json.loads(said) == {"nbd0": f"unix:{nbd['socket']}"}


def test_no_endpoints_means_no_network(tmp_path: Path, nbd: dict[str, object]) -> None:
    allowed = nbd["allowed"]
    result = run(tmp_path, {}, f"nbd://127.0.0.1:{allowed}", f"127.0.0.1:{allowed}")
    assert outcome(result, f"fio nbd://127.0.0.1:{allowed}").startswith("failed")
    assert outcome(result, f"connect 127.0.0.1:{allowed}").startswith("failed")
    assert result.isolation["network"] == "none"
