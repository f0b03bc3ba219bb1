"""The scenario driver's contract (DESIGN §4b, docs/runner-contract.md): what a
driver is given (``ScenarioContext``, built by the lab agent), what it gives back
(``ScenarioOutcome``), and the small helpers every driver shares (the harness's
own series, the pool policy's hooks, the page cache's size).

A driver is ``Callable[[ScenarioContext], ScenarioOutcome]``: it runs the
vendor's harness in the sandbox one or more times (``Phase``), does what its
scenario kind asks around it (a fault through the pool's hook, a neighbour job,
a rollback), and says what it measured. The main phase's result decides the
run's exit; ``failure`` (a sentence) fails the run with stop reason
``scenario_failed`` even when the harness succeeded."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

from benchmarks.lib.parsers import ParseResult, Series, parse
from benchmarks.lib.sandbox import HarnessResult, SandboxLimits
from benchmarks.lib.sandbox.extras import SandboxExtras

KINDS: Final = ("steady", "interference", "failover", "warmup", "rollback")
STEADY: Final = "steady"
MAIN: Final = "main"  # the phase whose outputs are the run's
SCENARIO_FAILED: Final = "scenario_failed"  # the run's stop reason
# A hook answers within this many seconds or the scenario fails.
HOOK_TIMEOUT_S: Final = 30.0
HOOK_OUTPUT_CHARS: Final = 2000
# The harness's own per-second series are read from its outputs (JSON files
# in reprogate-metrics form) of at most this size.
SERIES_FILE_MAX_BYTES: Final = 64 << 20
MEMINFO: Final = Path("/proc/meminfo")


@dataclass(frozen=True)
class Phase:
    """One execution of the vendor's harness in the sandbox."""

    name: str  # "main", "alone", "a", "b", "seed-2" ...
    output_dir: Path  # where this phase's outputs go (main phase: the run's)
    env: Mapping[str, str] = field(default_factory=dict)  # extra harness env


class ScenarioContext(Protocol):
    """What the agent gives a driver (read-only attributes: an implementation
    may hold them as plain attributes). ``on_start`` of ``run_harness`` is
    called with ``clock()``'s time once the harness has started (offsets count
    from there)."""

    @property
    def run(self) -> Mapping[str, Any]: ...  # the claim's answer (scenario, policy…)

    @property
    def work_dir(self) -> Path: ...  # the run's workspace root (runner-only files)

    @property
    def output_dir(self) -> Path: ...  # the main phase's output directory

    @property
    def hooks(self) -> Mapping[str, str]: ...  # the pool policy's named hooks

    @property
    def extras(self) -> SandboxExtras | None: ...  # the policy's devices, endpoints

    @property
    def limits(self) -> SandboxLimits: ...  # the run's sandbox limits

    def run_harness(
        self, phase: Phase, *, on_start: Callable[[float], None] | None = None
    ) -> HarnessResult: ...

    def capture(self) -> dict[str, Any]: ...

    def drop_page_cache(self) -> bool: ...

    def beat(self) -> None: ...

    def clock(self) -> float: ...


@dataclass
class ScenarioOutcome:
    """What a driver did. ``metrics`` are ``{"name","stat","value","unit","key"}``
    (joined to the run's metrics with ``method: "scenario"``); ``series``
    ``{"name","unit","points": [[t_s, v], ...]}``; ``record`` what the runner
    did (``actions`` with their times, ``phases``, a capture difference)."""

    result: HarnessResult  # the main phase's (decides exit/stop)
    metrics: list[dict[str, Any]] = field(default_factory=list)
    series: list[dict[str, Any]] = field(default_factory=list)
    record: dict[str, Any] = field(default_factory=dict)
    failure: str | None = None  # a sentence: the run fails, scenario_failed


class ScenarioError(Exception):
    """A driver cannot go on (a missing hook, a hook that failed): the run
    fails with stop reason ``scenario_failed`` and this message."""


def scenario_kind(scenario: Mapping[str, Any] | None) -> str:
    """The scenario's kind (``steady`` when it names none)."""
    kind = (scenario or {}).get("kind")
    return kind if isinstance(kind, str) and kind else STEADY


def metric(name: str, stat: str, value: float, unit: str, key: str) -> dict[str, Any]:
    """One scenario metric; ``key`` says where the driver took it from."""
    return {"name": name, "stat": stat, "value": value, "unit": unit, "key": key}


def phase_summary(
    phase: Phase, result: HarnessResult, started: float
) -> dict[str, Any]:
    """A phase for the record: its name, start (driver clock) and how it ended."""
    return {
        "name": phase.name,
        "started_s": round(started, 3),
        "duration_s": round(result.duration_s, 3),
        "exit_code": result.exit_code,
        "stop_reason": result.stop_reason,
    }


