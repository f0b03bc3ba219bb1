"""``python -m benchmarks.lib.workloads generate``: the trace, its ``.sha256`` file
(``sha256sum -c`` format) and the digest on stdout; a bad profile exits 2."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.lib.workloads.cli import main
from tests.benchmarks.workloads.test_tracegen import SMALL, SMALL_DIGEST

ROOT = Path(__file__).resolve().parents[3]


def test_generate_writes_the_trace_and_its_digest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "small.json").write_text(json.dumps(SMALL))
    out = tmp_path / "trace.jsonl"

    status = main(
        ["generate", str(tmp_path / "small.json"), "--seed", "7", "-o", str(out)]
    )

    assert status == 0
    assert hashlib.sha256(out.read_bytes()).hexdigest() == SMALL_DIGEST
    assert (
        tmp_path / "trace.jsonl.sha256"
    ).read_text() == f"{SMALL_DIGEST}  trace.jsonl\n"
    assert capsys.readouterr().out.startswith(f"{SMALL_DIGEST}  {out}  (40 requests")


def test_workload_file_with_concurrency_and_count(tmp_path: Path) -> None:
    workload = ROOT / "examples/acme-flash/workloads/llama70b-chat.json"
    out = tmp_path / "t.jsonl"

    status = main(
        [
            "generate",
            str(workload),
            "--concurrency",
            "8",
            "--count",
            "25",
            "-o",
            str(out),
        ]
    )

    lines = out.read_text().splitlines()
    assert status == 0
    assert json.loads(lines[0])["seed"] == 20261129  # the workload's own seed
    assert len(lines) == 26


def test_rate_per_stream_without_concurrency_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workload = ROOT / "examples/acme-flash/workloads/llama70b-chat.json"

    status = main(["generate", str(workload), "-o", str(tmp_path / "t.jsonl")])

    assert status == 2
    assert "needs the scenario's concurrency" in capsys.readouterr().err
    assert not (tmp_path / "t.jsonl").exists()


def test_missing_seed_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "p.json").write_text(json.dumps(SMALL))

    status = main(["generate", str(tmp_path / "p.json"), "-o", str(tmp_path / "t")])

    assert status == 2
    assert "--seed: required" in capsys.readouterr().err


def test_runs_as_a_module(tmp_path: Path) -> None:
    (tmp_path / "small.json").write_text(json.dumps(SMALL))

    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.lib.workloads", "generate",
         str(tmp_path / "small.json"), "--seed", "7", "-o", str(tmp_path / "t.jsonl")],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == SMALL_DIGEST
