"""The embedded default's fault back-end: an nbdkit export (a sparse file,
served on 127.0.0.1 with nbdkit's ``error`` and ``pause`` filters) and the
pool policy's ``fault`` hook that drives it (docs/lab.md, "Fault hook").

The state directory holds what the export and the hook share:

    export.img    the exported file (sparse)
    fault.on      present = every request fails with EIO (the error filter's
                  ``error-file=``, checked by nbdkit on each request)
    pause.sock    the pause filter's control socket ('p' pauses, 'r' resumes)
    nbdkit.pid    the running nbdkit's pid

The hook is called ``HOOK start|stop <json>`` (the runner's calling
convention); the JSON is the scenario's action (``do``, ``at_s``, ``for_s``,
``rate``, ``endpoint``) with ``run``, ``endpoints`` and ``netns``:

- ``error_window`` and ``kill_tier``: ``start`` creates ``fault.on``, ``stop``
  removes it (this back-end kills the tier by failing all its I/O);
- ``pause``: ``start`` sends 'p' to the pause filter and waits for its 'P'
  (every request received afterwards hangs), ``stop`` sends 'r';
- ``bandwidth``: ``tc qdisc replace dev lo root tbf rate RATE`` inside the
  run's network namespace (``netns``, entered with ``nsenter --net=``), after
  ``ip link set lo mtu 1500`` there (a token bucket whose burst is below the
  MTU stalls the link); ``stop`` deletes the qdisc. Without a namespace (an
  endpoint on a unix socket, or none) or without ``tc`` it exits 3 saying so.

Exit status 0: done; 2: a bad call; 3: this back-end cannot do it here. One
line on stdout says what it did, on stderr why not. ``python -m
benchmarks.lib.lab.nbd_fault STATE_DIR start|stop JSON``; ``write_hook``
writes the executable the policy names. The embedded default
(``scripts/run``) supervises nbdkit on ``<var>/lab/fault-nbd`` and names the
endpoint (``demo-nbd``) and ``<var>/lab/hooks/fault`` in pool ``local``'s
policy (``fault_export_prepare``). No Django."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

IMAGE: Final = "export.img"
ERROR_FILE: Final = "fault.on"
PAUSE_SOCKET: Final = "pause.sock"
PID_FILE: Final = "nbdkit.pid"
IMAGE_BYTES: Final = 64 << 20
CONTROL_TIMEOUT_S: Final = 10.0
TOOL_TIMEOUT_S: Final = 10.0
START_TIMEOUT_S: Final = 10.0
VERBS: Final = ("start", "stop")
BURST: Final = "32kb"  # above lo's MTU of 1500 set first
LATENCY: Final = "400ms"


FAULT_ENDPOINT: Final = "demo-nbd"  # the endpoint's name in pool local's policy
STATE_DIR: Final = "lab/fault-nbd"  # under the var dir
HOOK_PATH: Final = "lab/hooks/fault"  # under the var dir


class Unable(Exception):
    """This back-end cannot perform the action here (exit status 3)."""


@dataclass(frozen=True)
class FaultExport:
    """The embedded default's export and hook (``fault_export_prepare``):
    ``argv`` to supervise, the endpoint's address, the hook's path; or the
    reason there is none (``argv`` empty)."""

    argv: list[str]
    endpoint: str = ""  # "tcp:127.0.0.1:PORT" where runs may reach it (root)
    hook: str = ""
    reason: str = ""

    def describe(self) -> str:
        """One line for the console."""
        if not self.argv:
            return f"no fault export ({self.reason}): failover runs fail here"
        where = (
            f"endpoint {FAULT_ENDPOINT} at {self.endpoint}"
            if self.endpoint
            else "no endpoint (not root: runs cannot reach it)"
        )
        return f"fault export (nbdkit) with {where}; fault hook {self.hook}"


def fault_export_prepare(var_dir: Path, *, root: bool) -> FaultExport:
    """The state directory and the hook under ``var_dir`` and the nbdkit
    command on a free loopback port, where nbdkit is installed; the endpoint
    only for an agent running as root (a run reaches a tcp endpoint through a
    network namespace of its own)."""
    if shutil.which("nbdkit") is None:
        return FaultExport([], reason="nbdkit is not installed")
    state = var_dir / STATE_DIR
    prepare(state)
    hook = write_hook(var_dir / HOOK_PATH, state)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    endpoint = f"tcp:127.0.0.1:{port}" if root and shutil.which("ip") else ""
    return FaultExport(nbdkit_argv(state, port), endpoint, str(hook))


def nbdkit_argv(state_dir: Path, port: int, host: str = "127.0.0.1") -> list[str]:
    """nbdkit in the foreground serving the state directory's export."""
    return [
        "nbdkit",
        "--foreground",
        "--exit-with-parent",
        "--ipaddr",
        host,
        "--port",
        str(port),
        "--pidfile",
        str(state_dir / PID_FILE),
        "--filter=pause",
        "--filter=error",
        "file",
        str(state_dir / IMAGE),
        "error-rate=100%",
        "error=EIO",
        f"error-file={state_dir / ERROR_FILE}",
        f"pause-control={state_dir / PAUSE_SOCKET}",
    ]


def prepare(state_dir: Path, size: int = IMAGE_BYTES) -> None:
    """The state directory (mode 0700) with a sparse export, no fault set."""
    state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    image = state_dir / IMAGE
    if not image.exists():
        with image.open("wb") as handle:
            handle.truncate(size)
    (state_dir / ERROR_FILE).unlink(missing_ok=True)
    (state_dir / PAUSE_SOCKET).unlink(missing_ok=True)


