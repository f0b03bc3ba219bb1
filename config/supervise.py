"""The embedded runtime's supervisor (``scripts/run``): the web server, a Celery
worker for the default queue, beat, and the lab agent of the local lab pool, each in
a process group of its own.

- The lab agent is the one every lab host runs (``python -m reprogate_agent``),
  against this server on loopback: at each start the supervisor has a fresh host
  token issued for it (``manage.py embedded_agent_token``, the previous start's
  revoked) into a 0600 file under the var dir, which the agent reads
  (``REPROGATE_HOST_TOKEN_FILE``: never on a command line). The agent's
  environment is its own variables and the basics (``PATH``, locale, Python's),
  none of the server's secrets. Its host key lives under the var dir
  (``lab-agent/state``), and it reads the var dir's CDI folder after the host's.
- Where the host can (root, loop devices), the start attaches the demo's scratch
  block device (``benchmarks.lib.lab.scratch``: a loop device on
  ``lab/scratch0.img``, reused when one already holds it) and the token command
  puts ``reprogate.dev/block=scratch0`` in pool ``local``'s policy; the stop
  detaches it. Elsewhere the policy goes without it and the harnesses run
  file-backed.
- Where nbdkit is installed, it also supervises the fault export
  (``benchmarks.lib.lab.nbd_fault``: nbdkit with its error and pause filters on
  ``lab/fault-nbd/export.img``, on a free loopback port) and the token command
  names its hook (``lab/hooks/fault``) and, when the agent runs as root, its
  endpoint ``demo-nbd`` in pool ``local``'s policy: a failover scenario's
  faults are injected there.

- A process that exits, the web server's included, is started again after a
  back-off (1 s, 2 s, 4 s … at most 30 s; back to 1 s once it stayed up for a
  minute), with a line on the console (quoting its log's last line if it exited
  with an error).
- Each process writes to its own log file, ``$REPROGATE_VAR_DIR/logs/<name>.log``
  (a log over ``LOG_ROTATE_BYTES`` at a start is kept as ``<name>.log.1``); the
  console has one line per start, exit and restart, and, once ``/healthz``
  answers, the address to open.
- The state of every process (pid, restarts, last exit) is written to
  ``$REPROGATE_VAR_DIR/supervisor.json`` whenever it changes; ``/healthz`` reports it
  (portal/health.py). A write that fails (a full disk) is skipped: the next change
  writes it again.
- It keeps a connection open to each embedded SQLite database (``SqliteHold``): a
  database in WAL mode is read through its ``-shm`` file, which SQLite deletes when
  the last connection closes and must write again (32 KiB) at the next open. Held
  open, it stays, so pages and API reads keep working when the disk is full.
- SIGINT or SIGTERM (Ctrl-C) sends SIGTERM to every process, waits at most
  ``STOP_GRACE_S`` and then SIGKILLs what is left of their process groups (a Celery
  worker's warm shutdown would wait for a running benchmark to finish; its
  unacknowledged message comes back to the next worker).

Run as ``python -m config.supervise --host 127.0.0.1 --port 8000``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import BinaryIO

from accounts.lib.runtime import STATUS_FILE
from benchmarks.lib.lab.nbd_fault import FaultExport, fault_export_prepare
from benchmarks.lib.lab.scratch import (
    SCRATCH_DEVICE,
    Scratch,
    cdi_dir,
    scratch_attach,
    scratch_detach,
)
from benchmarks.lib.queues import EMBEDDED_POOL

BACKOFF_FIRST_S = 1.0
BACKOFF_MAX_S = 30.0
STABLE_AFTER_S = 60.0
STOP_GRACE_S = 8.0
POLL_S = 0.2
READY_PROBE_EVERY_S = 1.0
LOG_ROTATE_BYTES = 10 * 1024 * 1024
LOGS_DIR = "logs"
# Celery warns whenever a worker runs as root (uid 0). The embedded default runs on
# a developer's machine, often as root in a container, and this filter (a Python
# warnings filter for that one message, in the embedded processes' environment
# only) keeps the console for what matters. Production runs workers as a user.
ROOT_WARNING_FILTER = "ignore:You're running the worker with superuser privileges"
AGENT_DIR = "lab-agent"
AGENT_TOKEN_FILE = f"{AGENT_DIR}/host-token"
AGENT_STATE_DIR = f"{AGENT_DIR}/state"  # the agent's host key (host_key.pem)
DEFAULT_CDI_DIRS = "/etc/cdi:/var/run/cdi"  # as the agent reads them unset
AGENT_NAME = "embedded-lab"  # as benchmarks.services.embedded_agent names its token
# What the lab agent keeps of the supervisor's environment (no secret of the server).
AGENT_PASSED = frozenset(
    {"PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "PYTHONPATH", "VIRTUAL_ENV"}
)


@dataclass
class Program:
    name: str
    argv: list[str]
    log: Path | None = None  # its output (stdout and stderr); None: the console
    # Its own environment (``AGENT_PASSED`` kept of the supervisor's); None: all
    # of the supervisor's.
    env: dict[str, str] | None = None
    # Asked to stop before the others (it talks to them as it stops).
    stop_first: bool = False
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    restarts: int = 0
    failures_in_a_row: int = 0
    next_start_at: float | None = None
    last_exit: dict[str, object] | None = None

    @property
    def state(self) -> str:
        if self.process is not None and self.process.poll() is None:
            return "running"
        return "restarting" if self.next_start_at is not None else "stopped"


def backoff(failures_in_a_row: int) -> float:
    """Seconds before the next start after ``failures_in_a_row`` quick exits."""
    exponent = max(failures_in_a_row - 1, 0)
    return min(BACKOFF_FIRST_S * 2 ** min(exponent, 16), BACKOFF_MAX_S)


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with {returncode}"


def last_line(log: Path | None) -> str:
    """The last non-empty line of ``log`` (at most 300 characters), or ""."""
    if log is None:
        return ""
    try:
        with log.open("rb") as handle:
            handle.seek(max(log.stat().st_size - 4096, 0))
            tail = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def embedded_programs(
    host: str,
    port: int,
    var_dir: Path,
    env: dict[str, str] | None = None,
    fault: FaultExport | None = None,
) -> list[Program]:
    """What ``scripts/run`` supervises, each with its log under ``var_dir/logs``.
    The lab agent runs one run at a time: a pool host runs one benchmark at a
    time. ``env``: the supervisor's environment (the broker and work folder the
    agent is given are read there); ``fault``: the fault export (nbdkit) a
    failover scenario's faults are injected in, where the host has nbdkit."""
    celery = [sys.executable, "-m", "celery", "-A", "config"]
    worker = [*celery, "worker", "--loglevel=INFO"]
    schedule = var_dir / "celerybeat-schedule"
    programs = [
        Program(
            "web",
            [sys.executable, "manage.py", "runserver", "--noreload", f"{host}:{port}"],
        ),
        Program(
            "worker",
            [*worker, "--concurrency=2", "--queues=celery", "--hostname=embedded@%h"],
        ),
        Program(
            "lab-agent",
            [sys.executable, "-m", "reprogate_agent"],
            env=agent_environment(host, port, var_dir, env or {}),
            stop_first=True,
        ),
        Program(
            "beat",
            [*celery, "beat", "--loglevel=INFO", f"--schedule={schedule}"],
        ),
    ]
    if fault is not None and fault.argv:
        programs.append(Program("fault-export", fault.argv))
    for program in programs:
        program.log = var_dir / LOGS_DIR / f"{program.name}.log"
    return programs


