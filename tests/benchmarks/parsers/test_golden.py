"""Every file of the real-output corpus parses to its checked-in expected
metrics, and figures read by hand from the raw files are where they should be
(the golden files alone would only prove the output did not change)."""

from __future__ import annotations

import os

import pytest

from benchmarks.parsers.model import Metric
from tests.benchmarks.parsers.golden import (
    CORPUS,
    DLIO,
    KVCACHE,
    LOADGEN,
    REPORT,
    as_json,
    corpus_files,
    expected,
    parsed,
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
