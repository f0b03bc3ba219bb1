"""The signed report benchmark runs end to end at 2 pages without charts (no
Chromium needed): it renders, signs and counts the pages, and prints its figures
and versions. Nothing about timing is asserted."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_reports_prints_its_figures_and_exits_0() -> None:
    command = [sys.executable, "-m", "tests.perf.bench_reports", "--pages", "2"]

    done = subprocess.run(
        [*command, "--repeat", "2", "--no-charts"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert re.search(r"^python [\d.]+, weasyprint [\d.]+, pyhanko [\d.]+, kaleido", out)
    pages = int(re.search(r"^pages\s+(\d+)$", out, re.M).group(1))
    assert pages >= 2
    for step in ("charts", "render", "sign", "total"):
        # the first run's wall and CPU seconds, then the later runs' median ones
        figures = r"\s+\d+\.\d\d" * 4
        assert re.search(rf"^{step} \(s\){figures}$", out, re.M), step
    assert re.search(r"^target under 10 s, first run\s+(met|NOT met)$", out, re.M)
    assert re.search(r"^target under\s+6 s, later runs\s+(met|NOT met)$", out, re.M)
    assert re.search(r"^warm-up at the worker's start none", out, re.M)
    runs = re.findall(r"^run \d: charts .* total \d+\.\d\d s, (\d+) pages$", out, re.M)
    assert runs == [str(pages)] * 2


def test_bench_reports_refuses_nonsense_arguments() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tests.perf.bench_reports", "--pages", "0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 2
    assert "must be at least 1" in done.stderr
