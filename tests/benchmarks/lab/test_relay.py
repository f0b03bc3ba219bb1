"""The endpoint relays on their own: a unix relay's socket belongs to the run's
uid alone and counts what it carries; a target that is down is counted, not
fatal; a tcp relay's network namespace is gone once the run's relays close."""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import threading
from pathlib import Path

import pytest

from benchmarks.lib.sandbox.extras import EndpointTarget
from benchmarks.lib.sandbox.relay import open_endpoints


def echo_server(path: Path) -> socket.socket:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen()

    def serve() -> None:
        with server.accept()[0] as conn:
            while data := conn.recv(1024):
                conn.sendall(data.upper())

    threading.Thread(target=serve, daemon=True).start()
    return server


def test_a_unix_relay_carries_and_counts(tmp_path: Path) -> None:
    target = tmp_path / "target.sock"
    server = echo_server(target)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    net = open_endpoints(
        (EndpointTarget("echo", f"unix:{target}"),), run_dir, os.getuid(), os.getgid()
    )
    try:
        relay_socket = run_dir / "endpoint0.sock"
        assert stat.S_IMODE(relay_socket.stat().st_mode) == 0o600
        assert net.binds[-3:] == ["--bind", str(relay_socket), str(target)]
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(str(relay_socket))
            client.sendall(b"hello")
            assert client.recv(1024) == b"HELLO"
    finally:
        net.close()
        server.close()
    [record] = net.records()
    assert record["via"] == "unix-relay"
    assert (record["connections"], record["bytes_in"], record["bytes_out"]) == (1, 5, 5)


def test_a_target_that_is_down_is_counted(tmp_path: Path) -> None:
    net = open_endpoints(
        (EndpointTarget("gone", f"unix:{tmp_path / 'nothing.sock'}"),),
        tmp_path,
        os.getuid(),
        os.getgid(),
    )
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(str(tmp_path / "endpoint0.sock"))
            assert client.recv(1024) == b""  # closed at once
    finally:
        net.close()
    assert net.records()[0]["refused_by_target"] == 1


@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("ip"), reason="needs root and iproute2"
)
def test_the_run_s_network_namespace_is_removed(tmp_path: Path) -> None:
    net = open_endpoints((EndpointTarget("kv", "tcp:10.77.0.1:4420"),), tmp_path, 0, 0)
    name = net.netns
    assert name is not None
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    assert name in listed.stdout
    addresses = subprocess.run(
        ["ip", "-n", name, "-o", "addr"], capture_output=True, text=True
    ).stdout
    assert "10.77.0.1/32" in addresses  # the target's address, on lo only
    net.close()
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    assert name not in listed.stdout
