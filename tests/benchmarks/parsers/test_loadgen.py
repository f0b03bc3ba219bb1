"""mlperf-loadgen: summary variants (Offline, SingleStream early stopping,
INVALID), the :::MLLOG detail log, and bad input."""

from __future__ import annotations

import json

import pytest

from benchmarks.lib.parsers import ParseResult, parse
from tests.benchmarks.parsers.helpers import one, problems

OFFLINE = """\
================================================
MLPerf Results Summary
================================================
SUT name : PySUT
Scenario : Offline
Mode     : PerformanceOnly
Samples per second: 80.15
Tokens per second: 23412.5
Result is : INVALID
  Min duration satisfied : No
  Min queries satisfied : Yes
================================================
Additional Stats
================================================
Min latency (ns)                : 1000000
99.90 percentile latency (ns)   : 5500000
"""

SINGLE_STREAM = """\
MLPerf Results Summary
Scenario : SingleStream
90th percentile latency (ns) : 1234000
Result is : VALID
Early Stopping Result:
 * Processed at least 64 queries (9600).
 * Would discard 170 highest latency queries.
 * Early stopping 90th percentile estimate: 1304069
"""


def run(text: str) -> ParseResult:
    return parse("mlperf-loadgen", text.encode())


def test_offline_summary_with_an_invalid_result_warns() -> None:
    result = run(OFFLINE)

    assert one(result, "sample_throughput_sps", "mean", scenario="Offline") == 80.15
    assert one(result, "e2e_latency_ms", "p99.9") == 5.5
    assert "LoadGen says the result is INVALID" in result.warnings
    assert any(
        "'min duration satisfied' is not satisfied" in w for w in result.warnings
    )


def test_early_stopping_estimate_keeps_its_own_method() -> None:
    result = run(SINGLE_STREAM)

    assert one(result, "e2e_latency_ms", "p90", method="tool") == 1.234
    estimate = {"method": "tool:early-stopping-estimate"}
    assert one(result, "e2e_latency_ms", "p90", **estimate) == 1.304069


def test_a_repeated_figure_with_another_value_is_flagged() -> None:
    text = OFFLINE + "Tokens per second: 1.0\n"

    result = run(text)

    assert one(result, "output_token_throughput_tps", "mean") == 23412.5
    assert any(
        "a second, different output_token_throughput_tps" in w for w in result.warnings
    )


def _event(key: str, value: object) -> str:
    return ":::MLLOG " + json.dumps({"key": key, "value": value, "time_ms": 1.0})


def test_detail_log_result_keys() -> None:
    lines = [
        _event("effective_scenario", "Server"),
        _event("result_validity", "VALID"),
        _event("result_completed_samples_per_sec", 71.74),
        _event("result_99.00_percentile_latency_ns", 2_000_000),
        _event("result_first_token_99.00_percentile_latency_ns", 900_000),
        _event("result_time_per_output_token_99.00_percentile_ns", 150_000),
        _event("result_completed_samples_per_sec", 99.0),
    ]

    result = run("\n".join(lines))

    assert one(result, "sample_throughput_sps", "mean", scenario="Server") == 71.74
    assert one(result, "e2e_latency_ms", "p99") == 2.0
    assert one(result, "ttft_ms", "p99") == 0.9
    assert one(result, "tpot_ms", "p99") == 0.15
    assert any(
        "repeated with another value; kept the first" in w for w in result.warnings
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no 'MLPerf Results Summary' banner"),
        ('{"jobs": []}', "no 'MLPerf Results Summary' banner"),
        ("MLPerf Results Summary\nSUT name : x\n", "holds no throughput or latency"),
        (
            "MLPerf Results Summary\nSamples per second: fast\n",
            "line 2 (samples per second): expected a number",
        ),
        (":::MLLOG {broken", "line 1: not a valid :::MLLOG JSON event"),
        (':::MLLOG {"value": 1}', "line 1: an :::MLLOG event without a 'key'"),
        (_event("loadgen_version", "5.0"), "holds no result_* figures"),
    ],
)
def test_bad_input_is_a_clear_problem(text: str, message: str) -> None:
    assert message in problems(run(text))
