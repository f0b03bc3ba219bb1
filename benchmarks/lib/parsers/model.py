"""The canonical metric model every parser returns (docs/runner-contract.md).

Pure Python, no Django: the ``reprogate`` CLI and the runner workers import it.

A ``Metric`` is one number with its canonical ``name`` (lower_snake, the unit as
suffix: ``read_clat_us``, ``ttft_ms``), its ``stat`` (``mean``, ``p99.9`` …),
``unit``, the ``source_key`` it was read from in the tool's output and the
``method`` that produced it: ``tool`` (the tool's own figure, unit-converted at
most), ``tool:early-stopping-estimate`` (MLPerf LoadGen),
``recomputed:json+bins`` (from fio's latency histogram, fio's own algorithm),
``recomputed:per-request`` (numpy-style linear percentiles over the raw
per-request samples), ``recomputed:lat-log-histogram`` (fio latency log, one
line per I/O), ``recomputed:lat-log-windows`` (fio latency log written with
``log_avg_msec``: figures over its windows' means, never percentiles).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Final

NAME_RE: Final = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")
# p0.1 … p99.999, p100: a positive number up to 100, no trailing zeros.
PERCENTILE_STAT_RE: Final = re.compile(
    r"^p(?:100|[1-9][0-9]?(?:\.[0-9]*[1-9])?|0\.[0-9]*[1-9])$"
)
PLAIN_STATS: Final = frozenset({"mean", "min", "max", "stddev", "total"})
# The percentiles every parser reports when it computes them itself
# (docs/runner-contract.md).
STANDARD_PERCENTILES: Final = (50.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.99)
# Name suffix -> the unit it promises (longest suffixes first).
UNIT_SUFFIXES: Final = (
    ("_mib_s", "MiB/s"),
    ("_iops", "IO/s"),
    ("_gib", "GiB"),
    ("_rps", "req/s"),
    ("_tps", "tok/s"),
    ("_sps", "samples/s"),
    ("_pct", "%"),
    ("_ns", "ns"),
    ("_us", "us"),
    ("_ms", "ms"),
    ("_s", "s"),
)


def percentile_stat(p: float) -> str:
    """``99.9`` -> ``"p99.9"``, ``50.0`` -> ``"p50"``."""
    text = f"{p:.6f}".rstrip("0").rstrip(".")
    return f"p{text}"


def is_valid_stat(stat: str) -> bool:
    return stat in PLAIN_STATS or bool(PERCENTILE_STAT_RE.match(stat))


def unit_for_name(name: str) -> str | None:
    """The unit a canonical name's suffix promises, or None (no unit suffix)."""
    for suffix, unit in UNIT_SUFFIXES:
        if name.endswith(suffix):
            return unit
    return None


@dataclass(frozen=True)
class Metric:
    name: str
    stat: str
    value: float
    unit: str
    source_key: str
    method: str = "tool"
    scope: str = ""
    scenario: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "stat": self.stat,
            "value": self.value,
            "unit": self.unit,
            "scope": self.scope,
            "scenario": self.scenario,
            "method": self.method,
            "source_key": self.source_key,
        }


@dataclass(frozen=True)
class Series:
    """A time series (``points`` are ``(t, value)``, t in seconds)."""

    name: str
    unit: str
    points: tuple[tuple[float, float], ...]
    source_key: str
    scope: str = ""
    scenario: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "unit": self.unit,
            "scope": self.scope,
            "scenario": self.scenario,
            "source_key": self.source_key,
            "points": [list(point) for point in self.points],
        }


@dataclass(frozen=True)
class Problem:
    """Why the input could not be parsed: ``where`` names the place (a key
    path such as ``jobs[0].read.clat_ns``, or ``line 12``)."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where else self.message


class ParseError(Exception):
    """Bad input: not the expected format, wrong tool, missing or invalid
    fields. Carries one or more ``Problem``s; never a traceback for the user."""

    def __init__(
        self, where: str, message: str, *, problems: list[Problem] | None = None
    ):
        self.problems = problems or [Problem(where, message)]
        super().__init__(str(self.problems[0]))


@dataclass
class ParseResult:
    parser: str
    metrics: list[Metric] = field(default_factory=list)
    series: list[Series] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems

    def raise_for_problems(self) -> None:
        if self.problems:
            raise ParseError("", "", problems=list(self.problems))

    def to_dict(self) -> dict[str, Any]:
        return {
            "parser": self.parser,
            "metrics": [m.to_dict() for m in self.metrics],
            "series": [s.to_dict() for s in self.series],
            "warnings": list(self.warnings),
            "problems": [
                {"where": p.where, "message": p.message} for p in self.problems
            ],
            "info": dict(self.info),
        }


class MetricSink:
    """Collects metrics for one parse, dropping non-finite values with a warning
    (a tool's ``NaN`` is never a number anyone should gate on)."""

    def __init__(self, result: ParseResult):
        self.result = result

    def add(
        self,
        name: str,
        stat: str,
        value: Any,
        unit: str,
        source_key: str,
        *,
        method: str = "tool",
        scope: str = "",
        scenario: str | None = None,
    ) -> Metric | None:
        number = as_number(value)
        if number is None:
            self.result.warnings.append(
                f"{source_key}: {value!r} is not a finite number; {name} {stat} skipped"
            )
            return None
        metric = Metric(name, stat, number, unit, source_key, method, scope, scenario)
        self.result.metrics.append(metric)
        return metric


def as_number(value: Any) -> float | None:
    """A finite float from a JSON number or a numeric string (MLPerf writes
    ``"64"``); None for anything else (booleans included)."""
    if isinstance(value, bool) or value is None:
        return None
    if not isinstance(value, int | float | str):
        return None
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except (ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None
