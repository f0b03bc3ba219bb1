"""What a sandboxed harness run may use, and what came out of it
(docs/runner-contract.md).

Pure data: no I/O here. ``run_harness`` (``benchmarks.lib.sandbox.process``) takes a
``SandboxLimits`` and returns a ``HarnessResult``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Final

# Why a harness stopped. "exited" is a normal exit with any status (0 = success).
EXITED: Final = "exited"
TIMEOUT: Final = "timeout"
CPU_LIMIT: Final = "cpu_limit"
MEMORY_LIMIT: Final = "memory_limit"
FILE_LIMIT: Final = "file_limit"
PROCESS_LIMIT: Final = "process_limit"
OUTPUT_LIMIT: Final = "output_limit"
CANCELLED: Final = "cancelled"
SIGNAL: Final = "signal"
SANDBOX_ERROR: Final = "sandbox_error"
STOP_REASONS: Final = frozenset(
    {
        EXITED,
        TIMEOUT,
        CPU_LIMIT,
        MEMORY_LIMIT,
        FILE_LIMIT,
        PROCESS_LIMIT,
        OUTPUT_LIMIT,
        CANCELLED,
        SIGNAL,
        SANDBOX_ERROR,
    }
)


@dataclass(frozen=True)
class SandboxLimits:
    """Per-run limits. ``file_bytes`` caps each file (RLIMIT_FSIZE) and also the
    total the harness may add to its working and output directories and its
    private /tmp; ``processes`` caps live processes (cgroup pids and/or
    RLIMIT_NPROC on a dedicated uid); ``output_bytes`` caps stdout + stderr."""

    wall_seconds: float = 3600
    cpu_seconds: int = 3600
    memory_bytes: int = 4 << 30
    file_bytes: int = 8 << 30
    processes: int = 256
    output_bytes: int = 64 << 20
    network: bool = False  # False: no network for the harness where the host allows it

    def __post_init__(self) -> None:
        numbers = {
            "wall_seconds": self.wall_seconds,
            "cpu_seconds": self.cpu_seconds,
            "memory_bytes": self.memory_bytes,
            "file_bytes": self.file_bytes,
            "processes": self.processes,
            "output_bytes": self.output_bytes,
        }
        for name, value in numbers.items():
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise TypeError(f"{name} must be a number, not {value!r}")
            if not math.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be a positive number, not {value!r}")
        if self.processes < 2:
            raise ValueError("processes must be at least 2 (the harness and a child)")

    def as_dict(self) -> dict[str, Any]:
        return {
            "wall_seconds": self.wall_seconds,
            "cpu_seconds": self.cpu_seconds,
            "memory_bytes": self.memory_bytes,
            "file_bytes": self.file_bytes,
            "processes": self.processes,
            "output_bytes": self.output_bytes,
            "network": self.network,
        }


@dataclass(frozen=True)
class HarnessResult:
    """``exit_code`` is the harness's status as the sandbox saw it (negative =
    killed by that signal, 128+N = a shell or bwrap reporting signal N), or None
    when the runner stopped it (timeout, cancel, a limit) or it never started."""

    exit_code: int | None
    stop_reason: str
    message: str
    isolation: dict[str, Any]
    duration_s: float
    stdout_tail: str
    stderr_tail: str
    output_truncated: bool
    progress: float | None
    output_bytes: int = 0  # stdout + stderr bytes the harness wrote (seen)

    @property
    def succeeded(self) -> bool:
        return self.stop_reason == EXITED and self.exit_code == 0


_PROGRESS = re.compile(
    r"^\s*::progress::\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*$"
)


def parse_progress(line: str) -> float | None:
    """``"::progress:: 0.42"`` -> 0.42, clamped to 0..1; anything else -> None."""
    match = _PROGRESS.match(line)
    if match is None:
        return None
    value = float(match.group(1))
    if not math.isfinite(value):
        return None
    return min(1.0, max(0.0, value))
