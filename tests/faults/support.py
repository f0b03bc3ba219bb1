"""Shared pieces of the fault-injection tests: free loopback ports, waiting for a
condition with a deadline, timing how long the product takes to serve again, and
the skip that CI (``CI=true``) turns into a failure."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any, NoReturn

import pytest


def unavailable(reason: str) -> NoReturn:
    """Skip: the fault cannot be produced here. On CI that is a failure."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"fault injection is required on CI: {reason}")
    pytest.skip(reason)


def mount(argv: list[str]) -> bool:
    """Run ``mount``/``umount`` ``argv`` as root, or with ``sudo -n``; True if
    it worked."""
    for prefix in ([], ["sudo", "-n"]):
        try:
            done = subprocess.run(
                [*prefix, *argv], capture_output=True, timeout=10, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            return True
    return False


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for(
    condition: Callable[[], Any],
    timeout: float,
    explain: Callable[[], str] = lambda: "",
    step: float = 0.1,
) -> Any:
    """The first true value of ``condition()`` within ``timeout`` seconds, else
    the test fails with ``explain()``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"not within {timeout:.0f} s: {explain()}")
        time.sleep(step)


def report(fault: str, seconds: float) -> None:
    """One line per measured recovery, shown with ``pytest -s``."""
    print(f"\n[fault] {fault} after {seconds:.2f} s", flush=True)


def healthz(port: int, timeout: float = 3.0) -> tuple[int, dict[str, Any]] | None:
    """``/healthz``'s status and body, None while nothing answers."""
    url = f"http://127.0.0.1:{port}/healthz"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        try:
            return error.code, json.load(error)
        except ValueError:
            return error.code, {}
    except (OSError, ValueError):
        return None
