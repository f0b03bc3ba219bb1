"""The latency-log benchmark runs end to end at 200,000 samples: it prints its
figures and the parser's percentiles are within 0.1% of numpy's exact ones (a
correctness figure). Nothing about timing is asserted."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytest.importorskip("numpy", reason="fio-lat-log needs numpy (a project dependency)")
pytest.importorskip("pandas", reason="the yardstick needs pandas (a dev dependency)")


def test_bench_latlog_prints_its_figures_and_a_small_error() -> None:
    command = [sys.executable, "-m", "tests.perf.bench_latlog", "--samples", "200000"]

    done = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=240, check=False
    )

    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert re.search(r"^samples\s+200,000 ", out, re.M)
    seconds = re.findall(
        r"^(?:reprogate|pandas|  the same).*?(\d+\.\d\d) s\s+peak RSS\s+(\d+\.\d) MB",
        out,
        re.M,
    )
    assert len(seconds) == 3
    assert re.search(r"^speed ratio pandas / parser\s+\d+\.\d\d$", out, re.M)
    error = float(
        re.search(r"max relative percentile error\s+(\d+\.\d+) %", out).group(1)
    )
    assert error <= 0.1
