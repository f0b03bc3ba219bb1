"""``run_harness``: run a bundle's entrypoint in the sandbox, watch it, stop it.

The loop reads stdout and stderr as they come (``streams.OutputCapture``) and,
every ``poll_seconds``, checks cancellation, the wall clock and the run's
resource use (cgroup or uid accounting, disk use of its directories). Whatever
ends the run, every process of it is killed before returning (no orphans), and
the result says why it stopped in ``stop_reason`` and a human ``message``.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from benchmarks.lib.sandbox import limits as reasons
from benchmarks.lib.sandbox.cgroups import Cgroup
from benchmarks.lib.sandbox.command import SandboxSetupError
from benchmarks.lib.sandbox.extras import SandboxExtras
from benchmarks.lib.sandbox.limits import HarnessResult, SandboxLimits
from benchmarks.lib.sandbox.setup import Plan, plan_prepare
from benchmarks.lib.sandbox.streams import FORK_FAILURES, LineCallback, OutputCapture
from benchmarks.lib.sandbox.uids import uid_count, uid_cpu_seconds

READ_CHUNK: Final = 64 * 1024
DISK_CHECK_SECONDS: Final = 1.0
DRAIN_SECONDS: Final = 2.0
MAX_NEW_ENTRIES: Final = 100_000
_MARKERS: Final = (  # stderr of a failed harness -> the limit that was probably hit
    (reasons.MEMORY_LIMIT, ("MemoryError", "Cannot allocate memory", "bad_alloc")),
    (reasons.FILE_LIMIT, ("File too large", "No space left on device")),
    (reasons.PROCESS_LIMIT, FORK_FAILURES),
)


def _size(number: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if number < 1024 or unit == "GiB":
            return f"{number:g} {unit}" if unit == "bytes" else f"{number:.1f} {unit}"
        number /= 1024
    return str(number)


def _disk_use(dirs: list[Path], cap: int) -> tuple[int, int]:
    """(bytes allocated, entries) below ``dirs``; stops counting at ``cap`` entries."""
    used = entries = 0
    for top in dirs:
        for root, subdirs, files in os.walk(top, followlinks=False):
            for name in (*subdirs, *files):
                entries += 1
                with contextlib.suppress(OSError):
                    used += os.lstat(os.path.join(root, name)).st_blocks * 512
                if entries > cap:
                    return used, entries
    return used, entries


class _Watch:
    """Resource checks between reads; ``check`` returns (reason, message) to stop."""

    def __init__(
        self,
        plan: Plan,
        capture: OutputCapture,
        limits: SandboxLimits,
        started: float,
        should_cancel: Callable[[], bool] | None,
    ) -> None:
        self.plan, self.limits, self.started = plan, limits, started
        self.capture = capture
        self.should_cancel = should_cancel
        self.disk_base, self.entries_base = _disk_use(plan.watched_dirs, 10**9)
        self.next_disk = started

    def cpu_seconds(self) -> float | None:
        if self.plan.cgroup is not None:
            value = self.plan.cgroup.cpu_seconds()
            if value is not None:
                return value
        return uid_cpu_seconds(self.plan.lease.uid) if self.plan.lease else None

    def process_limit_hit(self) -> bool:
        """A fork failed at the limit: the pids cgroup counts it; without one,
        RLIMIT_NPROC on the run's uid does and the harness's stderr tells."""
        cgroup, lease = self.plan.cgroup, self.plan.lease
        if cgroup is not None and "pids" in cgroup.enforces:
            return cgroup.process_limit_hits() > 0
        if self.capture.fork_failure is not None:
            return True
        return lease is not None and uid_count(lease.uid) >= self.limits.processes

    def check(self, now: float) -> tuple[str, str] | None:
        limits, cgroup = self.limits, self.plan.cgroup
        if self.should_cancel is not None and self.should_cancel():
            return reasons.CANCELLED, "cancelled by the runner"
        if now - self.started > limits.wall_seconds:
            return (
                reasons.TIMEOUT,
                f"stopped at the wall-clock limit of {limits.wall_seconds:g} s",
            )
        if cgroup is not None and cgroup.oom_kills():
            return reasons.MEMORY_LIMIT, (
                f"stopped: it exceeded the memory limit of "
                f"{_size(limits.memory_bytes)} (OOM kill)"
            )
        if self.process_limit_hit():
            return reasons.PROCESS_LIMIT, (
                f"stopped: it reached the limit of {limits.processes} processes"
            )
        cpu = self.cpu_seconds()
        if cpu is not None and cpu > limits.cpu_seconds:
            return reasons.CPU_LIMIT, (
                f"stopped: it used {cpu:.1f} s of CPU time, over the "
                f"limit of {limits.cpu_seconds:g} s"
            )
        if now >= self.next_disk:
            self.next_disk = now + DISK_CHECK_SECONDS
            cap = self.entries_base + MAX_NEW_ENTRIES
            used, entries = _disk_use(self.plan.watched_dirs, cap)
            if entries > cap:
                return (
                    reasons.FILE_LIMIT,
                    f"stopped: it created over {MAX_NEW_ENTRIES} files",
                )
            if used - self.disk_base > limits.file_bytes:
                return reasons.FILE_LIMIT, (
                    f"stopped: it wrote more than {_size(limits.file_bytes)} of files"
                )
        return None


def _signal_of(code: int) -> int | None:
    if code < 0:
        return -code
    # shells and bwrap report a child killed by signal N as status 128+N
    return code - 128 if 128 < code <= 128 + 64 else None


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _classify(
    code: int, plan: Plan, limits: SandboxLimits, stderr: str, watch: _Watch
) -> tuple[str, str]:
    """Why a harness that ended by itself ended."""
    cgroup, number = plan.cgroup, _signal_of(code)
    if cgroup is not None and cgroup.oom_kills():
        return reasons.MEMORY_LIMIT, (
            f"a process was killed for exceeding the memory "
            f"limit of {_size(limits.memory_bytes)}; exit status {code}"
        )
    if number == signal.SIGXCPU:
        return (
            reasons.CPU_LIMIT,
            f"killed by SIGXCPU: CPU time limit of {limits.cpu_seconds:g} s",
        )
    if number == signal.SIGXFSZ:
        return (
            reasons.FILE_LIMIT,
            f"killed by SIGXFSZ: file size limit of {_size(limits.file_bytes)}",
        )
    cpu = watch.cpu_seconds()
    if number == signal.SIGKILL and cpu is not None and cpu >= limits.cpu_seconds:
        return (
            reasons.CPU_LIMIT,
            f"killed at the CPU time limit of {limits.cpu_seconds:g} s",
        )
    if code != 0 and watch.process_limit_hit():
        return reasons.PROCESS_LIMIT, (
            f"exit status {code} after forks failed at the limit "
            f"of {limits.processes} processes"
        )
    if code != 0:
        for reason, markers in _MARKERS:
            if any(marker in stderr for marker in markers):
                return (
                    reason,
                    f"exit status {code}; its error output suggests the {reason}",
                )
    if code < 0:
        return reasons.SIGNAL, f"killed by {_signal_name(-code)}"
    if code == 0:
        return reasons.EXITED, "exited successfully (status 0)"
    return reasons.EXITED, f"exited with status {code}"


def _read_ready(
    sel: selectors.BaseSelector, timeout: float, capture: OutputCapture
) -> None:
    for key, _ in sel.select(timeout):
        try:
            data = os.read(key.fd, READ_CHUNK)
        except BlockingIOError:
            continue
        if data:
            capture.feed(key.data, data)
        else:
            sel.unregister(key.fd)


def _error(
    message: str, started: float, isolation: dict[str, Any] | None = None
) -> HarnessResult:
    return HarnessResult(
        exit_code=None,
        stop_reason=reasons.SANDBOX_ERROR,
        message=message,
        isolation=isolation or {"method": None, "notes": []},
        duration_s=round(time.monotonic() - started, 3),
        stdout_tail="",
        stderr_tail="",
        output_truncated=False,
        progress=None,
    )


def run_harness(
    *,
    bundle_dir: Path,
    entrypoint: str,
    output_dir: Path,
    env: Mapping[str, str],
    limits: SandboxLimits,
    on_line: LineCallback | None = None,
    should_cancel: Callable[[], bool] | None = None,
    poll_seconds: float = 0.2,
    method: str | None = None,
    extras: SandboxExtras | None = None,
    on_start: Callable[[Cgroup | None], None] | None = None,
    on_network: Callable[[str], None] | None = None,
) -> HarnessResult:
    """Run ``entrypoint`` of the bundle in ``bundle_dir`` (a fresh copy, made
    writable for the harness) with ``output_dir`` as REPROGATE_OUTPUT_DIR.
    ``method`` forces "bwrap", "unshare" or "none" (default: the best here);
    ``on_start`` is told the run's cgroup (None without one) once the harness
    started (the runner's telemetry sampler reads it); before it,
    ``on_network`` is told the run's network namespace (``/run/netns/NAME``)
    when its endpoints have one (a scenario's fault hook shapes it).

    The harness's cwd is the bundle directory (``/sandbox/bundle`` under
    bubblewrap) and REPROGATE_OUTPUT_DIR is set to where ``output_dir`` is seen
    inside (``/sandbox/output``), replacing any value in ``env``. During the run
    both directories belong to the run's uid; afterwards to the runner again,
    with links and special files removed from ``output_dir``."""
    started = time.monotonic()
    poll_seconds = max(0.01, poll_seconds)
    try:
        plan = plan_prepare(
            bundle_dir=bundle_dir,
            entrypoint=entrypoint,
            output_dir=output_dir,
            env=env,
            limits=limits,
            method=method,
            extras=extras,
        )
    except SandboxSetupError as exc:
        return _error(f"the harness could not start: {exc}", started)
    except OSError as exc:
        return _error(f"the sandbox could not be set up: {exc}", started)
    capture = OutputCapture(limit=int(limits.output_bytes), on_line=on_line)
    process: subprocess.Popen[bytes] | None = None
    sel = selectors.DefaultSelector()
    try:
        try:
            process = subprocess.Popen(  # noqa: S603
                plan.argv,
                cwd=plan.cwd,
                env=plan.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                preexec_fn=plan.preexec(),
                close_fds=True,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return _error(
                f"the sandbox could not start the harness: {exc}",
                started,
                plan.isolation,
            )
        netns = plan.endpoints.netns if plan.endpoints is not None else None
        if on_network is not None and netns:
            on_network(f"/run/netns/{netns}")
        if on_start is not None:
            on_start(plan.cgroup)
        for name, pipe in (("stdout", process.stdout), ("stderr", process.stderr)):
            if pipe is not None:
                os.set_blocking(pipe.fileno(), False)
                sel.register(pipe.fileno(), selectors.EVENT_READ, name)
        watch = _Watch(plan, capture, limits, started, should_cancel)
        stopped = _loop(process, sel, capture, watch, poll_seconds)
        plan.kill_all(process)
        _drain(sel, capture)
        capture.flush()
        code: int | None = process.returncode
        if stopped is None:
            stopped = _classify(
                process.returncode, plan, limits, capture.tail("stderr"), watch
            )
        else:
            code = None
    finally:
        if not plan.killed:
            plan.kill_all(process)
        sel.close()
        for pipe in (process.stdout, process.stderr) if process else ():
            if pipe is not None:
                pipe.close()
        plan.cleanup()
    return HarnessResult(
        exit_code=code,
        stop_reason=stopped[0],
        message=stopped[1],
        isolation=plan.isolation,
        duration_s=round(time.monotonic() - started, 3),
        stdout_tail=capture.tail("stdout"),
        stderr_tail=capture.tail("stderr"),
        output_truncated=capture.exceeded,
        progress=capture.progress,
        output_bytes=capture.seen,
    )


def _loop(
    process: subprocess.Popen[bytes],
    sel: selectors.BaseSelector,
    capture: OutputCapture,
    watch: _Watch,
    poll_seconds: float,
) -> tuple[str, str] | None:
    next_check = 0.0
    while True:
        _read_ready(sel, poll_seconds, capture)
        if capture.exceeded:
            return reasons.OUTPUT_LIMIT, (
                f"stopped: it wrote more than "
                f"{_size(capture.limit)} to stdout and stderr"
            )
        if process.poll() is not None:
            return None
        now = time.monotonic()
        if now >= next_check:
            next_check = now + poll_seconds
            stop = watch.check(now)
            if stop is not None:
                return stop


def _drain(sel: selectors.BaseSelector, capture: OutputCapture) -> None:
    """Read what is left in the pipes once every writer is gone."""
    deadline = time.monotonic() + DRAIN_SECONDS
    while sel.get_map() and time.monotonic() < deadline and not capture.exceeded:
        _read_ready(sel, 0.05, capture)
