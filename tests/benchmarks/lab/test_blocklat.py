"""Per-I/O block latency from one bpftrace child: its JSON parsed, percentiles
as bucket upper bounds, kept in the blob, and a real loop device traced (root,
bpftrace and tracefs; skipped otherwise)."""

from __future__ import annotations

import mmap
import os
from pathlib import Path

import pytest

from benchmarks.lib.lab.blocklat import (
    BlockLatencyTracer,
    Histogram,
    kernel_dev,
    parse,
    script,
)
from benchmarks.lib.lab.telemetry_blob import (
    Recording,
    TelemetryBlobError,
    decode,
    encode,
)
from benchmarks.lib.lab.telemetry_metrics import telemetry_metrics
from tests.benchmarks.lab.test_telemetry_sampler import loop_device  # noqa: F401

# What bpftrace 0.17 printed on this project's VM for 500 direct 4 KiB writes.
RECORDED = """{"type": "attached_probes", "data": {"probes": 2}}
{"type": "hist", "data": {"@us": {"7340032": [{"min": 32, "max": 63, "count": 430},
 {"min": 64, "max": 127, "count": 53}, {"min": 128, "max": 255, "count": 1},
 {"min": 256, "max": 511, "count": 2}, {"min": 512, "max": 1023, "count": 2},
 {"min": 1024, "max": 2047, "count": 6}, {"min": 2048, "max": 4095, "count": 5},
 {"min": 4096, "max": 8191, "count": 1}]}}}
""".replace("\n ", " ")


def test_bpftrace_json_becomes_one_histogram_per_device() -> None:
    (histogram,) = parse(RECORDED + "not json\n", {7340032: "loop0"})

    assert histogram.device == "loop0"
    assert histogram.count == 500
    assert histogram.percentile(50) == 63
    assert histogram.percentile(99) == 4095  # the 495th I/O
    assert histogram.percentile(99.9) == 8191  # the 500th: rank 499.5


def test_the_script_traces_only_the_run_s_devices() -> None:
    text = script([7340032, 265289728])

    assert "/args->dev == 7340032 || args->dev == 265289728/" in text
    assert "hist((nsecs - @start" in text


def test_the_histogram_travels_in_the_blob_and_gives_per_io_percentiles() -> None:
    (histogram,) = parse(RECORDED, {7340032: "loop0"})
    sampled = Recording(1000, "2026-12-04T20:00:00.000Z", [0, 1000], [], [], ["loop0"])
    sampled.histograms = [histogram.as_json()]

    back = decode(encode(sampled))

    assert back.histograms == [histogram.as_json()]
    assert back.document("r")["histograms"][0]["buckets"][0] == [32, 63, 430]
    metrics = {m.stat: m for m in telemetry_metrics(back)}
    assert (metrics["p50"].name, metrics["p50"].value) == ("disk_io_latency_us", 63)
    assert metrics["p99.9"].value == 8191
    assert "upper bound of the log2 bucket" in metrics["p99"].source_key


def test_a_malformed_histogram_is_refused() -> None:
    sampled = Recording(1000, "2026-12-04T20:00:00.000Z", [0], [], [], [])
    sampled.histograms = [{"source": "block_latency", "device": "loop0",
                           "unit": "us", "buckets": [[1, 2, "3"]]}]  # fmt: skip

    with pytest.raises(TelemetryBlobError, match="histogram"):
        decode(encode(sampled))


def test_a_host_without_bpftrace_says_why() -> None:
    tracer = BlockLatencyTracer(["loop0"], bpftrace=None)
    tracer.bpftrace = None

    assert tracer.start() == "bpftrace is not installed"
    assert tracer.stop() == ([], "")
    assert BlockLatencyTracer([]).start() == "no block device to trace"


def test_a_real_loop_device_s_ios_are_all_counted(loop_device: str) -> None:  # noqa: F811
    name = Path(loop_device).name
    tracer = BlockLatencyTracer([name])
    why = tracer.why_not()
    if why:
        pytest.skip(why)
    assert kernel_dev(name) == (7 << 20) | int(name.removeprefix("loop"))

    assert tracer.start() == ""
    fd = os.open(loop_device, os.O_RDWR | os.O_DIRECT)
    buffer = mmap.mmap(-1, 4096)
    try:
        for i in range(512):
            os.pwrite(fd, buffer, i * 4096)
    finally:
        os.close(fd)
    histograms, note = tracer.stop()

    assert note == ""
    (histogram,) = histograms
    assert histogram.device == name
    assert abs(histogram.count - 512) <= 512 / 100
    assert 0 < histogram.percentile(50) <= histogram.percentile(99)
    assert isinstance(histogram, Histogram)
