"""Acceptance 4: a hostile harness that reads outside its directory, forks
without limit, writes a huge file, sleeps forever, opens a network connection
or prints 1 GB is contained, and the result records why it was stopped. After
every run no process of it is left."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from benchmarks.lib.sandbox import setup
from benchmarks.lib.sandbox.capabilities import host_support
from tests.benchmarks.sandbox.conftest import (
    Bundle,
    needs_bwrap,
    needs_process_limit,
    processes_of,
    processes_with,
)

pytestmark = needs_bwrap


def no_leftovers(result_uid: int, marker: str) -> None:
    assert processes_with(marker) == []
    if result_uid != os.geteuid():
        assert processes_of(result_uid) == []


def test_reads_and_writes_outside_its_directory_fail(
    make_bundle: Callable[[str], Bundle], tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOKEN-42")
    bundle = make_bundle("read_outside.sh")

    result = bundle.run(env={"SECRET_FILE": str(secret)})

    assert result.succeeded, result.stderr_tail
    assert "TOKEN-42" not in result.stdout_tail
    assert "READ " not in result.stdout_tail
    assert "WROTE " not in result.stdout_tail
    assert result.stdout_tail.count("DENIED") == 12
    assert not (tmp_path / "hacked").exists()
    assert result.isolation["filesystem"] == "private"
    assert set(result.stderr_tail.split()) <= {
        "bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc",
        "sandbox", "sbin", "sys", "tmp", "usr",
    }  # fmt: skip


@needs_process_limit
def test_fork_bomb_is_stopped_at_the_process_limit(
    make_bundle: Callable[[str], Bundle],
) -> None:
    bundle = make_bundle("fork_bomb.sh")
    result = bundle.run(processes=24, wall_seconds=60)

    assert result.stop_reason == "process_limit", result.message
    assert "24 processes" in result.message
    assert result.exit_code != 0  # stopped by the runner (None) or gave up itself
    assert result.duration_s < 60
    no_leftovers(result.isolation["uid"], bundle.mark)


def test_huge_file_is_stopped_at_the_file_size_limit(
    make_bundle: Callable[[str], Bundle],
) -> None:
    bundle = make_bundle("huge_file.sh")

    result = bundle.run(file_bytes=1 << 20)

    assert result.stop_reason == "file_limit", (result.message, result.stderr_tail)
    assert "wrote it all" not in result.stdout_tail
    assert (bundle.dir / "huge.bin").stat().st_size <= 1 << 20


def test_many_files_are_stopped_at_the_total_file_limit(
    make_bundle: Callable[[str], Bundle],
) -> None:
    bundle = make_bundle("many_files.sh")

    result = bundle.run(file_bytes=2 << 20, wall_seconds=60)

    assert result.stop_reason == "file_limit", result.message
    assert "of files" in result.message
    assert result.exit_code is None
    no_leftovers(result.isolation["uid"], bundle.mark)


def test_sleeping_forever_times_out_and_leaves_no_daemon(
    make_bundle: Callable[[str], Bundle],
) -> None:
    bundle = make_bundle("sleep_forever.sh")
    result = bundle.run(wall_seconds=1.5)

    assert result.stop_reason == "timeout"
    assert result.message == "stopped at the wall-clock limit of 1.5 s"
    assert result.exit_code is None
    assert result.progress == 0.25
    assert "sleeping" in result.stdout_tail
    no_leftovers(result.isolation["uid"], bundle.mark)


@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP listener on the host's loopback that records what reaches it."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    received: list[bytes] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                received.append(conn.recv(100) or b"connected")

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], received
    stop.set()
    thread.join(timeout=5)
    server.close()


def test_network_connection_fails_without_network(
    make_bundle: Callable[[str], Bundle], listener: tuple[int, list[bytes]]
) -> None:
    port, received = listener

    bundle = make_bundle("network.sh")

    result = bundle.run(env={"TARGET_PORT": str(port)})

    assert result.succeeded, result.stderr_tail
    assert "BLOCKED" in result.stdout_tail
    assert "CONNECTED" not in result.stdout_tail
    assert "NO-DNS" in result.stdout_tail
    time.sleep(0.3)
    assert received == []
    assert result.isolation["network"] == "none"


def test_network_when_allowed_is_recorded_as_host(
    make_bundle: Callable[[str], Bundle], listener: tuple[int, list[bytes]]
) -> None:
    port, received = listener

    bundle = make_bundle("network.sh")

    result = bundle.run(env={"TARGET_PORT": str(port)}, network=True)

    assert "CONNECTED" in result.stdout_tail
    assert result.isolation["network"] == "host"
    deadline = time.monotonic() + 5
    while not received and time.monotonic() < deadline:
        time.sleep(0.05)
    assert received == [b"exfiltrated"]


def test_printing_a_gigabyte_is_stopped_at_the_output_limit(
    make_bundle: Callable[[str], Bundle],
) -> None:
    lines: list[str] = []

    bundle = make_bundle("print_flood.sh")

    result = bundle.run(
        output_bytes=256 * 1024, on_line=lambda _s, line: lines.append(line)
    )

    assert result.stop_reason == "output_limit"
    assert result.output_truncated
    assert "256.0 KiB" in result.message
    assert result.exit_code is None
    assert sum(len(line) for line in lines) <= 256 * 1024
    assert result.output_bytes < 1 << 30
    assert len(result.stdout_tail) <= 64 * 1024 + 1000


def test_cpu_spinning_is_stopped_at_the_cpu_limit(
    make_bundle: Callable[[str], Bundle],
) -> None:
    bundle = make_bundle("cpu_burn.sh")
    result = bundle.run(cpu_seconds=1, wall_seconds=60)

    assert result.stop_reason == "cpu_limit", result.message
    assert result.duration_s < 30


def test_memory_hog_is_stopped_at_the_memory_limit(
    make_bundle: Callable[[str], Bundle],
) -> None:
    bundle = make_bundle("memory_hog.sh")
    result = bundle.run(memory_bytes=128 << 20, wall_seconds=60)

    assert result.stop_reason == "memory_limit", (result.message, result.stderr_tail)
    assert "allocated" not in result.stdout_tail.replace("allocating", "")
    no_leftovers(result.isolation["uid"], bundle.mark)


def test_links_left_among_outputs_are_removed(
    make_bundle: Callable[[str], Bundle],
) -> None:
    bundle = make_bundle("output_links.sh")

    result = bundle.run()

    assert result.succeeded, result.stderr_tail
    assert sorted(p.name for p in bundle.output.iterdir()) == ["metrics.json"]
    assert sum("removed" in note for note in result.isolation["notes"]) == 3


def test_cancel_kills_the_whole_sandbox(make_bundle: Callable[[str], Bundle]) -> None:
    seen: list[str] = []

    bundle = make_bundle("sleep_forever.sh")

    result = bundle.run(
        on_line=lambda _s, line: seen.append(line),
        should_cancel=lambda: "sleeping" in seen,
        poll_seconds=0.05,
    )

    assert result.stop_reason == "cancelled"
    assert result.exit_code is None
    assert result.duration_s < 10
    no_leftovers(result.isolation["uid"], bundle.mark)


needs_userns_lock = pytest.mark.skipif(
    not host_support().bwrap_disable_userns
    or (host_support().uid_drop and not host_support().bwrap_disable_userns_nested),
    reason="bubblewrap here cannot disable user namespaces (it needs 0.8 or later)",
)


@needs_userns_lock
def test_creating_a_user_namespace_fails(
    make_bundle: Callable[[str], Bundle],
) -> None:
    bundle = make_bundle("user_namespace.sh")

    result = bundle.run()

    assert result.succeeded, result.stderr_tail
    assert "CLI-REFUSED" in result.stdout_tail, result.stdout_tail
    assert "CALL-REFUSED" in result.stdout_tail, result.stdout_tail
    assert result.isolation["user_namespaces"] == "disabled"


@needs_userns_lock
def test_creating_a_user_namespace_fails_without_a_uid_to_drop_to(
    make_bundle: Callable[[str], Bundle], monkeypatch: pytest.MonkeyPatch
) -> None:
    support = replace(host_support(), uid_drop=False)
    monkeypatch.setattr(setup, "host_support", lambda: support)
    bundle = make_bundle("user_namespace.sh")

    result = bundle.run()

    assert result.isolation["uid_dropped"] is False
    assert result.succeeded, result.stderr_tail
    assert "CLI-REFUSED" in result.stdout_tail, result.stdout_tail
    assert "CALL-REFUSED" in result.stdout_tail, result.stdout_tail
    assert result.isolation["user_namespaces"] == "disabled"
