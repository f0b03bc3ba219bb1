"""A reader that goes away early (``reprogate gate evaluate … | head -c 100``, as
for any command that prints line by line) ends the command quietly: no traceback
on stderr, the shell's SIGPIPE status."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.perf.bench_gates import build


def test_output_into_a_closed_pipe_ends_without_a_traceback(tmp_path: Path) -> None:
    plan, results = build(runs=30, scenarios=1)
    gate = plan["gates"][0]  # 400 gates: 400 lines, far more than a pipe holds
    plan["gates"] = [{**gate, "name": f"gate-{i}"} for i in range(400)]
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    (tmp_path / "results.json").write_text(json.dumps(results))
    command = [sys.executable, "-m", "reprogate_cli.main", "gate", "evaluate"]
    command += ["--plan", "plan.json", "--results", "results.json"]

    with subprocess.Popen(
        command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as process:
        assert process.stdout is not None
        assert process.stderr is not None
        start = process.stdout.read(100)
        process.stdout.close()
        errors = process.stderr.read().decode()
        status = process.wait(timeout=60)

    assert start.startswith(b"{")
    assert "Traceback" not in errors
    assert status == 141
