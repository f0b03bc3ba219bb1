"""The log benchmark runs end to end at a small size (2,000 entries). It proves
the script works and prints its figures; it asserts nothing about timing."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MEAN = r"inclusion proof at ([\d,]+) entries, mean ms\s+\d+\.\d\d"


def test_bench_log_prints_its_figures_and_exits_0() -> None:
    command = [sys.executable, "-m", "tests.perf.bench_log"]

    done = subprocess.run(
        [*command, "--entries", "2000", "--points", "1000,2000"],
        cwd=ROOT, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert re.search(r"^appends/s overall\s+\d+$", out, re.M)
    assert re.findall(MEAN, out) == ["1,000", "2,000"]
    nodes = [int(n) for n in re.findall(r"stored nodes read \(max\)\s+(\d+)", out)]
    assert len(nodes) == 2
    assert all(0 < n <= 2 * 11 for n in nodes)  # 2 per level, not 2,000 leaves
    assert re.findall(r"queries \(max\)\s+(\d+)", out) == ["2", "2"]
    assert re.search(r"checkpoint signed at size\s+2,000", out)
