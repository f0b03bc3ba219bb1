"""The ingest benchmark runs end to end at a small size. It proves the script
works; it asserts nothing about timing (figures: tests/perf/README.md)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("mode", "repeat"), [("api", 2), ("file", 1)])
def test_bench_ingest_prints_its_figures_and_exits_0(mode: str, repeat: int) -> None:
    command = [sys.executable, "-m", "tests.perf.bench_ingest", "--size", "16MiB"]

    done = subprocess.run(
        [*command, "--small-files", "100", "--mode", mode, "--repeat", str(repeat)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    assert "status accepted" in done.stdout
    assert re.search(r"sha256 pass over the archive.*\d+\.\d+\s*$", done.stdout, re.M)
    ratio = r"throughput ratio ingest / sha256\s+\d+\.\d\d   target >= 0\.5$"
    assert re.search(ratio, done.stdout, re.M)  # a small bundle: 0.8 from 1 GiB
    assert re.search(r"peak RSS of the ingest process \(MB\)\s+\d+\.\d", done.stdout)
    assert re.search(r"CPU time of the call \(all threads\)\s+\d+\.\d\d", done.stdout)
    assert re.search(r"ratio scan alone / sha256\s+\d+\.\d\d", done.stdout)
    creation = r"^creating an empty file in the work folder .*: \d+ us each, "
    assert re.search(
        creation + r"\d+\.\d\d s for the bundle's \d+ files$", done.stdout, re.M
    )
    runs = re.findall(r"^run \d: ingest \d+\.\d\d s \(CPU", done.stdout, re.M)
    assert len(runs) == (repeat if repeat > 1 else 0)


def test_the_file_creation_probe_creates_its_files_and_leaves_them(
    tmp_path: Path,
) -> None:
    from tests.perf.bench_ingest import file_creation

    each = file_creation(tmp_path / "probe", count=25)

    assert each > 0
    assert sorted(p.name for p in (tmp_path / "probe").iterdir()) == [
        f"{n:07d}" for n in range(25)
    ]
    assert all(p.stat().st_size == 0 for p in (tmp_path / "probe").iterdir())
    with pytest.raises(FileExistsError):  # a fresh folder, never one in use
        file_creation(tmp_path / "probe", count=1)


def test_bench_gates_prints_its_figures_and_exits_0() -> None:
    """The gate evaluation benchmark at 200 runs: it works end to end and prints
    its figures (the 5,000-run figure is in docs/performance.md); no timing asserted."""
    command = [sys.executable, "-m", "tests.perf.bench_gates", "--runs", "200"]

    done = subprocess.run(
        [*command, "--repeat", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r"^python \d+\.\d+\.\d+, numpy \d+\.\d+", done.stdout, re.M)
    assert re.search(r"^runs\s+200 in 1 scenario", done.stdout, re.M)
    assert re.search(r"^criteria, stop-loss\s+7, 4$", done.stdout, re.M)
    assert re.search(r"^evaluate_plan CPU time \(s\)\s+\d+\.\d{3}", done.stdout, re.M)


def test_bench_gates_prints_constant_query_counts_for_2_and_20_vendors() -> None:
    """``--queries``: the gate board (selector and page) and the gate page cost
    the same number of queries for 2 and for 20 vendors."""
    command = [sys.executable, "-m", "tests.perf.bench_gates", "--runs", "50"]

    done = subprocess.run(
        [*command, "--repeat", "1", "--queries"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    found = re.findall(
        r"^queries, +(\d+) vendors +gate_board (\d+), board page (\d+), "
        r"gate page (\d+)$",
        done.stdout,
        re.M,
    )
    assert [n for n, *_ in found] == ["2", "20"]
    assert found[0][1:] == found[1][1:]
    assert re.search(r"^queries constant in vendors +yes$", done.stdout, re.M)
