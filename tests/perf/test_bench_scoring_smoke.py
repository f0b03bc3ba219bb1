"""The scoring page benchmark runs end to end at a small size (in-memory SQLite):
it proves the script works and prints a row per page; no timing asserted."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # migrates a database in a subprocess
@pytest.mark.timeout(600)
def test_bench_scoring_prints_a_row_per_page_and_exits_0() -> None:
    command = [sys.executable, "-m", "tests.perf.bench_scoring", "--bids", "2"]
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}

    done = subprocess.run(
        [*command, "--criteria", "2", "--evaluators", "1", "--repeat", "1"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r"^python \d+\.\d+\.\d+, django \d+\.\d+", done.stdout, re.M)
    row = r"^(.+?)\s+(\d+)\s+\d+\.\d\s+\d+\.\d\s+\d+\.\d$"
    rows = re.findall(row, done.stdout, re.M)
    assert len(rows) == 7
    assert rows[0][0].startswith("score sheet")
    assert rows[1][0].startswith("its evidence")
