"""Every chart's axes grow their margins to fit their tick labels and titles
(Plotly's ``automargin``): long figures and axis titles are never clipped."""

from __future__ import annotations

from typing import Any

from benchmarks.charts import _layout, series_over_time


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
