"""The real fio binary (Debian's package; ``.ci/run`` installs it) writes
json+ on a small scratch file; ``reprogate parse fio-json`` must give back
fio's own percentiles (ns -> µs) and the same figures recomputed from the
bins; its latency log must agree with its JSON."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from benchmarks.lib.parsers import parse_file
from benchmarks.lib.parsers.model import percentile_stat
from benchmarks.lib.parsers.percentiles import linear
from reprogate_cli.main import main

FIO = shutil.which("fio")
pytestmark = pytest.mark.skipif(
    FIO is None, reason="the fio binary is not installed (apt-get install fio)"
)


def run_fio(tmp_path: Path, *options: str) -> dict[str, Any]:
    out = tmp_path / "out.json"
    command = [
        str(FIO), "--name=rw", f"--filename={tmp_path / 'scratch'}", "--size=1M",
        "--bs=4k", "--rw=randrw", "--ioengine=psync", "--output-format=json+",
        f"--output={out}", *options,
    ]  # fmt: skip
    subprocess.run(command, cwd=tmp_path, check=True, capture_output=True, timeout=120)
    return json.loads(out.read_text())


def cli_metrics(path: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    assert main(["parse", "fio-json", str(path)]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""  # no warning: nothing disagrees
    return [json.loads(line) for line in captured.out.splitlines()]


def by_key(metrics: list[dict[str, Any]]) -> dict[tuple[str, str, str, str], float]:
    return {
        (m["name"], m["stat"], m["scope"], m["method"]): m["value"] for m in metrics
    }


def test_parse_gives_fios_own_percentiles_and_the_bins_agree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = run_fio(tmp_path)

    found = by_key(cli_metrics(tmp_path / "out.json", capsys))

    checked = 0
    for ddir in ("read", "write"):
        clat = raw["jobs"][0][ddir]["clat_ns"]
        for key, ns in clat["percentile"].items():
            name, stat = f"{ddir}_clat_us", percentile_stat(float(key))
            assert found[(name, stat, "rw", "tool")] == ns / 1000
            recomputed = found[(name, stat, "rw", "recomputed:json+bins")]
            assert recomputed == pytest.approx(ns / 1000, rel=0.005)
            checked += 1
        assert found[(f"{ddir}_clat_us", "max", "rw", "tool")] == clat["max"] / 1000
        assert (
            found[(f"{ddir}_iops", "mean", "rw", "tool")]
            == raw["jobs"][0][ddir]["iops"]
        )
    assert checked == 2 * 17  # fio's default list, read and write


def test_group_reporting_and_total_latency_percentiles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = run_fio(tmp_path, "--numjobs=2", "--group_reporting", "--lat_percentiles=1")

    found = by_key(cli_metrics(tmp_path / "out.json", capsys))

    assert len(raw["jobs"]) == 1
    lat = raw["jobs"][0]["read"]["lat_ns"]
    p99 = found[("read_lat_us", "p99", "rw", "tool")]
    assert p99 == lat["percentile"]["99.000000"] / 1000
    assert found[("read_lat_us", "p99", "rw", "recomputed:json+bins")] == pytest.approx(
        p99, rel=0.005
    )


def test_the_latency_log_agrees_with_fios_json(tmp_path: Path) -> None:
    raw = run_fio(tmp_path, "--write_lat_log=rw", "--lat_percentiles=1")
    log = tmp_path / "rw_lat.1.log"
    samples: dict[int, list[int]] = {0: [], 1: []}
    for line in log.read_text().splitlines():
        fields = line.split(", ")
        samples[int(fields[2])].append(int(fields[1]))

    result = parse_file("fio-lat-log", log)

    assert result.ok, result.problems
    assert result.info["logging"] == "per-io"
    for d, ddir in enumerate(("read", "write")):
        lat, values = raw["jobs"][0][ddir]["lat_ns"], sorted(samples[d])
        assert result.info["samples"][ddir] == lat["N"] == len(values)
        figures = {
            m.stat: m.value for m in result.metrics if m.name == f"{ddir}_lat_us"
        }
        assert figures["min"] == lat["min"] / 1000
        assert figures["max"] == lat["max"] / 1000
        assert figures["mean"] == pytest.approx(lat["mean"] / 1000, rel=1e-6)
        for p in (50.0, 90.0, 99.0):
            ours = figures[percentile_stat(p)]
            assert ours == pytest.approx(linear(values, p) / 1000, rel=0.00025)
            # fio: the first bin whose running count reaches p% of N, reported
            # as the bin's midpoint (bins are at most 1/64 of the value wide)
            rank = math.ceil(Fraction(p) / 100 * len(values))
            fios = lat["percentile"][f"{p:f}"]
            assert fios == pytest.approx(values[rank - 1], rel=1 / 64)


def test_a_latency_log_fio_averaged_gives_window_means(tmp_path: Path) -> None:
    raw = run_fio(
        tmp_path, "--write_lat_log=avg", "--log_avg_msec=100", "--time_based",
        "--runtime=1",
    )  # fmt: skip
    log = tmp_path / "avg_clat.1.log"
    windows: dict[int, list[int]] = {0: [], 1: []}
    for line in log.read_text().splitlines():
        fields = line.split(", ")
        assert fields[3] == "0"  # fio's block size on a window's line
        windows[int(fields[2])].append(int(fields[1]))

    result = parse_file("fio-lat-log", log)

    assert raw["jobs"][0]["job options"]["log_avg_msec"] == "100"
    assert result.ok, result.problems
    assert result.info["logging"] == "windowed"
    assert not [m for m in result.metrics if m.stat.startswith("p")]
    for d, ddir in enumerate(("read", "write")):
        name, values = f"{ddir}_clat_window_mean_us", windows[d]
        assert result.info["windows"][ddir] == len(values) >= 5
        figures = {m.stat: m.value for m in result.metrics if m.name == name}
        assert figures["mean"] == pytest.approx(sum(values) / len(values) / 1000)
        assert figures["max"] == max(values) / 1000
        [points] = [s.points for s in result.series if s.name == name]
        assert [v for _, v in points] == [v / 1000 for v in values]
