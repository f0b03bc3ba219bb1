"""The soak test (``tests/perf/soak.py``) for a minute in the suite: the embedded
default under its clients while its runner worker is killed, then its figures. It
must end with no errors and no lost run; no timing is asserted (the hour's figures
are in tests/perf/README.md)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]

ROOT = Path(__file__).resolve().parents[2]


def _figure(name: str, text: str) -> int:
    found = re.search(rf"^{re.escape(name)} +(\d+)", text, re.M)
    assert found, f"no {name!r} line in:\n{text}"
    return int(found.group(1))


def test_the_soak_serves_every_client_and_loses_no_run_while_the_runner_is_killed(
    tmp_path: Path,
) -> None:
    command = [sys.executable, "-m", "tests.perf.soak", "--start", "direct"]
    # One campaign of 6 runs (about a minute, more with a killed run) starts at
    # once and none after it; with start-up and the wait for it, about 2.5 min.
    command += ["--seconds", "60", "--campaign-cutoff", "45"]
    command += ["--kill-every", "15", "30", "--work-dir", str(tmp_path / "soak")]

    done = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=400, check=False
    )

    output = done.stdout + done.stderr[-3000:]
    assert done.returncode == 0, output
    assert _figure("errors", done.stdout) == 0
    assert _figure("runs lost", done.stdout) == 0
    assert _figure("worker kills", done.stdout) >= 1, output
    assert _figure("campaigns started", done.stdout) >= 1
    started = _figure("runs started", done.stdout)
    assert started >= 6
    ended = _figure("runs succeeded", done.stdout) + _figure("runs failed", done.stdout)
    assert ended == started
    assert _figure("bundles uploaded", done.stdout) >= 4
    assert _figure("requests served", done.stdout) > 100
    for kind in ("api bundle upload", "api campaign start", "page gate board"):
        assert re.search(rf"^  {kind} +\d+ +\d+ +\d+ +\d+$", done.stdout, re.M), kind