def agent_environment(
    host: str, port: int, var_dir: Path, env: dict[str, str]
) -> dict[str, str]:
    """The embedded lab agent's variables (``reprogate_agent/options.py``): this
    server on loopback, the token file the start writes, the server's own broker
    (the embedded SQLite file unless ``CELERY_BROKER_URL`` names another), and
    ``RUNNER_WORK_DIR`` (else the system's temporary folder) for the runs, its
    state (the host key) under the var dir, and the CDI folders: the host's
    (``REPROGATE_CDI_DIRS`` or the default) and then the var dir's, where the
    demo's scratch device is named."""
    if env.get("CELERY_BROKER_URL_FILE"):
        broker = {"REPROGATE_BROKER_URL_FILE": env["CELERY_BROKER_URL_FILE"]}
    else:
        default = f"sqla+sqlite:///{var_dir / 'broker' / 'broker.sqlite3'}"
        broker = {"REPROGATE_BROKER_URL": env.get("CELERY_BROKER_URL") or default}
    work = env.get("RUNNER_WORK_DIR") or str(
        Path(tempfile.gettempdir()) / f"reprogate-lab-agent-{port}"
    )
    return {
        "REPROGATE_SERVER_URL": f"http://{link_host(host)}:{port}",
        "REPROGATE_HOST_TOKEN_FILE": str(var_dir / AGENT_TOKEN_FILE),
        **broker,
        "REPROGATE_AGENT_WORK_DIR": work,
        "REPROGATE_AGENT_NAME": AGENT_NAME,
        "REPROGATE_AGENT_STATE_DIR": str(var_dir / AGENT_STATE_DIR),
        "REPROGATE_CDI_DIRS": ":".join(
            [env.get("REPROGATE_CDI_DIRS") or DEFAULT_CDI_DIRS, str(cdi_dir(var_dir))]
        ),
    }


