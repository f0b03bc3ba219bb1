"""SandboxLimits validation and the ::progress:: line format."""

from __future__ import annotations

import pytest

from benchmarks.lib.sandbox import SandboxLimits, parse_progress


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("::progress:: 0.42", 0.42),
        ("::progress::0.5", 0.5),
        ("  ::progress::   1  ", 1.0),
        ("::progress:: 1.5", 1.0),
        ("::progress:: -0.2", 0.0),
        ("::progress:: .25", 0.25),
        ("::progress:: 5e-1", 0.5),
    ],
)
def test_parse_progress_reads_and_clamps(line: str, expected: float) -> None:
    assert parse_progress(line) == expected


@pytest.mark.parametrize(
    "line",
    [
        "progress 0.4",
        "::progress:: ",
        "::progress:: nan",
        "::progress:: inf",
        "::progress:: 0.4 done",
        "echo ::progress:: 0.4",
        "::progress:: 0x10",
        "",
    ],
)
def test_parse_progress_ignores_other_lines(line: str) -> None:
    assert parse_progress(line) is None


def test_limits_defaults_are_the_runner_contract() -> None:
    limits = SandboxLimits()

    assert limits.memory_bytes == 4 << 30
    assert limits.output_bytes == 64 << 20
    assert limits.network is False
    assert limits.as_dict()["processes"] == 256


@pytest.mark.parametrize(
    "bad",
    [
        {"wall_seconds": 0},
        {"cpu_seconds": -1},
        {"memory_bytes": float("inf")},
        {"processes": 1},
        {"output_bytes": True},
        {"file_bytes": "1G"},
    ],
)
def test_limits_reject_nonsense(bad: dict[str, object]) -> None:
    with pytest.raises((ValueError, TypeError)):
        SandboxLimits(**bad)  # type: ignore[arg-type]
