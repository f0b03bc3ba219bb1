"""The telemetry blob round-trips exactly, refuses what it is not, and gives the
``reprogate.telemetry/v1`` document; the metrics derived from it."""

from __future__ import annotations

import json
import struct
import zlib

import pytest

from benchmarks.lib.lab.telemetry_blob import (
    MAGIC,
    Recording,
    SeriesData,
    TelemetryBlobError,
    decode,
    encode,
)
from benchmarks.lib.lab.telemetry_metrics import telemetry_metrics


def recording() -> Recording:
    return Recording(
        interval_ms=1000,
        started="2026-12-04T20:00:00.000Z",
        t_ms=[0, 1000, 2000, 2417],
        series=[
            SeriesData(
                "diskstats",
                "loop0",
                {
                    "reads_completed": [0, 512, 498, 120],
                    "sectors_read": [0, 8192, 7968, 1920],
                    "writes_completed": [0, 0, 0, 0],
                    "sectors_written": [0, 0, 0, 0],
                    "read_ticks_ms": [0, 380, 372, 90],
                    "write_ticks_ms": [0, 0, 0, 0],
                    "in_flight": [0, 1, 1, 0],
                    "io_ticks_ms": [0, 990, 985, 410],
                },
            ),
            SeriesData("pressure", "host", {"io_full_us": [0, 100_000, 0, 41_700]}),
            SeriesData(
                "gpu",
                "gpu0",
                {
                    "gpu_util_pct": [10, 90, 80, 20],
                    "gpu_mem_used_mib": [100, 900, 4000, 3000],
                },
            ),
            SeriesData("cgroup", "run", {"memory_bytes": [1 << 40, -5, 0, 2**62]}),
        ],
        notes=["gpu telemetry unavailable (nvidia-ml-py not installed)"],
        devices=["loop0"],
    )


def test_the_blob_round_trips_to_the_documented_export() -> None:
    blob = encode(recording())
    assert blob.startswith(MAGIC + b"\x01")
    back = decode(blob)
    assert back == recording()
    document = back.document("run-1")
    assert document["schema"] == "reprogate.telemetry/v1"
    assert document["interval_ms"] == 1000
    (disk,) = [s for s in document["series"] if s["source"] == "diskstats"]
    assert disk["device"] == "loop0"
    assert disk["t_ms"] == [0, 1000, 2000, 2417]
    assert disk["fields"]["reads_completed"] == [0, 512, 498, 120]
    assert json.loads(json.dumps(document)) == document


def _payload(blob: bytes) -> bytes:
    return zlib.decompress(blob[len(MAGIC) + 1 :])


def _rewrap(payload: bytes) -> bytes:
    return MAGIC + b"\x01" + zlib.compress(payload)


def _header_says(blob: bytes, **changes: object) -> bytes:
    payload = _payload(blob)
    (length,) = struct.unpack_from("<I", payload)
    header = {**json.loads(payload[4 : 4 + length]), **changes}
    text = json.dumps(header).encode()
    return _rewrap(struct.pack("<I", len(text)) + text + payload[4 + length :])


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        (lambda b: b"PK\x03\x04" + b[4:], "not a telemetry blob"),
        (lambda b: MAGIC + b"\x02" + b[len(MAGIC) + 1 :], "unknown version"),
        (lambda b: b[:-7], "truncated"),
        (lambda b: b + b"\x00", "trailing"),
        (lambda b: MAGIC + b"\x01" + b"not zlib at all", "corrupt"),
        (lambda b: _rewrap(_payload(b) + b"\x00"), "after its columns"),
        (lambda b: _rewrap(_payload(b)[:-1]), "shorter than the header"),
        (lambda b: _rewrap(b"\x05\x00\x00\x00{nope"), "not JSON"),
        (lambda b: _header_says(b, samples=99), "shorter than the header"),
        (lambda b: _header_says(b, samples="4"), "mistypes"),
        (lambda b: _header_says(b, t_ms="z"), "unknown column width"),
        (lambda b: _header_says(b, series=[{"source": "disk stats"}]), "source"),
        (
            lambda b: _header_says(
                b, series=[{"source": "net", "device": "../x", "fields": []}]
            ),
            "device name",
        ),
        (lambda b: MAGIC + b"\x01" + zlib.compress(b"\0" * (300 << 20)), "too large"),
    ],
)
def test_a_bad_blob_is_refused_with_a_reason(bad: object, says: str) -> None:
    blob = bad(encode(recording()))  # type: ignore[operator]
    with pytest.raises(TelemetryBlobError, match=says):
        decode(blob)