def agent_token_argv(
    var_dir: Path, scratch: bool = False, fault: FaultExport | None = None
) -> list[str]:
    """The command that issues the lab agent's token into its file (and puts
    the scratch device, the fault export's endpoint and hook in the pool's
    policy, or takes them out)."""
    faults = []
    if fault is not None and fault.endpoint:
        faults.append(f"--fault-endpoint={fault.endpoint}")
    if fault is not None and fault.hook:
        faults.append(f"--fault-hook={fault.hook}")
    return [
        sys.executable,
        "manage.py",
        "embedded_agent_token",
        f"--token-file={var_dir / AGENT_TOKEN_FILE}",
        f"--pool={EMBEDDED_POOL}",
        f"--host={AGENT_NAME}",
        *([f"--scratch-device={SCRATCH_DEVICE}"] if scratch else []),
        *faults,
    ]


def issue_agent_token(
    var_dir: Path,
    say: Callable[[str], None],
    scratch: bool = False,
    fault: FaultExport | None = None,
) -> bool:
    """A fresh host token for the lab agent, in its file (the previous start's
    revoked); False (said why) when it could not be issued."""
    done = subprocess.run(  # noqa: S603 (argv built here)
        agent_token_argv(var_dir, scratch, fault),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        say(
            "==> the lab agent's host token could not be issued: "
            + (lines[-1][:300] if lines else f"exit {done.returncode}")
        )
        return False
    return True


def link_host(host: str) -> str:
    """The address a browser on this machine opens for a server bound to
    ``host`` (all interfaces: the loopback)."""
    if host in ("0.0.0.0", ""):  # noqa: S104 - a comparison, not a bind
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


@dataclass
class SqliteHold:
    """An idle connection to each of ``paths`` once the file exists (no
    transaction stays open: checkpoints go on)."""

    paths: list[Path]
    connections: dict[Path, sqlite3.Connection] = field(default_factory=dict)

    def poll(self) -> None:
        for path in self.paths:
            if path in self.connections or not path.is_file():
                continue
            address = f"file:{urllib.request.pathname2url(str(path))}?mode=rw"
            connection = None
            try:
                connection = sqlite3.connect(
                    address, uri=True, isolation_level=None, timeout=5
                )
                connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
            except sqlite3.Error:
                if connection is not None:
                    connection.close()
                continue  # tried again at the next poll
            self.connections[path] = connection

    def close(self) -> None:
        for connection in self.connections.values():
            connection.close()
        self.connections.clear()


def embedded_databases(var_dir: Path, env: dict[str, str]) -> list[Path]:
    """The embedded default's SQLite files (config/settings.py): the database
    unless ``DATABASE_URL`` names another, the broker unless
    ``CELERY_BROKER_URL`` does."""
    paths = []
    if not env.get("DATABASE_URL") and not env.get("DATABASE_URL_FILE"):
        paths.append(var_dir / "db.sqlite3")
    if not env.get("CELERY_BROKER_URL") and not env.get("CELERY_BROKER_URL_FILE"):
        paths.append(var_dir / "broker" / "broker.sqlite3")
    return paths


@dataclass
class Supervisor:
    programs: list[Program]
    status_path: Path
    stop_grace_s: float = STOP_GRACE_S
    say: Callable[[str], None] = field(default=lambda line: print(line, flush=True))
    env: dict[str, str] | None = None
    # Probed until it answers (any status); then ``ready_line`` goes to the console.
    ready_url: str | None = None
    ready_line: str = ""
    hold: SqliteHold = field(default_factory=lambda: SqliteHold([]))
    _ready_probed_at: float = 0.0
    _stopping: bool = False
    _started_at: float = field(default_factory=time.time)

    # --- processes ----------------------------------------------------------------
    def _environment(self, program: Program | None = None) -> dict[str, str]:
        env = dict(os.environ if self.env is None else self.env)
        if program is not None and program.env is not None:
            env = {
                k: v for k, v in env.items() if k in AGENT_PASSED or k.startswith("LC_")
            }
            env.update(program.env)
        filters = [f for f in env.get("PYTHONWARNINGS", "").split(",") if f]
        env["PYTHONWARNINGS"] = ",".join([*filters, ROOT_WARNING_FILTER])
        return env

    def _start(self, program: Program) -> None:
        output = _open_log(program.log) if program.log is not None else None
        try:
            program.process = subprocess.Popen(  # noqa: S603 (argv built here)
                program.argv,
                env=self._environment(program),
                start_new_session=True,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT if output is not None else None,
            )
        finally:
            if output is not None:
                output.close()
        program.started_at = time.monotonic()
        program.next_start_at = None
        again = f" again (restart {program.restarts}; " if program.restarts else " ("
        where = f"; log: {program.log}" if program.log is not None else ""
        self.say(f"==> {program.name} started{again}pid {program.process.pid}{where})")

    def _reap(self, program: Program, returncode: int) -> None:
        now = time.monotonic()
        program.last_exit = {
            "code": returncode,
            "description": describe_exit(returncode),
            "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        }
        if now - program.started_at >= STABLE_AFTER_S:
            program.failures_in_a_row = 0
        program.failures_in_a_row += 1
        delay = backoff(program.failures_in_a_row)
        program.next_start_at = now + delay
        # What a program said before it exited (not when killed: a line of work)
        line = last_line(program.log) if returncode > 0 else ""
        self.say(
            f"==> {program.name} {describe_exit(returncode)}; restarting in {delay:g} s"
            + (f" (its log's last line: {line})" if line else "")
        )

    def step(self) -> bool:
        """Reap exited processes and start those that are due; True if a state
        changed."""
        changed = False
        for program in self.programs:
            if program.process is not None and program.next_start_at is None:
                returncode = program.process.poll()
                if returncode is not None:
                    # What the dead leader leaves (a worker's pool children) goes too.
                    _signal_group(program.process, signal.SIGKILL)
                    self._reap(program, returncode)
                    changed = True
            if (
                not self._stopping
                and program.next_start_at is not None
                and time.monotonic() >= program.next_start_at
            ):
                program.restarts += 1
                self._start(program)
                changed = True
        return changed

    def stop(self) -> None:
        """TERM every process group, wait at most the grace, KILL what is left.
        The programs that talk to the others (``stop_first``: the lab agent, whose
        last call tells the web server it is offline) are asked first and given
        half the grace alone."""
        live = [(p, p.process) for p in self.programs if p.process is not None]
        started = time.monotonic()
        first = [(p, process) for p, process in live if p.stop_first]
        if first:
            _terminate(first)
            _wait_groups(first, started + self.stop_grace_s / 2)
        _terminate([(p, process) for p, process in live if not p.stop_first])
        _wait_groups(live, started + self.stop_grace_s)
        for program, process in live:
            if _group_alive(process):
                self.say(
                    f"==> {program.name} was still busy after "
                    f"{self.stop_grace_s:g} s; stopping it now (a task it had not "
                    "finished runs again after the next start)"
                )
                _signal_group(process, signal.SIGKILL)
        for program, process in live:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5)
            program.next_start_at = None

    # --- status -------------------------------------------------------------------
    def status(self) -> dict[str, object]:
        programs: dict[str, object] = {}
        for program in self.programs:
            entry: dict[str, object] = {
                "state": program.state,
                "pid": program.process.pid if program.process else None,
                "restarts": program.restarts,
                "last_exit": program.last_exit,
            }
            if program.next_start_at is not None:
                entry["restart_in_s"] = round(
                    max(program.next_start_at - time.monotonic(), 0.0), 1
                )
            programs[program.name] = entry
        return {
            "supervisor_pid": os.getpid(),
            "stopping": self._stopping,
            "updated_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "programs": programs,
        }

    def write_status(self) -> bool:
        """Write the status file; False if the write failed (a full disk: the
        file keeps its last state, and the supervisor goes on)."""
        scratch = self.status_path.with_name(f".{self.status_path.name}.{os.getpid()}")
        try:
            self.status_path.parent.mkdir(parents=True, exist_ok=True)
            scratch.write_text(json.dumps(self.status(), indent=2), encoding="utf-8")
            os.replace(scratch, self.status_path)
        except OSError:
            with contextlib.suppress(OSError):
                scratch.unlink(missing_ok=True)
            return False
        return True

    def periodic(self) -> None:
        """Every ``READY_PROBE_EVERY_S``: hold the databases that appeared, and
        probe the web until it is ready."""
        now = time.monotonic()
        if now - self._ready_probed_at < READY_PROBE_EVERY_S:
            return
        self._ready_probed_at = now
        self.hold.poll()
        self.probe_ready()

    def probe_ready(self) -> None:
        """Once the web answers ``ready_url`` (any status), say ``ready_line``."""
        if self.ready_url is None:
            return
        try:
            with urllib.request.urlopen(self.ready_url, timeout=2):  # noqa: S310
                pass
        except urllib.error.HTTPError:
            pass  # it answers: /healthz says what is wrong
        except (OSError, ValueError):
            return
        self.say(self.ready_line)
        self.ready_url = None

    # --- main loop ----------------------------------------------------------------
    def request_stop(self, signum: int, _frame: FrameType | None) -> None:
        if not self._stopping:
            self.say(f"==> {signal.Signals(signum).name}: stopping")
        self._stopping = True

    def run(self) -> int:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, self.request_stop)
        try:
            self.hold.poll()
            for program in self.programs:
                self._start(program)
            status_written = self.write_status()
            while not self._stopping:
                if self.step() or not status_written:
                    status_written = self.write_status()
                self.periodic()
                time.sleep(POLL_S)
        finally:
            self._stopping = True
            self.write_status()
            self.stop()
            self.hold.close()
            self.status_path.unlink(missing_ok=True)
        return 0


