"""The telemetry benchmark runs end to end in a small size: it prints its
figures, passes with the runner's own sources and fails when a source starts a
process per sample. Nothing about timing is asserted."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SMALL = ["--samples", "20", "--duration", "0.3", "--blob-seconds", "120"]


def _bench(*extra: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "tests.perf.bench_telemetry", *SMALL, *extra]
    return subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )


def test_bench_telemetry_prints_its_figures() -> None:
    done = _bench()

    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert re.search(r"^CPU per sample\s+[\d,]+ µs", out, re.M)
    assert re.search(r"^share of a core at 1 s\s+\d+\.\d+ %", out, re.M)
    assert re.search(r"^share of a core at 100 ms\s+\d+\.\d+ %", out, re.M)
    assert re.search(r"^blob, 120 s at 1 s, 16 devices\s+\d+\.\d+ MB", out, re.M)
    assert re.search(r"^encode / decode\s+\d+\.\d+ s / \d+\.\d+ s", out, re.M)
    assert "processes started by the sources while sampling: 0" in out


def test_bench_telemetry_fails_when_a_source_starts_a_process() -> None:
    done = _bench("--exec-source")

    assert done.returncode == 1
    assert re.search(r"FAIL: the sources started \d+ processes", done.stdout)