def start_export(state_dir: Path, port: int) -> subprocess.Popen[bytes]:
    """nbdkit serving the export on 127.0.0.1:``port``, once it answers
    (``Unable`` when nbdkit is missing or does not come up)."""
    if shutil.which("nbdkit") is None:
        raise Unable("nbdkit is not installed (apt-get install nbdkit)")
    prepare(state_dir)
    process = subprocess.Popen(  # noqa: S603 (a fixed command)
        nbdkit_argv(state_dir, port),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            why = (process.stderr.read() if process.stderr else b"").decode()
            raise Unable(f"nbdkit exited: {why.strip()[:300]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            time.sleep(0.05)
            continue
        if (state_dir / PAUSE_SOCKET).exists():
            return process
        time.sleep(0.05)
    stop_export(process)
    raise Unable(f"nbdkit did not answer on 127.0.0.1:{port}")


def stop_export(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if process.stderr is not None:
        process.stderr.close()


# -- the hook ------------------------------------------------------------------------


def _control(state_dir: Path, command: bytes) -> str:
    """One command to the pause filter; its answer ('P' or 'R')."""
    path = state_dir / PAUSE_SOCKET
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(CONTROL_TIMEOUT_S)
        try:
            conn.connect(str(path))
            conn.sendall(command)
            answer = conn.recv(1)
        except OSError as error:
            raise Unable(f"the pause filter's socket {path}: {error}") from None
    if answer != command.upper():
        raise Unable(f"the pause filter answered {answer!r} to {command!r}")
    return answer.decode()


def _in_netns(netns: str, argv: Sequence[str]) -> None:
    command = ["nsenter", f"--net={netns}", *argv]
    try:
        done = subprocess.run(  # noqa: S603 (fixed tools, checked arguments)
            command,
            capture_output=True,
            text=True,
            timeout=TOOL_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise Unable(f"{shlex.join(command)}: {error}") from None
    if done.returncode != 0:
        why = (done.stderr or done.stdout).strip()[:300]
        raise Unable(f"{shlex.join(command)} failed: {why}")


def _bandwidth(verb: str, action: Mapping[str, Any]) -> str:
    netns = str(action.get("netns") or "")
    if not netns:
        raise Unable(
            "bandwidth needs the run's network namespace (a tcp: endpoint); "
            "this run has none"
        )
    missing = [t for t in ("tc", "ip", "nsenter") if shutil.which(t) is None]
    if missing:
        raise Unable(f"bandwidth needs {', '.join(missing)} on the host")
    if verb == "start":
        rate = str(action.get("rate") or "")
        _in_netns(netns, ["ip", "link", "set", "lo", "mtu", "1500"])
        tbf = ["rate", rate, "burst", BURST, "latency", LATENCY]
        _in_netns(netns, ["tc", "qdisc", "replace", "dev", "lo", "root", "tbf", *tbf])
        return f"lo in {netns} shaped to {rate} (tbf)"
    _in_netns(netns, ["tc", "qdisc", "del", "dev", "lo", "root"])
    return f"lo in {netns} no longer shaped"


def perform(state_dir: Path, verb: str, action: Mapping[str, Any]) -> str:
    """Do ``verb`` of ``action``; what was done (``Unable``, ``ValueError``)."""
    if verb not in VERBS:
        raise ValueError(f"the verb must be start or stop, not {verb[:20]!r}")
    do = action.get("do")
    flag = state_dir / ERROR_FILE
    if do in ("error_window", "kill_tier"):
        if not state_dir.is_dir():
            raise Unable(f"no export state in {state_dir}")
        if verb == "start":
            flag.touch()
            return f"{do}: requests fail with EIO ({flag} created)"
        flag.unlink(missing_ok=True)
        return f"{do}: requests served again ({flag} removed)"
    if do == "pause":
        answer = _control(state_dir, b"p" if verb == "start" else b"r")
        return f"pause: {'paused' if answer == 'P' else 'resumed'}"
    if do == "bandwidth":
        return _bandwidth(verb, action)
    raise ValueError(f"unknown action {do!r:.40}")


def hook_main(argv: Sequence[str]) -> int:
    """``STATE_DIR VERB JSON`` → exit status (module docstring)."""
    if len(argv) != 3:
        print("usage: nbd_fault STATE_DIR start|stop JSON", file=sys.stderr)
        return 2
    state_dir, verb, text = Path(argv[0]), argv[1], argv[2]
    try:
        action = json.loads(text)
        if not isinstance(action, dict):
            raise ValueError("the argument must be a JSON object")
        print(perform(state_dir, verb, action))
    except Unable as error:
        print(f"fault hook: cannot: {error}", file=sys.stderr)
        return 3
    except ValueError as error:
        print(f"fault hook: {error}", file=sys.stderr)
        return 2
    return 0


def write_hook(path: Path, state_dir: Path, *, python: str = sys.executable) -> Path:
    """The executable a policy's ``hooks.fault`` names: this module for the
    state directory, with the interpreter and source tree running now."""
    root = Path(__file__).resolve().parents[3]
    script = (
        "#!/bin/sh\n"
        "# The embedded default's fault hook (benchmarks/lib/lab/nbd_fault.py).\n"
        f"PYTHONPATH={shlex.quote(str(root))} exec {shlex.quote(python)} -m "
        f'benchmarks.lib.lab.nbd_fault {shlex.quote(str(state_dir))} "$@"\n'
    )
    path.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
    part = path.with_name(f".{path.name}.new")
    part.write_text(script, encoding="utf-8")
    part.chmod(0o755)
    os.replace(part, path)
    return path


if __name__ == "__main__":
    sys.exit(hook_main(sys.argv[1:]))
