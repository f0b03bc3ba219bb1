"""Metrics derived from a run's telemetry (``method: "telemetry"``).

- ``disk_read_iops`` / ``disk_write_iops`` (mean), ``disk_read_mib_s`` /
  ``disk_write_mib_s`` (mean): the device's totals over the sampled time;
- ``disk_await_ms`` ``p50``/``p99``: percentiles **of interval means** (each
  interval's Δticks / Δios from ``/proc/diskstats``), never per-I/O percentiles
  — ``source_key`` says so;
- ``io_pressure_full_pct`` (mean, max): the share of time every task stalled on
  I/O (host PSI);
- ``gpu_util_pct`` (mean, max), ``gpu_mem_used_mib`` (max) per GPU;
- ``disk_io_latency_us`` ``p50``/``p99``/``p99.9``: single I/Os, only from the
  eBPF histogram (``benchmarks.lib.lab.blocklat``) when the run has one.

Scope: the device (``loop0``, ``gpu0``) or ``host``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from statistics import fmean
from typing import Any, Final

from benchmarks.lib.lab.blocklat import Histogram
from benchmarks.lib.lab.telemetry_blob import Recording, SeriesData
from benchmarks.lib.parsers.model import Metric
from benchmarks.lib.parsers.percentiles import linear

METHOD: Final = "telemetry"
SECTOR_BYTES: Final = 512
MIB: Final = 1 << 20


def _metric(
    name: str, stat: str, value: float, unit: str, key: str, scope: str
) -> Metric:
    return Metric(name, stat, round(value, 6), unit, key, method=METHOD, scope=scope)


def _disk(s: SeriesData, seconds: float) -> list[Metric]:
    f, key = s.fields, f"diskstats:{s.device}"
    if seconds <= 0 or "reads_completed" not in f:
        return []
    found = [
        _metric(
            "disk_read_iops",
            "mean",
            sum(f["reads_completed"]) / seconds,
            "IO/s",
            key,
            s.device,
        ),
        _metric(
            "disk_write_iops",
            "mean",
            sum(f["writes_completed"]) / seconds,
            "IO/s",
            key,
            s.device,
        ),
        _metric(
            "disk_read_mib_s",
            "mean",
            sum(f["sectors_read"]) * SECTOR_BYTES / MIB / seconds,
            "MiB/s",
            key,
            s.device,
        ),
        _metric(
            "disk_write_mib_s",
            "mean",
            sum(f["sectors_written"]) * SECTOR_BYTES / MIB / seconds,
            "MiB/s",
            key,
            s.device,
        ),
    ]
    means = sorted(
        (rt + wt) / (r + w)
        for r, w, rt, wt in zip(
            f["reads_completed"],
            f["writes_completed"],
            f["read_ticks_ms"],
            f["write_ticks_ms"],
            strict=True,
        )
        if r + w > 0
    )
    for p, stat in ((50.0, "p50"), (99.0, "p99")):
        if means:
            what = (
                f"{key}: {stat} of {len(means)} interval means of "
                "(read+write ticks)/ios, not per-I/O"
            )
            found.append(
                _metric("disk_await_ms", stat, linear(means, p), "ms", what, s.device)
            )
    return found


def _pressure(s: SeriesData, t_ms: Sequence[int]) -> list[Metric]:
    full = s.fields.get("io_full_us")
    if not full or len(t_ms) < 2 or t_ms[-1] <= 0:
        return []
    key = f"pressure:{s.device}:io full total"
    shares = [
        100 * d / (1000 * (b - a))
        for d, a, b in zip(full[1:], t_ms, t_ms[1:], strict=False)
        if b > a
    ]
    found = [
        _metric(
            "io_pressure_full_pct",
            "mean",
            100 * sum(full) / (1000 * t_ms[-1]),
            "%",
            key,
            s.device,
        )
    ]
    if shares:
        found.append(
            _metric(
                "io_pressure_full_pct",
                "max",
                min(100.0, max(shares)),
                "%",
                key,
                s.device,
            )
        )
    return found


def _gpu(s: SeriesData) -> list[Metric]:
    util, memory, key = (
        s.fields.get("gpu_util_pct"),
        s.fields.get("gpu_mem_used_mib"),
        f"gpu:{s.device}",
    )
    found = []
    if util:
        found.append(
            _metric("gpu_util_pct", "mean", sum(util) / len(util), "%", key, s.device)
        )
        found.append(_metric("gpu_util_pct", "max", max(util), "%", key, s.device))
    if memory:
        found.append(
            _metric("gpu_mem_used_mib", "max", max(memory), "MiB", key, s.device)
        )
    return found


def telemetry_metrics(
    recording: Recording, devices: Sequence[str] | None = None
) -> list[Metric]:
    """The derived metrics; disk figures for ``devices`` (default: the ones the
    recording names as watched, not those under them; all when it names none)."""
    devices = devices if devices is not None else (recording.devices or None)
    seconds = recording.t_ms[-1] / 1000 if recording.t_ms else 0.0
    found: list[Metric] = []
    disks, gpus = 0, 0
    for s in recording.series:
        if s.source == "diskstats" and (devices is None or s.device in devices):
            found += _disk(s, seconds)
            disks += 1
        elif s.source == "pressure":
            found += _pressure(s, recording.t_ms)
        elif s.source == "gpu":
            found += _gpu(s)
            gpus += 1
    for histogram in recording.histograms:
        found += _latency(histogram)
    return found + _totals(found, disks, gpus)


def _latency(entry: dict[str, Any]) -> list[Metric]:
    """``disk_io_latency_us`` from the eBPF histogram of single I/Os."""
    buckets = [(int(lo), int(hi), int(n)) for lo, hi, n in entry.get("buckets") or []]
    histogram = Histogram(str(entry.get("device")), buckets)
    if histogram.count <= 0:
        return []
    key = (
        f"block_latency:{histogram.device}: upper bound of the log2 bucket "
        f"(eBPF block_rq_issue to complete, {histogram.count} I/Os)"
    )
    return [
        _metric("disk_io_latency_us", stat, histogram.percentile(p), "us", key,
                histogram.device)
        for p, stat in ((50.0, "p50"), (99.0, "p99"), (99.9, "p99.9"))
    ]  # fmt: skip


def _totals(found: list[Metric], disks: int, gpus: int) -> list[Metric]:
    """With several devices, one unscoped figure a gate can name: the devices'
    summed throughput, the GPUs' mean utilisation and largest memory use."""
    totals = []
    rules: list[tuple[int, tuple[str, ...], str, Callable[[list[float]], float], str]]
    rules = [
        (disks, ("disk_read_iops", "disk_write_iops", "disk_read_mib_s",
                 "disk_write_mib_s"), "mean", sum, "sum"),
        (gpus, ("gpu_util_pct",), "mean", fmean, "mean"),
        (gpus, ("gpu_mem_used_mib",), "max", max, "max"),
    ]  # fmt: skip
    for count, names, stat, combine, how in rules:
        if count < 2:
            continue
        for name in names:
            picked = [m for m in found if m.name == name and m.stat == stat]
            if picked:
                key = f"{how} over {', '.join(m.scope for m in picked)}"
                value = combine([m.value for m in picked])
                totals.append(_metric(name, stat, value, picked[0].unit, key, ""))
    return totals
