"""Execution sandbox for benchmark harnesses.

    from benchmarks.lib.sandbox import SandboxLimits, run_harness
    result = run_harness(
        bundle_dir=work, entrypoint="harness/run.sh", output_dir=out,
        env={"REPROGATE_SCENARIO": "{...}", "REPROGATE_RUN_ID": "42"},
        limits=SandboxLimits(wall_seconds=600),
        on_line=lambda stream, line: ..., should_cancel=lambda: ...)
    result.stop_reason, result.message, result.isolation, result.progress

On this project's lab hosts (root, bubblewrap, cgroup v1; see platform.md §7) a
harness runs in a bubblewrap sandbox: new pid, network, ipc and uts namespaces;
only /usr, a few /etc files and a read-only /sys of the host; private /tmp,
/dev and /proc; the bundle copy at /sandbox/bundle (its cwd) and the output
directory at /sandbox/output; as a dedicated unprivileged uid with no
capabilities and no-new-privs; in its own cgroup (pids, memory, cpu
accounting); with rlimits for CPU time, file size and core dumps. Hosts without
bubblewrap fall back to ``unshare`` (namespaces, host filesystem) or to no
isolation at all; ``isolation`` in the result says what was in force.

Pure Python, no Django: the runner passes its settings in.
"""

from __future__ import annotations

from benchmarks.lib.sandbox.capabilities import drop_page_cache, sandbox_capabilities
from benchmarks.lib.sandbox.limits import (
    STOP_REASONS,
    HarnessResult,
    SandboxLimits,
    parse_progress,
)
from benchmarks.lib.sandbox.process import run_harness

__all__ = [
    "STOP_REASONS",
    "HarnessResult",
    "SandboxLimits",
    "drop_page_cache",
    "parse_progress",
    "run_harness",
    "sandbox_capabilities",
]