def _terminate(live: list[tuple[Program, subprocess.Popen[bytes]]]) -> None:
    for _program, process in live:
        # The leader only: a Celery worker stops its own pool children.
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)


def _wait_groups(
    live: list[tuple[Program, subprocess.Popen[bytes]]], deadline: float
) -> None:
    """Until ``deadline`` or every group of ``live`` is gone."""
    while time.monotonic() < deadline and any(
        _group_alive(process) for _, process in live
    ):
        for _program, process in live:
            if process.poll() is not None:
                # What an exited leader left behind has nobody to stop it.
                _signal_group(process, signal.SIGKILL)
        time.sleep(0.1)


def _open_log(path: Path) -> BinaryIO | None:
    """``path`` for appending, the previous log kept as ``<name>.1`` once it grew
    over ``LOG_ROTATE_BYTES``; None (the console) if it cannot be opened."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            if path.stat().st_size > LOG_ROTATE_BYTES:
                os.replace(path, path.with_name(f"{path.name}.1"))
        return path.open("ab")
    except OSError:
        return None


def _signal_group(process: subprocess.Popen[bytes] | None, signum: int) -> None:
    if process is None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)


def _group_alive(process: subprocess.Popen[bytes] | None) -> bool:
    """Whether any process of the group ``process`` leads is left (the pool
    children of a worker whose main process is gone included)."""
    if process is None:
        return False
    process.poll()  # reap the leader, or it stays a zombie member of its group
    try:
        os.killpg(process.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--var-dir", type=Path, required=True)
    parser.add_argument(
        "--ready-note",
        default="",
        help="added to the line that says where ReproGate is ready (the accounts)",
    )
    args = parser.parse_args(argv)
    var_dir = args.var_dir.resolve()
    url = f"http://{link_host(args.host)}:{args.port}"
    note = f" — {args.ready_note}" if args.ready_note else ""
    say = print_line
    scratch = attach_scratch(var_dir, say)
    fault = fault_export_prepare(var_dir, root=os.geteuid() == 0)
    say(f"==> {fault.describe()}")
    if not issue_agent_token(var_dir, say, scratch.device is not None, fault):
        detach_scratch(var_dir, say)
        return 1
    supervisor = Supervisor(
        embedded_programs(args.host, args.port, var_dir, dict(os.environ), fault),
        status_path=var_dir / STATUS_FILE,
        hold=SqliteHold(embedded_databases(var_dir, dict(os.environ))),
        ready_url=f"{url}/healthz",
        ready_line=(
            f"==> ReproGate is ready at {url}{note}; logs in {var_dir / LOGS_DIR}/, "
            f"e-mails in {var_dir / 'mail'}/; Ctrl-C stops it"
        ),
    )
    try:
        return supervisor.run()
    finally:
        detach_scratch(var_dir, say)


def print_line(line: str) -> None:
    print(line, flush=True)


def attach_scratch(var_dir: Path, say: Callable[[str], None]) -> Scratch:
    """The demo's scratch block device for pool ``local``, where the host can
    (``benchmarks.lib.lab.scratch``), said on the console either way."""
    scratch = scratch_attach(var_dir)
    say(f"==> {scratch.describe()}")
    return scratch


def detach_scratch(var_dir: Path, say: Callable[[str], None]) -> None:
    for device in scratch_detach(var_dir):
        say(f"==> {SCRATCH_DEVICE} ({device}) detached")


if __name__ == "__main__":
    sys.exit(main())
