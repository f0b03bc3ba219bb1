"""``reprogate parse PARSER FILE``: JSON lines on stdout, warnings on stderr,
exit 0; unknown parser, unreadable file or rejected input: stderr, exit 2."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from reprogate_cli.main import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "outputs"
FIO = FIXTURES / "fio-3.1_randread-1-1.json"
FIO_WINDOWED_LOG = FIXTURES / "fio-3.1_random-read-depth-16_clat.1.log"


def test_prints_one_json_object_per_metric(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["parse", "fio-json", str(FIO)])

    captured = capsys.readouterr()
    assert status == 0
    lines = [json.loads(line) for line in captured.out.splitlines()]
    assert len(lines) == 36
    p999 = [x for x in lines if x["name"] == "read_clat_us" and x["stat"] == "p99.9"]
    assert p999 == [
        {"name": "read_clat_us", "stat": "p99.9", "value": 464.896, "unit": "us",
         "scope": "random-read", "scenario": None, "method": "tool",
         "source_key": "jobs[0].read.clat_ns.percentile['99.900000']"}
    ]  # fmt: skip
    assert captured.err == ""


def test_warnings_go_to_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "out.json"
    path.write_bytes(b"fio: pid=9, err=5/file:io_u.c:1756\n" + FIO.read_bytes())

    status = main(["parse", "fio-json", str(path)])

    captured = capsys.readouterr()
    assert status == 0
    assert "reprogate: warning: skipped" in captured.err
    assert len(captured.out.splitlines()) == 36


def test_an_averaged_latency_log_prints_window_means_and_says_why(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status = main(["parse", "fio-lat-log", str(FIO_WINDOWED_LOG)])

    captured = capsys.readouterr()
    assert status == 0
    lines = [json.loads(line) for line in captured.out.splitlines()]
    assert [(x["name"], x["stat"]) for x in lines] == [
        ("write_clat_window_mean_us", "min"),
        ("write_clat_window_mean_us", "max"),
        ("write_clat_window_mean_us", "mean"),
    ]
    assert {x["method"] for x in lines} == {"recomputed:lat-log-windows"}
    assert "reprogate: warning:" in captured.err
    assert "log_avg_msec" in captured.err
    assert main(["parse", "fio-lat-log", str(FIO_WINDOWED_LOG), "--series"]) == 0
    series = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert (series["name"], len(series["points"])) == ("write_clat_window_mean_us", 121)


def test_reads_stdin_and_prints_series(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    metric = {"name": "x_ms", "stat": "max", "value": 2, "unit": "ms"}
    series = {"name": "cache_hit_rate", "unit": "ratio", "points": [[0, 0.5]]}
    doc = {"metrics": [metric], "series": [series]}
    monkeypatch.setattr(
        sys, "stdin", io.TextIOWrapper(io.BytesIO(json.dumps(doc).encode()))
    )

    status = main(["parse", "reprogate-metrics", "-", "--series"])

    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert status == 0
    assert lines[0]["value"] == 2.0
    assert lines[1]["points"] == [[0.0, 0.5]]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["parse", "iozone", str(FIO)], "unknown parser 'iozone' (known: fio-json"),
        (
            ["parse", "fio-json", "/nonexistent/out.json"],
            "cannot read /nonexistent/out.json",
        ),
        (["parse", "fio-json", str(FIXTURES)], "cannot read"),
        (
            ["parse", "vllm-bench", str(FIO)],
            "is not valid vllm-bench output:\n  not vllm bench serve",
        ),
    ],
)
def test_errors_exit_2_with_a_message(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(argv)

    captured = capsys.readouterr()
    assert status == 2
    assert message in captured.err
    assert captured.out == ""


def test_parses_where_the_c_library_has_no_mallopt(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import ctypes

    monkeypatch.setattr(ctypes, "CDLL", lambda _: object())  # e.g. not glibc
    path = tmp_path / "job_clat.1.log"
    path.write_bytes(b"1, 2000, 0, 4096, 0\n2, 4000, 0, 4096, 0\n")

    assert main(["parse", "fio-lat-log", str(path)]) == 0

    metrics = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    means = [m["value"] for m in metrics if m["stat"] == "mean"]
    assert means == [3.0]
