"""Every chart's axes grow their margins to fit their tick labels and titles
(Plotly's ``automargin``): long figures and axis titles are never clipped."""

from __future__ import annotations

from typing import Any

from benchmarks.lib.charts import (
    _layout,
    campaign_charts,
    hit_rate_over_time,
    series_over_time,
)


def _axes(layout: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in layout.items() if k.startswith(("xaxis", "yaxis"))}


def test_every_axis_of_a_layout_has_automargin() -> None:
    layout = _layout("Warm vs cold", xaxis2={"domain": [0.55, 1]}, yaxis2={})

    axes = _axes(layout)
    assert set(axes) == {"xaxis", "yaxis", "xaxis2", "yaxis2"}
    assert all(axis["automargin"] is True for axis in axes.values())
    assert axes["xaxis2"]["domain"] == [0.55, 1]  # the chart's own settings kept


def test_the_run_chart_keeps_its_axis_titles_with_automargin() -> None:
    series = [
        {"name": "cache_hit_rate", "unit": "ratio", "points": [[0, 0.4], [1, 0.5]]}
    ]

    figure = series_over_time(series, [], "warm")

    assert figure is not None
    assert figure["layout"]["xaxis"] == {
        "title": {"text": "Time (s)"},
        "automargin": True,
    }
    assert figure["layout"]["yaxis"]["automargin"] is True


def test_the_campaign_draws_every_runs_cache_hit_rate_over_time() -> None:
    series = [
        {"scenario_name": "warm-c8", "repetition": 1, "unit": "ratio",
         "points": [[0, 0.4], [1, 0.6]]},
        {"scenario_name": "warm-c8", "repetition": 2, "unit": "ratio",
         "points": [[0, float("nan")]]},  # nothing plottable: left out
    ]  # fmt: skip
    claims = [{"metric": "cache_hit_rate", "stat": "mean", "scenario": "warm-c8",
               "value": 0.9}]  # fmt: skip

    figure = hit_rate_over_time(series, claims)

    assert figure is not None
    assert [t["name"] for t in figure["data"]] == ["warm-c8 #1"]
    assert [s["y0"] for s in figure["layout"]["shapes"]] == [0.9]  # the claim
    assert figure["layout"]["yaxis"]["title"]["text"] == "Cache-hit rate (ratio)"


def test_no_hit_rate_series_is_an_empty_state() -> None:
    (chart,) = [c for c in campaign_charts([], [], []) if c.key == "hit-rate"]

    assert chart.figure is None
    assert "cache_hit_rate" in chart.empty
