"""mlperf-storage: DLIO summary, v1.0 report, KV-cache CSV and per-run JSON
beyond the corpus files, and bad input."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchmarks.lib.parsers import ParseResult, parse
from tests.benchmarks.parsers.helpers import one, problems, values


def run(doc: Any) -> ParseResult:
    data = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    return parse("mlperf-storage", data)


def test_a_failed_au_expectation_is_a_warning() -> None:
    metric = {"train_au_mean_percentage": 61.2, "train_au_meet_expectation": "fail"}

    result = run({"metric": metric, "num_accelerators": 8, "hostname": "h1"})

    assert one(result, "train_au_pct", "mean", scope="h1") == 61.2
    assert any("the AU target was not met" in w for w in result.warnings)


def test_a_report_whose_runs_contradict_the_overall_figure_is_flagged() -> None:
    runs = {
        f"run{i}": {"train_throughput_samples_per_second": v}
        for i, v in enumerate([10, 20])
    }
    overall = {
        "num_benchmark_runs": "2",
        "train_throughput_mean_samples_per_second": 99.0,
    }

    result = run({"overall": overall, "runs": runs})

    assert (
        one(result, "train_sample_throughput_sps", "mean", method="recomputed:runs")
        == 15.0
    )
    assert any("the runs give 15; both kept" in w for w in result.warnings)
    assert any("MLPerf Storage requires 5" in w for w in result.warnings)


def test_kvcache_csv_with_gib_labels_and_an_unknown_column() -> None:
    data = (
        b"Filename,Cache Hit Rate,Total Read (GiB),Storage Latency P99.9 (ms),Mystery\n"
        b"./runs/kvcache_a_trial1.json,0.5,12.5,40.25,7\n\n"
    )

    result = run(data)

    trial = {"scope": "kvcache_a_trial1"}
    assert one(result, "storage_read_gib", "total", **trial) == 12.5
    assert one(result, "storage_io_latency_ms", "p99.9", **trial) == 40.25
    assert result.info["unmapped_columns"] == ["Mystery"]


def test_kvcache_run_json_summary_health_and_recomputed_percentiles() -> None:
    criteria = [{"name": "NVMe Read P95 < 200ms", "target": 200, "actual": 350,
                 "unit": "ms", "passed": False}]  # fmt: skip
    summary = {
        "end_to_end_latency_ms": {
            "mean": 200.0,
            "p50": 200.0,
            "p95": 290.0,
            "p99": 298.0,
        },
        "avg_throughput_tokens_per_sec": 1234.5,
        "cache_stats": {
            "cache_hit_rate": 0.42,
            "storage_health": {"overall_status": "FAIL", "criteria": criteria},
        },
    }
    doc = {
        "requests_completed": 3,
        "summary": summary,
        "end_to_end_latencies": [0.1, 0.2, 0.3],
    }

    result = run(doc)

    assert one(result, "cache_hit_rate", "mean") == 0.42
    recomputed = {"method": "recomputed:per-request"}
    assert one(result, "e2e_latency_ms", "p95", **recomputed) == pytest.approx(290.0)
    assert one(result, "e2e_latency_ms", "p50", **recomputed) == pytest.approx(200.0)
    assert any(
        "'NVMe Read P95 < 200ms' failed (actual 350 ms" in w for w in result.warnings
    )
    assert not [w for w in result.warnings if "both kept" in w]


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"hello": 1}, "not an MLPerf Storage summary.json, report or KV-cache result"),
        ({"metrics": []}, "it looks like reprogate-metrics output"),
        ({"metric": []}, "metric: expected a JSON object, found list"),
        ({"metric": {"x": 1}}, "metric: no train_* or eval_* figures"),
        (
            {"metric": {"train_au_percentage": [70, "x"]}},
            "metric.train_au_percentage[1]: expected a number",
        ),
        ({"overall": {}, "runs": [1]}, "runs: expected a JSON object, found list"),
        (
            b"Filename,Cache Hit Rate\nx.json,0.5,7\n",
            "line 2: 3 cells but the header has 2",
        ),
        (b"Filename,Cache Hit Rate\n", "the KV-cache summary CSV has no figures"),
        (b"Filename,Cache Hit Rate\nx.json," + b"9" * 200_000, "line 2: not valid CSV"),
        (
            {"requests_completed": 1, "summary": {}, "end_to_end_latencies": ["x"]},
            "end_to_end_latencies[0]",
        ),
    ],
)
def test_bad_input_is_a_clear_problem(doc: Any, message: str) -> None:
    assert message in problems(run(doc))


def test_a_csv_cell_that_is_not_a_number_is_skipped_with_a_warning() -> None:
    result = run(b"Filename,Cache Hit Rate,Total Tokens\nx.json,n/a,10\n")

    assert values(result, "cache_hit_rate", "mean") == []
    assert one(result, "tokens", "total") == 10
    assert any("'n/a' is not a finite number" in w for w in result.warnings)
