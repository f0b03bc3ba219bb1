"""reprogate-metrics: the harness's own format, validated strictly; every
problem is reported with its place."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchmarks.lib.parsers import ParseResult, parse
from tests.benchmarks.parsers.helpers import one, problems

GOOD = {
    "metrics": [
        {"name": "ttft_ms", "stat": "p99", "value": 41.5, "unit": "ms",
         "scenario": "warm"},
        {"name": "ttft_ms", "stat": "p99", "value": 95, "unit": "ms",
         "scenario": "cold"},
        {"name": "cache_hit_rate", "stat": "mean", "value": 0.8, "unit": "ratio"},
    ],
    "series": [
        {"name": "cache_hit_rate", "unit": "ratio", "scenario": "warm",
         "points": [[0, 0.0], [1.5, 0.42], [1.5, 0.5]]},
    ],
}  # fmt: skip


def run(doc: Any) -> ParseResult:
    data = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    return parse("reprogate-metrics", data)


def metric(**fields: Any) -> dict[str, Any]:
    return {
        "metrics": [
            {"name": "ttft_ms", "stat": "p99", "value": 1.0, "unit": "ms", **fields}
        ]
    }


def test_good_metrics_and_series() -> None:
    result = run(GOOD)

    assert one(result, "ttft_ms", "p99", scenario="cold") == 95.0
    assert one(result, "cache_hit_rate", "mean", scenario=None) == 0.8
    assert result.series[0].points == ((0.0, 0.0), (1.5, 0.42), (1.5, 0.5))
    assert result.series[0].scenario == "warm"
    assert result.warnings == []


def test_every_problem_is_reported_with_its_place() -> None:
    doc = {
        "metrics": [
            {"name": "TTFT", "stat": "p99", "value": 1, "unit": "ms"},
            {"name": "ttft_ms", "stat": "p99.90", "value": True, "unit": "s"},
            {"name": "x", "stat": "mean", "value": 1, "unit": "u", "extra": 1},
        ],
        "series": [{"name": "hit", "unit": "ratio", "points": [[2, 1], [1, 1], [0]]}],
        "version": 2,
    }

    text = problems(run(doc))

    for expected in [
        "version: unknown key",
        "metrics[0].name: 'TTFT' is not a lower_snake name",
        "metrics[1].stat: 'p99.90' is not mean, min, max",
        "metrics[1].value: True is not a finite number",
        "metrics[1].unit: ttft_ms promises the unit 'ms', not 's'",
        "metrics[2].extra: unknown key",
        "series[0].points[1]: time 1 goes back before 2",
        "series[0].points[2]: must be [t, value] with two finite numbers",
    ]:
        assert expected in text


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{"metrics": []} trailing', "not valid JSON: Extra data"),
        (b'# comment\n{"metrics": []}', "not valid JSON"),
        (b'{"metrics": [], "metrics": []}', "key 'metrics': duplicate key"),
        (
            b'{"metrics": [{"name": "a", "stat": "max", "value": NaN, "unit": "u"}]}',
            "NaN is not a number JSON allows",
        ),
        (b"[]", "expected a JSON object, found list"),
        (b"{}", "metrics: required"),
        (
            json.dumps(metric(value="1")).encode(),
            "metrics[0].value: '1' is not a finite number",
        ),
        (
            json.dumps(metric(scenario="")).encode(),
            "metrics[0].scenario: must be a non-empty string",
        ),
        (
            json.dumps({"metrics": [metric()["metrics"][0]] * 2}).encode(),
            "metrics[1]: ttft_ms p99 given twice",
        ),
        (
            json.dumps(
                {"metrics": [], "series": [{"name": "a", "unit": "u"}]}
            ).encode(),
            "series[0].points: required",
        ),
        (json.dumps({"metrics": [{}]}).encode(), "metrics[0].name: required"),
    ],
)
def test_bad_input_is_a_clear_problem(data: bytes, message: str) -> None:
    assert message in problems(run(data))


@pytest.mark.parametrize(
    "stat", ["p50", "p99.9", "p99.99", "p0.1", "p100", "total", "stddev"]
)
def test_valid_stats(stat: str) -> None:
    assert run(metric(stat=stat)).ok


@pytest.mark.parametrize("stat", ["p0", "p101", "p99.", "P99", "median", "p-1", "p050"])
def test_invalid_stats(stat: str) -> None:
    assert "is not mean, min, max" in problems(run(metric(stat=stat)))