# -- the harness's own series -----------------------------------------------------


def _reprogate_results(output_dir: Path) -> list[ParseResult]:
    """Every JSON file in ``output_dir`` that parses as ``reprogate-metrics``
    (others are skipped: they are some other parser's business)."""
    found = []
    for path in sorted(output_dir.rglob("*.json")):
        if path.is_symlink() or not path.is_file():
            continue
        if path.stat().st_size > SERIES_FILE_MAX_BYTES:
            continue
        result = parse("reprogate-metrics", path.read_bytes(), source_name=path.name)
        if result.ok:
            found.append(result)
    return found


def harness_series(output_dir: Path) -> dict[str, Series]:
    """The harness's series by name (the first of a name wins) in its
    ``reprogate-metrics`` outputs in ``output_dir``."""
    found: dict[str, Series] = {}
    for result in _reprogate_results(output_dir):
        for series in result.series:
            found.setdefault(series.name, series)
    return found


def harness_metrics(output_dir: Path) -> dict[str, float]:
    """``name`` (``name:stat`` when the stat is not ``mean``) → value of the
    harness's ``reprogate-metrics`` outputs in ``output_dir``."""
    found: dict[str, float] = {}
    for result in _reprogate_results(output_dir):
        for m in result.metrics:
            key = m.name if m.stat == "mean" else f"{m.name}:{m.stat}"
            found.setdefault(key, m.value)
    return found


def series_json(series: Series, *, name: str | None = None) -> dict[str, Any]:
    return {
        "name": name or series.name,
        "unit": series.unit,
        "points": [[float(t), float(v)] for t, v in series.points],
    }


# -- the pool's hooks ---------------------------------------------------------------


@dataclass(frozen=True)
class HookCall:
    """One call of an operator's hook, for the record."""

    hook: str
    verb: str
    argument: dict[str, Any]
    at_s: float  # driver clock, from the harness's start where there is one
    exit_code: int | None
    output: str
    duration_s: float

    def as_json(self) -> dict[str, Any]:
        return {
            "hook": self.hook,
            "verb": self.verb,
            "argument": self.argument,
            "at_s": round(self.at_s, 3),
            "exit_code": self.exit_code,
            "output": self.output,
            "duration_s": round(self.duration_s, 3),
        }


def hook_path(hooks: Mapping[str, str], name: str) -> str:
    """The pool policy's ``hooks[name]``: an executable file, or ScenarioError."""
    path = hooks.get(name) if isinstance(hooks, Mapping) else None
    if not isinstance(path, str) or not path:
        raise ScenarioError(
            f"The pool's policy names no {name!r} hook; a lab operator sets "
            f'"hooks": {{"{name}": "/path/to/executable"}} for this scenario kind.'
        )
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise ScenarioError(
            f"The pool's {name!r} hook {path[:200]} is not an executable file "
            "on this host."
        )
    return path


def call_hook(
    path: str,
    verb: str,
    argument: Mapping[str, Any],
    *,
    name: str,
    clock: Callable[[], float],
    origin: float = 0.0,
    timeout_s: float = HOOK_TIMEOUT_S,
) -> HookCall:
    """``HOOK <verb> <json-argument>`` with a timeout; never raises for the
    hook's own failure (the call's exit code says it: None = timed out or
    could not start)."""
    started = clock()
    text = json.dumps(dict(argument), sort_keys=True, separators=(",", ":"))
    try:
        done = subprocess.run(  # noqa: S603 (the operator's hook, by its path)
            [path, verb, text],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        code: int | None = done.returncode
        output = (done.stdout + done.stderr).strip()
    except subprocess.TimeoutExpired:
        code, output = None, f"no answer within {timeout_s:g} s"
    except OSError as error:
        code, output = None, f"could not start: {error}"
    return HookCall(
        hook=name,
        verb=verb,
        argument=dict(argument),
        at_s=started - origin,
        exit_code=code,
        output=output[-HOOK_OUTPUT_CHARS:],
        duration_s=clock() - started,
    )


# -- the page cache -----------------------------------------------------------------


def page_cache_bytes(meminfo: Path = MEMINFO) -> int | None:
    """The host's page cache (``Cached:`` of /proc/meminfo), None if unreadable."""
    try:
        text = meminfo.read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        if name == "Cached":
            parts = rest.split()
            if parts and parts[0].isdigit():
                return int(parts[0]) * 1024
    return None
