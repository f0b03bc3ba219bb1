"""The interference scenario's arithmetic per tenant: fio's report, the
devices' counters, the neighbour's cgroup I/O in the victim's window, and the
victim's share of the devices' I/O (counted, or estimated without accounting)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.lib.lab.scenarios.tenants import (
    MIB,
    diskstats,
    diskstats_delta,
    fio_figures,
    fio_report,
    io_delta,
    victim_figures,
)

REPORT = """fio: terminating on signal 15
{"fio version": "fio-3.33", "jobs": [{"jobname": "neighbour", "job_runtime": 2000,
 "read": {"iops": 500.0, "bw_bytes": 2048000, "total_ios": 1000,
          "clat_ns": {"mean": 40000.0,
                      "percentile": {"50.000000": 17000, "99.000000": 440000}}},
 "write": {"iops": 0.0, "bw_bytes": 0, "total_ios": 0, "clat_ns": {}}}]}
"""
DISKSTATS = (
    "   7       0 loop0 100 0 800 50 40 0 320 30 0 60 80 0 0 0 0 0 0\n"
    "   7       1 loop1 9 0 9 9 9 0 9 9 0 9 9 0 0 0 0 0 0\n"
)


def test_fio_s_report_is_read_after_its_signal_line() -> None:
    figures = fio_figures(fio_report(REPORT))

    assert figures["iops"] == 500.0
    assert figures["ios"] == 1000
    assert figures["runtime_s"] == 2.0
    assert figures["mib_s"] == pytest.approx(2048000 / MIB)
    assert figures["read"]["lat_us"] == {"mean": 40.0, "p50": 17.0, "p99": 440.0}
    assert "write" not in figures  # no I/O that way, no latency


def test_a_report_that_is_not_json_is_refused() -> None:
    with pytest.raises(ValueError, match="not a fio JSON report"):
        fio_report("fio: only root may flush block devices\n")


def test_diskstats_sum_reads_and_writes_of_the_named_devices(tmp_path: Path) -> None:
    path = tmp_path / "diskstats"
    path.write_text(DISKSTATS)

    found = diskstats(["loop0"], path)

    assert found == {"loop0": {"ios": 140, "sectors": 1120, "ticks_ms": 80}}
    later = {"loop0": {"ios": 240, "sectors": 1920, "ticks_ms": 130}}
    assert diskstats_delta(found, later) == {"ios": 100, "sectors": 800, "ticks_ms": 50}


def test_the_neighbour_s_cgroup_counts_between_two_readings() -> None:
    start = {"reads": 10, "writes": 5, "read_bytes": 40960, "write_bytes": 20480}
    end = {"reads": 510, "writes": 5, "read_bytes": 2088960, "write_bytes": 20480}

    assert io_delta(start, end) == {"ios": 500, "bytes": 2048000}
    assert io_delta(None, end) is None


def test_the_victim_gets_the_devices_i_o_less_the_neighbour_s_counted_one() -> None:
    device = {"ios": 3000, "sectors": 3000 * 8, "ticks_ms": 600}

    victim = victim_figures(2.0, device, {"ios": 1000, "bytes": 1000 * 4096})

    assert victim["ios"] == 2000
    assert victim["iops"] == 1000.0
    assert victim["mib_s"] == pytest.approx(2000 * 4096 / MIB / 2)
    assert victim["device_await_ms"] == 0.2
    assert victim["source"] == "diskstats less the neighbour's cgroup"


def test_without_accounting_the_neighbour_s_share_is_its_fio_rate() -> None:
    device = {"ios": 3000, "sectors": 3000 * 8, "ticks_ms": 600}
    fio = {"iops": 500.0, "mib_s": 500 * 4096 / MIB}

    victim = victim_figures(2.0, device, None, fio)

    assert victim["ios"] == 2000
    assert victim["source"] == "diskstats less the neighbour's fio rate (estimate)"


def test_alone_the_victim_is_the_devices_and_never_below_zero() -> None:
    quiet = {"ios": 0, "sectors": 0, "ticks_ms": 0}

    alone = victim_figures(1.0, {"ios": 10, "sectors": 80, "ticks_ms": 1})
    overdrawn = victim_figures(1.0, quiet, {"ios": 5, "bytes": 4096})

    assert (alone["ios"], alone["source"]) == (10, "diskstats")
    assert (overdrawn["ios"], overdrawn["bytes"], overdrawn["iops"]) == (0, 0, 0.0)
    assert overdrawn["device_await_ms"] is None
