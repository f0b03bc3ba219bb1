"""Every file of the real-output corpus parses to its checked-in expected
metrics, and figures read by hand from the raw files are where they should be
(the golden files alone would only prove the output did not change)."""

from __future__ import annotations

import json
import os

import pytest

from benchmarks.lib.parsers.model import Metric
from tests.benchmarks.parsers.golden import (
    CORPUS,
    DLIO,
    FIO_WINDOWED_LOG,
    KVCACHE,
    LOADGEN,
    REPORT,
    VLLM_SERVE,
    as_json,
    corpus_files,
    expected,
    parsed,
    raw,
    write_expected,
)


def _one(metrics: list[Metric], name: str, stat: str, **where: str) -> float:
    def fits(m: Metric) -> bool:
        return all(getattr(m, k) == v for k, v in where.items())

    found = [m for m in metrics if m.name == name and m.stat == stat and fits(m)]
    assert len(found) == 1, (name, stat, where, found)
    return found[0].value


def test_every_corpus_file_has_a_parser_and_a_golden_file() -> None:
    assert corpus_files() == sorted(CORPUS)


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_corpus_file_parses_to_its_golden_metrics(name: str) -> None:
    result = parsed(name)

    if os.environ.get("REPROGATE_UPDATE_GOLDEN") == "1":
        write_expected(name, result)
    assert result.problems == []
    assert as_json(result) == expected(name)


def test_fio_3_1_randread_values_match_the_raw_file() -> None:
    result = parsed("fio-3.1_randread-1-1.json")
    m, job = result.metrics, {"scope": "random-read", "method": "tool"}

    assert _one(m, "read_iops", "mean", **job) == 6614.073099
    assert _one(m, "read_bw_mib_s", "mean", **job) == 26456 / 1024  # bw is KiB/s
    assert _one(m, "read_clat_us", "p99.9", **job) == 464.896  # 464896 ns
    assert _one(m, "read_clat_us", "p50", **job) == 134.144
    assert _one(m, "read_clat_us", "p99.99", **job) == 569.344
    assert _one(m, "read_slat_us", "max", **job) == 468.575
    assert _one(m, "read_lat_us", "mean", **job) == 147.792395919
    # the three duplicated "0.00" : 0 pads are not a p0; write/trim had no I/O
    assert not [x for x in m if x.stat in ("p0", "p0.0")]
    assert not [x for x in m if x.name.startswith(("write_", "trim_"))]
    assert result.info["fio_version"] == "fio-3.1"


def test_loadgen_server_summary_values_match_the_raw_file() -> None:
    result = parsed(LOADGEN)
    m = result.metrics

    assert _one(m, "sample_throughput_sps", "mean") == 81.68
    assert _one(m, "output_token_throughput_tps", "mean") == 24593.77
    assert _one(m, "ttft_ms", "p99") == pytest.approx(1914.647645)  # 1914647645 ns
    assert _one(m, "tpot_ms", "p99.9") == pytest.approx(283.86104)
    assert _one(m, "e2e_latency_ms", "p97") == pytest.approx(107516.926392)
    assert {x.scenario for x in m} == {"Server"}
    assert result.info["result"] == "VALID"
    assert result.info["parameters"]["ttft_latency (ns)"] == "2000000000"
    assert result.warnings == []  # the repeated tokens/s line has the same value


def test_kvcache_summary_csv_values_match_the_raw_file() -> None:
    m = parsed(KVCACHE).metrics
    trial = {"scope": "kvcache_nvme_only_trial2"}

    assert len({x.scope for x in m}) == 12  # 4 tier configurations x 3 trials
    assert _one(m, "e2e_latency_ms", "p95", **trial) == 11917.281206205374
    assert _one(m, "storage_io_latency_ms", "p99", **trial) == 9674.216833143726
    assert _one(m, "cache_hit_rate", "mean", **trial) == 0.9297647459938629
    assert _one(m, "completed_requests", "total", **trial) == 549
    assert (
        _one(m, "storage_read_gib", "total", scope="kvcache_gpu_cpu_trial1")
        == 100.0064697265625
    )


def test_mlperf_storage_report_values_match_the_raw_file() -> None:
    result = parsed(REPORT)
    m, overall = result.metrics, {"scope": "", "method": "tool"}

    assert (
        _one(m, "train_sample_throughput_sps", "mean", **overall) == 12555.490584774769
    )
    assert _one(m, "train_io_bw_mib_s", "stddev", **overall) == 34.61144662577983
    run = "result_cosmoflow_16_4accperclient_h100_iter3_1723949500"
    assert (
        _one(m, "train_sample_throughput_sps", "mean", scope=run) == 12579.917665994222
    )
    recomputed = _one(
        m, "train_sample_throughput_sps", "stddev", method="recomputed:runs"
    )
    assert recomputed == pytest.approx(12.831151455963944, rel=1e-9)  # population stdev
    assert result.info["train_num_accelerators"] == 64  # the string "64"
    assert result.warnings == []


