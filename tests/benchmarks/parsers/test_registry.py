"""The registry: names, limits, and no traceback ever reaching the caller."""

from __future__ import annotations

from pathlib import Path

import pytest

import benchmarks.lib.parsers as registry
from benchmarks.lib.parsers import ParseError, UnknownParser, parse, parse_file
from benchmarks.lib.parsers.model import ParseResult, percentile_stat, unit_for_name


def test_unknown_parser_raises_naming_the_known_ones() -> None:
    with pytest.raises(UnknownParser, match="known: fio-json, fio-lat-log"):
        parse("iozone", b"")
    with pytest.raises(UnknownParser):
        parse_file("iozone", Path("/nonexistent"))


def test_a_missing_file_is_an_oserror_for_the_caller() -> None:
    with pytest.raises(FileNotFoundError):
        parse_file("fio-json", Path("/nonexistent/out.json"))


def test_input_over_the_size_limit_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(registry, "MAX_INPUT_BYTES", 10)
    path = tmp_path / "big.json"
    path.write_bytes(b'{"jobs": [1, 2, 3]}')

    result = parse_file("fio-json", path)

    assert "over the 10 byte limit" in str(result.problems[0])


def test_a_parser_bug_becomes_a_problem_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(data: bytes, result: ParseResult) -> None:
        raise ZeroDivisionError("boom")

    monkeypatch.setitem(registry.PARSERS, "fio-json", broken)

    result = parse("fio-json", b"{}")

    assert "the fio-json parser failed on this input (ZeroDivisionError: boom)" in str(
        result.problems[0]
    )


def test_raise_for_problems_gives_back_a_parse_error() -> None:
    result = parse("fio-json", b"nope")

    with pytest.raises(ParseError, match="no JSON object found"):
        result.raise_for_problems()


@pytest.mark.parametrize(
    ("p", "stat"), [(99.9, "p99.9"), (50.0, "p50"), (99.99, "p99.99"), (0.1, "p0.1")]
)
def test_percentile_stat_spelling(p: float, stat: str) -> None:
    assert percentile_stat(p) == stat


@pytest.mark.parametrize(
    ("name", "unit"),
    [
        ("read_bw_mib_s", "MiB/s"),
        ("duration_s", "s"),
        ("ttft_ms", "ms"),
        ("read_iops", "IO/s"),
        ("cache_hit_rate", None),
        ("failed_requests", None),
    ],
)
def test_unit_suffixes(name: str, unit: str | None) -> None:
    assert unit_for_name(name) == unit
