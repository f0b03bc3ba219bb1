"""``reprogate-metrics``: the format a harness writes when no tool parser fits
(docs/runner-contract.md), validated strictly -- every problem is reported, none is
guessed:

    {"metrics": [{"name": "ttft_ms", "stat": "p99", "value": 41.5, "unit": "ms",
                  "scenario": "warm"}],
     "series":  [{"name": "cache_hit_rate", "unit": "ratio", "scenario": "warm",
                  "points": [[0, 0.0], [1.5, 0.42]]}]}

- one JSON object, nothing around it, no duplicate keys, no NaN/Infinity;
  only the keys shown (``scenario`` optional; ``series`` optional);
- ``name`` lower_snake (``^[a-z][a-z0-9]*(_[a-z0-9]+)*$``); a name ending in a
  unit suffix (``_ms``, ``_us``, ``_s``, ``_mib_s``, ``_iops``, ``_rps``,
  ``_tps``, ``_pct`` …) must carry that unit;
- ``stat``: ``mean``, ``min``, ``max``, ``stddev``, ``total`` or a percentile
  ``p50`` … ``p99.99`` written without trailing zeros;
- ``value`` and every point a finite number (not a boolean); series times
  never go backwards; one (name, stat, scenario) at most once;
- at most 100,000 metrics and 1,000,000 points in all.
"""

from __future__ import annotations

from typing import Any, Final

from benchmarks.lib.parsers.jsontext import load_strict
from benchmarks.lib.parsers.model import (
    NAME_RE,
    Metric,
    ParseError,
    ParseResult,
    Problem,
    Series,
    as_number,
    is_valid_stat,
    unit_for_name,
)

MAX_METRICS: Final = 100_000
MAX_POINTS: Final = 1_000_000
MAX_PROBLEMS: Final = 50
METRIC_KEYS: Final = frozenset({"name", "stat", "value", "unit", "scenario"})
SERIES_KEYS: Final = frozenset({"name", "unit", "points", "scenario"})


class _Problems(list[Problem]):
    def add(self, where: str, message: str) -> None:
        if len(self) < MAX_PROBLEMS:
            self.append(Problem(where, message))


def parse_reprogate_metrics(data: bytes, result: ParseResult) -> None:
    doc = load_strict(data)
    problems = _Problems()
    for key in sorted(set(doc) - {"metrics", "series"}):
        problems.add(key, "unknown key (allowed: metrics, series)")
    metrics = doc.get("metrics")
    if not isinstance(metrics, list):
        problems.add("metrics", "required: an array of metric objects")
        metrics = []
    if len(metrics) > MAX_METRICS:
        raise ParseError(
            "metrics", f"{len(metrics)} metrics is over the limit of {MAX_METRICS}"
        )
    seen: set[tuple[str, str, str | None]] = set()
    for i, item in enumerate(metrics):
        metric = _metric(item, f"metrics[{i}]", problems)
        if metric is None:
            continue
        identity = (metric.name, metric.stat, metric.scenario)
        if identity in seen:
            problems.add(
                f"metrics[{i}]",
                f"{metric.name} {metric.stat} given twice for this scenario",
            )
        seen.add(identity)
        result.metrics.append(metric)
    series = doc.get("series", [])
    if not isinstance(series, list):
        problems.add("series", "must be an array of series objects")
        series = []
    budget = MAX_POINTS
    for i, item in enumerate(series):
        parsed = _series(item, f"series[{i}]", problems, budget)
        if parsed is not None:
            budget -= len(parsed.points)
            result.series.append(parsed)
    if problems:
        raise ParseError("", "", problems=list(problems))


def _common(
    item: Any, where: str, allowed: frozenset[str], problems: _Problems
) -> dict[str, Any] | None:
    if not isinstance(item, dict):
        problems.add(where, "must be an object")
        return None
    for key in sorted(set(item) - allowed):
        problems.add(
            f"{where}.{key}", f"unknown key (allowed: {', '.join(sorted(allowed))})"
        )
    for key in sorted(allowed - set(item) - {"scenario"}):
        problems.add(f"{where}.{key}", "required")
    name, unit = item.get("name"), item.get("unit")
    if "name" in item and not (isinstance(name, str) and NAME_RE.match(name)):
        problems.add(f"{where}.name", f"{name!r:.60} is not a lower_snake name")
    if "unit" in item and not (isinstance(unit, str) and 0 < len(unit.strip()) <= 32):
        problems.add(
            f"{where}.unit", "must be a non-empty string of at most 32 characters"
        )
    elif isinstance(name, str) and isinstance(unit, str):
        promised = unit_for_name(name)
        if promised is not None and unit != promised:
            problems.add(
                f"{where}.unit", f"{name} promises the unit {promised!r}, not {unit!r}"
            )
    scenario = item.get("scenario")
    if scenario is not None and not (
        isinstance(scenario, str) and 0 < len(scenario) <= 200
    ):
        problems.add(
            f"{where}.scenario", "must be a non-empty string of at most 200 characters"
        )
    return item


def _metric(item: Any, where: str, problems: _Problems) -> Metric | None:
    before = len(problems)
    fields = _common(item, where, METRIC_KEYS, problems)
    if fields is None:
        return None
    stat, value = fields.get("stat"), fields.get("value")
    if "stat" in fields and not (isinstance(stat, str) and is_valid_stat(stat)):
        problems.add(
            f"{where}.stat",
            f"{stat!r:.40} is not mean, min, max, stddev, total or pNN (p50, p99.9 …)",
        )
    number = as_number(value) if isinstance(value, int | float) else None
    if "value" in fields and number is None:
        problems.add(f"{where}.value", f"{value!r:.40} is not a finite number")
    if len(problems) != before or number is None or not isinstance(stat, str):
        return None  # (a missing stat is a problem already: required)
    return Metric(
        fields["name"],
        stat,
        number,
        fields["unit"],
        where,
        "tool",
        "",
        fields.get("scenario"),
    )


def _series(item: Any, where: str, problems: _Problems, budget: int) -> Series | None:
    before = len(problems)
    fields = _common(item, where, SERIES_KEYS, problems)
    if fields is None:
        return None
    raw = fields.get("points")
    if "points" in fields and not isinstance(raw, list):
        problems.add(f"{where}.points", "must be an array of [t, value] pairs")
        return None
    raw = raw or []
    if len(raw) > budget:
        raise ParseError(f"{where}.points", f"more than {MAX_POINTS} points in all")
    points: list[tuple[float, float]] = []
    for j, pair in enumerate(raw):
        ok = (
            isinstance(pair, list)
            and len(pair) == 2
            and all(
                isinstance(v, int | float) and as_number(v) is not None for v in pair
            )
        )
        if not ok:
            problems.add(
                f"{where}.points[{j}]", "must be [t, value] with two finite numbers"
            )
            continue
        t, v = float(pair[0]), float(pair[1])
        if points and t < points[-1][0]:
            problems.add(
                f"{where}.points[{j}]", f"time {t:g} goes back before {points[-1][0]:g}"
            )
        points.append((t, v))
    if len(problems) != before:
        return None
    return Series(
        fields["name"], fields["unit"], tuple(points), where, "", fields.get("scenario")
    )