def test_the_derived_metrics_say_how_they_were_computed() -> None:
    metrics = {(m.name, m.stat, m.scope): m for m in telemetry_metrics(recording())}
    assert all(m.method == "telemetry" for m in metrics.values())
    seconds = 2.417
    iops = metrics[("disk_read_iops", "mean", "loop0")]
    assert iops.value == pytest.approx(1130 / seconds, rel=1e-6)
    assert metrics[("disk_write_iops", "mean", "loop0")].value == 0
    mib = metrics[("disk_read_mib_s", "mean", "loop0")].value
    assert mib == pytest.approx(18080 * 512 / 2**20 / seconds, rel=1e-5)
    # per-interval means 380/512 < 372/498 < 90/120: p50 is the middle one
    p50 = metrics[("disk_await_ms", "p50", "loop0")]
    assert p50.value == pytest.approx(372 / 498, rel=1e-5)
    assert "interval means" in p50.source_key
    assert "not per-I/O" in p50.source_key
    assert ("disk_await_ms", "p99", "loop0") in metrics
    pressure = metrics[("io_pressure_full_pct", "mean", "host")]
    assert pressure.value == pytest.approx(100 * 141_700 / 2_417_000, rel=1e-5)
    peak = metrics[("io_pressure_full_pct", "max", "host")].value
    assert peak == pytest.approx(10.0)
    assert metrics[("gpu_util_pct", "mean", "gpu0")].value == 50
    assert metrics[("gpu_mem_used_mib", "max", "gpu0")].value == 4000


def test_only_the_watched_devices_get_disk_metrics() -> None:
    sampled = recording()
    sampled.series.append(SeriesData("diskstats", "vda", {**sampled.series[0].fields}))
    scopes = {m.scope for m in telemetry_metrics(sampled) if m.name.startswith("disk")}
    assert scopes == {"loop0"}
    everything = telemetry_metrics(sampled, devices=["loop0", "vda"])
    disks = {m.scope for m in everything if m.name.startswith("disk")}
    assert disks == {"loop0", "vda", ""}  # "": the two devices' sum


def test_an_idle_or_empty_recording_derives_nothing_wrong() -> None:
    empty = Recording(1000, "2026-12-04T20:00:00.000Z", [0], [], [], [])
    assert telemetry_metrics(empty) == []
    assert decode(encode(empty)) == empty


def test_several_devices_also_give_one_unscoped_figure_a_gate_can_name() -> None:
    sampled = recording()
    disk = sampled.series[0]
    sampled.series += [
        SeriesData("diskstats", "loop1", {**disk.fields}),
        SeriesData("gpu", "gpu1", {"gpu_util_pct": [0, 10, 20, 30],
                                   "gpu_mem_used_mib": [0, 0, 8000, 0]}),
    ]  # fmt: skip
    sampled.devices = ["loop0", "loop1"]
    unscoped = {
        (m.name, m.stat): m.value for m in telemetry_metrics(sampled) if not m.scope
    }
    assert unscoped[("disk_read_iops", "mean")] == pytest.approx(2 * 1130 / 2.417)
    assert unscoped[("gpu_util_pct", "mean")] == pytest.approx((50 + 15) / 2)
    assert unscoped[("gpu_mem_used_mib", "max")] == 8000
    assert ("disk_await_ms", "p50") not in unscoped  # interval means do not add up