def test_dlio_summary_values_match_the_raw_file() -> None:
    result = parsed(DLIO)
    m = result.metrics

    assert _one(m, "train_au_pct", "mean") == 70.26363970313434
    assert _one(m, "train_au_pct", "min") == 70.1396896159923  # epoch 1
    assert _one(m, "train_io_bw_mib_s", "mean") == 33870.97750831802
    assert {x.scope for x in m} == {"c002"}
    assert any("host_memory_GB: 0 for 12 of 16 hosts" in w for w in result.warnings)


def test_vllm_throughput_values_match_the_raw_file() -> None:
    m = parsed("vllm-bench-throughput_vllm_baseline_trial1.json").metrics

    assert _one(m, "request_throughput_rps", "mean") == 28.61091851869045
    assert _one(m, "token_throughput_tps", "mean") == 13725.630384645445
    assert _one(m, "completed_requests", "total") == 500
    assert _one(m, "duration_s", "total") == 17.475845791996107


def test_vllm_serve_result_without_latencies_is_recomputed_from_its_arrays() -> None:
    """vLLM 0.8's ``--save-result`` keeps ``ttfts``, ``itls``, ``output_lens``
    and ``errors`` (all empty: every request succeeded) but no ``latencies``
    and no ``failed``: TTFT, ITL and TPOT are recomputed from the arrays and
    agree with vLLM's own figures; nothing is said to have failed."""
    result = parsed(VLLM_SERVE)
    doc = json.loads(raw(VLLM_SERVE))
    m, again = result.metrics, {"method": "recomputed:per-request"}

    assert "latencies" not in doc
    assert "failed" not in doc
    assert set(doc["errors"]) == {""}
    assert doc["completed"] == doc["num_prompts"] == 200
    assert result.problems == []
    assert result.warnings == []
    for name, metric, rel in (("ttft_ms", "ttft", 1e-12), ("itl_ms", "itl", 1e-12),
                              ("tpot_ms", "tpot", 1e-6)):  # fmt: skip
        for stat, key in (("mean", "mean"), ("p50", "median"), ("stddev", "std"),
                          ("p99", "p99")):  # fmt: skip
            figure = doc[f"{key}_{metric}_ms"]
            assert _one(m, name, stat, **again) == pytest.approx(figure, rel=rel)
            assert _one(m, name, stat, method="tool") == figure
    # percentiles the file does not hold, computed the same way
    assert _one(m, "ttft_ms", "p99.9", **again) > doc["p99_ttft_ms"]
    assert _one(m, "itl_ms", "p95", **again) < doc["p99_itl_ms"]
    assert _one(m, "failed_requests", "total", **again) == 0
    assert not [x for x in m if x.name == "e2e_latency_ms"]  # no latencies saved


def test_fio_averaged_latency_log_gives_window_means_not_percentiles() -> None:
    """fio-plot's job file sets ``log_avg_msec=500``: each line of the log is
    one window's mean completion latency (fio writes block size 0 on such
    lines), so no per-I/O percentile may come out of it."""
    result = parsed(FIO_WINDOWED_LOG)
    lines = raw(FIO_WINDOWED_LOG).decode().splitlines()
    windows = [int(line.split(", ")[1]) / 1000 for line in lines]
    m = result.metrics

    assert result.problems == []
    assert {line.split(", ")[3] for line in lines} == {"0"}
    assert not [x for x in m if x.stat.startswith("p")]
    assert not [x for x in m if x.name == "write_clat_us"]
    name = "write_clat_window_mean_us"
    assert _one(m, name, "mean") == pytest.approx(sum(windows) / len(windows))
    assert _one(m, name, "max") == max(windows) == 231276.671
    assert _one(m, name, "min") == min(windows)
    assert {x.method for x in m} == {"recomputed:lat-log-windows"}
    assert result.info["logging"] == "windowed"
    assert result.info["windows"] == {"write": 121}
    [series] = result.series  # the windows over time, as fio-plot charts them
    assert (series.name, series.unit) == (name, "us")
    assert series.points[:2] == ((0.551, 90675.978), (1.071, 169483.362))
    assert len(series.points) == 121
    assert any(
        "log_avg_msec" in w and "no per-I/O percentile" in w for w in result.warnings
    )
