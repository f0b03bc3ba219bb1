"""benchmarks.lib.charts: figure JSON from metric rows, scenarios and claims."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchmarks.lib.charts import (
    bundle_claims,
    campaign_charts,
    latency_percentiles,
    run_charts,
    run_to_run_spread,
    series_over_time,
    throughput_vs_latency,
    warm_vs_cold,
)

SCENARIOS = [
    {"name": "cold-c8", "cache": "cold", "concurrency": 8, "batch_size": 8},
    {"name": "cold-c32", "cache": "cold", "concurrency": 32, "batch_size": 8},
    {"name": "warm-c8", "cache": "warm", "concurrency": 8, "batch_size": 8},
    {"name": "warm-c32", "cache": "warm", "concurrency": 32, "batch_size": 8},
]


def row(scenario: str, name: str, stat: str, value: float, **extra: Any) -> dict:
    unit = {"ttft_ms": "ms", "cache_hit_rate": "ratio"}.get(name, "tok/s")
    return {
        "scenario": scenario,
        "name": name,
        "stat": stat,
        "value": value,
        "unit": unit,
        "scope": "",
        **extra,
    }


def rows_for(scenario: str, base: float, hit: float, reps: int = 1) -> list[dict]:
    out = []
    for rep in range(reps):
        shift = rep * 10.0
        out += [
            row(scenario, "ttft_ms", p, base * k + shift)
            for p, k in (("p50", 1), ("p90", 2), ("p99", 3))
        ]
        out.append(row(scenario, "output_token_throughput_tps", "mean", 1000 - base))
        out.append(row(scenario, "cache_hit_rate", "mean", hit))
    return out


ROWS = (
    rows_for("cold-c8", 100, 0.2, reps=2)
    + rows_for("cold-c32", 300, 0.3)
    + rows_for("warm-c8", 50, 0.7)
    + rows_for("warm-c32", 150, 0.8)
)
CLAIMS = [
    {"metric": "ttft_ms", "stat": "p99", "scenario": "warm-c32", "value": 400.0},
    {
        "metric": "output_token_throughput_tps",
        "stat": "mean",
        "scenario": "warm-c32",
        "value": 900.0,
    },
    {"metric": "cache_hit_rate", "stat": "mean", "scenario": "warm-c32", "value": 0.75},
    {"metric": "ttft_ms", "stat": "p99", "scenario": "not-run", "value": 1.0},
]


def trace(figure: dict, name: str) -> dict:
    return next(t for t in figure["data"] if t["name"] == name)


def test_latency_bars_hold_the_mean_over_repetitions_in_scenario_order() -> None:
    figure = latency_percentiles(ROWS, SCENARIOS, [])

    p99 = trace(figure, "p99 measured")
    assert p99["x"] == ["cold-c8", "cold-c32", "warm-c8", "warm-c32"]
    assert p99["y"][0] == pytest.approx((300 + 310) / 2)
    assert [t["name"] for t in figure["data"]] == [
        "p50 measured",
        "p90 measured",
        "p99 measured",
    ]


def test_latency_claims_are_markers_only_for_scenarios_that_ran() -> None:
    figure = latency_percentiles(ROWS, SCENARIOS, CLAIMS)

    claimed = trace(figure, "claimed")
    assert claimed["x"] == ["warm-c32"]
    assert claimed["y"] == [400.0]


def test_throughput_vs_latency_has_one_line_per_cache_state_and_batch() -> None:
    figure = throughput_vs_latency(ROWS, SCENARIOS, CLAIMS)

    cold = trace(figure, "cold · batch 8")
    assert cold["text"] == ["c8", "c32"]  # concurrency order
    assert cold["x"] == [pytest.approx(305.0), 900.0]
    assert cold["y"] == [900.0, 700.0]
    claimed = trace(figure, "claimed")
    assert (claimed["x"], claimed["y"]) == ([400.0], [900.0])


def test_warm_vs_cold_pairs_scenarios_by_concurrency_and_batch() -> None:
    figure = warm_vs_cold(ROWS, SCENARIOS, CLAIMS)

    hit_rates = [
        t for t in figure["data"] if t.get("yaxis") == "y" and t["type"] == "bar"
    ]
    assert [(t["name"], t["x"], t["y"]) for t in hit_rates] == [
        ("cold", ["c8 · b8", "c32 · b8"], [0.2, 0.3]),
        ("warm", ["c8 · b8", "c32 · b8"], [0.7, 0.8]),
    ]
    claims = [t for t in figure["data"] if t["name"] == "claimed"]
    assert {(t["yaxis"], t["y"][0]) for t in claims} == {("y", 0.75), ("y2", 400.0)}


def test_spread_keeps_every_repetition() -> None:
    figure = run_to_run_spread(ROWS, SCENARIOS, [])

    box = trace(figure, "cold-c8")
    assert box["type"] == "box"
    assert sorted(box["y"]) == [300.0, 310.0]
    assert "2 repetitions" in figure["layout"]["title"]["text"]


def test_no_metrics_give_empty_states_not_figures() -> None:
    charts = campaign_charts([], SCENARIOS, CLAIMS)

    keys = ["latency", "throughput", "warm-cold", "spread", "hit-rate"]
    assert [c.key for c in charts] == keys
    assert all(c.figure is None and c.empty for c in charts)


def test_scoped_and_non_finite_values_are_left_out() -> None:
    rows = [
        row("cold-c8", "ttft_ms", "p99", float("nan")),
        row("cold-c8", "ttft_ms", "p99", 5.0, scope="job0"),
        row("warm-c8", "ttft_ms", "p99", float("inf")),
    ]

    assert run_to_run_spread(rows, SCENARIOS, []) is None


def test_figures_are_strict_json() -> None:
    for chart in campaign_charts(ROWS, SCENARIOS, CLAIMS):
        text = json.dumps(chart.figure, allow_nan=False)
        assert json.loads(text) == chart.figure


def test_series_over_time_draws_the_claimed_mean_of_the_same_scenario() -> None:
    series = [
        {
            "name": "cache_hit_rate",
            "unit": "ratio",
            "scope": "",
            "points": [[0.5, 0.1], [1.0, 0.6], ["x", 1], [2.0]],
        }
    ]

    figure = series_over_time(series, CLAIMS, "warm-c32")

    line = trace(figure, "cache_hit_rate")
    assert (line["x"], line["y"]) == ([0.5, 1.0], [0.1, 0.6])
    assert figure["layout"]["shapes"][0]["y0"] == 0.75
    assert series_over_time(series, CLAIMS, "cold-c8")["layout"]["shapes"] == []


def test_a_run_without_series_has_an_empty_state() -> None:
    (chart,) = run_charts([], CLAIMS, "warm-c32")

    assert chart.figure is None
    assert "No time series" in chart.empty


@pytest.mark.parametrize(
    "manifest",
    [None, {}, {"claims": "many"}, {"claims": [1, {"value": "fast"}, {"value": True}]}],
)
def test_malformed_claims_are_ignored(manifest: Any) -> None:
    assert bundle_claims(manifest) == []


def test_bundle_claims_keep_finite_numeric_claims() -> None:
    manifest = {"claims": [CLAIMS[0], {**CLAIMS[1], "value": float("inf")}]}

    assert bundle_claims(manifest) == [CLAIMS[0]]


def test_figures_pass_plotly_s_own_schema_validation() -> None:
    graph_objects = pytest.importorskip("plotly.graph_objects")
    series = [{"name": "cache_hit_rate", "unit": "ratio", "points": [[1, 0.5]]}]
    charts = [
        *campaign_charts(ROWS, SCENARIOS, CLAIMS),
        *run_charts(series, CLAIMS, "warm-c32"),
    ]

    for chart in charts:
        graph_objects.Figure(chart.figure)  # raises on an unknown property


def test_plotly_js_is_served_from_local_static_files() -> None:
    from django.contrib.staticfiles import finders

    path = finders.find("vendor/plotly/plotly.min.js")

    assert path is not None
    with open(path, "rb") as handle:
        assert b"plotly.js v" in handle.read(200)
