"""``warmup``: the harness runs from a cold start and the runner records its
warm-up. Before the harness starts the page cache is dropped (the record says
whether it could be and the page cache's size before and after); then:

- ``model_load_s``: the harness's own metric of that name (its ``mean``, else
  the first stat it gives) in its ``reprogate-metrics`` output;
- ``warmup_s``: the time of the first point of the harness's
  ``cache_hit_rate`` series that reaches 90 % of its final plateau, where the
  plateau is the median of the points in the last quarter of the series' time
  span (the last point at least); left out, and said in the record, when the
  plateau is 0 or the series is missing;
- series ``warmup_cache_hit_rate``: the harness's ``cache_hit_rate`` series.

Every metric is one value a run with stat ``mean`` (``method: "scenario"``)."""

from __future__ import annotations

import statistics
from typing import Any, Final

from benchmarks.lib.lab.scenarios.base import (
    MAIN,
    Phase,
    ScenarioContext,
    ScenarioOutcome,
    harness_metrics,
    harness_series,
    metric,
    page_cache_bytes,
    phase_summary,
)
from benchmarks.lib.parsers import Series

CACHE_HIT: Final = "cache_hit_rate"
MODEL_LOAD: Final = "model_load_s"
PLATEAU_FRACTION: Final = 0.9
PLATEAU_SPAN: Final = 0.25  # the last quarter of the series' time span


def drive(context: ScenarioContext) -> ScenarioOutcome:
    before = page_cache_bytes()
    dropped = context.drop_page_cache()
    after = page_cache_bytes()
    phase = Phase(MAIN, context.output_dir)
    result = context.run_harness(phase)
    notes: list[str] = []
    metrics: list[dict[str, Any]] = []
    reported = harness_metrics(context.output_dir)
    load = reported.get(MODEL_LOAD)
    if load is None:
        load = next(
            (v for k, v in sorted(reported.items()) if k.startswith(MODEL_LOAD + ":")),
            None,
        )
    if load is None:
        notes.append(f"the harness reported no {MODEL_LOAD} metric")
    else:
        key = f"harness metric {MODEL_LOAD}"
        metrics.append(metric(MODEL_LOAD, "mean", load, "s", key))
    series: list[dict[str, Any]] = []
    hits = harness_series(context.output_dir).get(CACHE_HIT)
    if hits is None:
        notes.append(f"the harness reported no {CACHE_HIT!r} series")
    else:
        series.append(
            {
                "name": f"warmup_{CACHE_HIT}",
                "unit": hits.unit,
                "points": [[float(t), float(v)] for t, v in hits.points],
            }
        )
        warm, how = warmup_s(hits)
        if warm is None:
            notes.append(how)
        else:
            metrics.append(metric("warmup_s", "mean", warm, "s", how))
    record = {
        "phases": [phase_summary(phase, result, 0.0)],
        "page_cache": {
            "dropped": dropped,
            "before_bytes": before,
            "after_bytes": after,
        },
        "notes": notes,
    }
    return ScenarioOutcome(result=result, metrics=metrics, series=series, record=record)


def warmup_s(hits: Series) -> tuple[float | None, str]:
    """The warm-up time of a ``cache_hit_rate`` series (module docstring) and
    how it was found, or why not."""
    points = hits.points
    if not points:
        return None, f"the {CACHE_HIT} series has no point"
    first, last = points[0][0], points[-1][0]
    since = last - PLATEAU_SPAN * (last - first)
    tail = [v for t, v in points if t >= since] or [points[-1][1]]
    plateau = statistics.median(tail)
    if plateau <= 0:
        return None, f"the {CACHE_HIT} series ends at 0: no plateau to warm up to"
    target = PLATEAU_FRACTION * plateau
    reached = next(t for t, v in points if v >= target)  # the plateau's own reach it
    how = (
        f"series {CACHE_HIT}: first point >= {target:.4g} (90 % of the plateau "
        f"{plateau:.4g}, the median from {since:.4g} s) at {reached:g} s"
    )
    return float(reached), how
