"""Benchmark output parsers (docs/runner-contract.md): one registry, canonical metrics
out.

    from benchmarks.lib.parsers import parse, parse_file
    result = parse("fio-json", data, source_name="out.json")
    result.metrics, result.series, result.warnings, result.problems

Pure Python without Django (the ``reprogate`` CLI and the runner workers use
it); ``fio-lat-log`` needs numpy. Bad input never raises: ``parse`` returns a
result whose ``problems`` say what is wrong and where (``ParseError`` inside);
``result.raise_for_problems()`` turns them back into a ``ParseError``. Only an
unknown parser name raises (``UnknownParser``).
"""

from __future__ import annotations

import importlib
import io
import logging
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, Final

from benchmarks.lib.parsers.model import (
    Metric,
    ParseError,
    ParseResult,
    Problem,
    Series,
)

__all__ = [
    "PARSERS",
    "Metric",
    "ParseError",
    "ParseResult",
    "Problem",
    "Series",
    "UnknownParser",
    "parse",
    "parse_file",
    "parse_stream",
]

logger = logging.getLogger(__name__)

MAX_INPUT_BYTES: Final = 256 * 1024 * 1024
Parser = Callable[[bytes, ParseResult], None]


def _imported_when_used(module: str, function: str) -> Parser:
    """A parser whose module is imported on its first use: ``reprogate parse``
    runs one parser per process, and should not wait for the others."""

    def parser(data: bytes, result: ParseResult) -> None:
        found = importlib.import_module(f"benchmarks.lib.parsers.{module}")
        getattr(found, function)(data, result)

    return parser


PARSERS: Final[dict[str, Parser]] = {
    "fio-json": _imported_when_used("fio", "parse_fio"),
    "vllm-bench": _imported_when_used("vllm", "parse_vllm"),
    "mlperf-loadgen": _imported_when_used("loadgen", "parse_loadgen"),
    "mlperf-storage": _imported_when_used("mlperf_storage", "parse_mlperf_storage"),
    "reprogate-metrics": _imported_when_used(
        "reprogate_metrics", "parse_reprogate_metrics"
    ),
}
STREAMING: Final = frozenset({"fio-lat-log"})
NAMES: Final = tuple(sorted([*PARSERS, *STREAMING]))


class UnknownParser(ValueError):
    def __init__(self, name: str):
        super().__init__(f"unknown parser {name!r} (known: {', '.join(NAMES)})")


def parse(parser_name: str, data: bytes, *, source_name: str = "") -> ParseResult:
    """Parse one output file's bytes. ``source_name`` (the file name) is only
    used in messages and, for fio latency logs, to tell lat/clat/slat apart."""
    if parser_name in STREAMING:
        return _guarded(
            parser_name, lambda result: _stream(io.BytesIO(data), source_name, result)
        )
    if parser_name not in PARSERS:
        raise UnknownParser(parser_name)
    if len(data) > MAX_INPUT_BYTES:
        return _refused(
            parser_name, f"{len(data)} bytes is over the {MAX_INPUT_BYTES} byte limit"
        )
    return _guarded(parser_name, lambda result: PARSERS[parser_name](data, result))


def parse_file(parser_name: str, path: Path) -> ParseResult:
    """Parse a file (see ``parse_stream``). OSError (missing or unreadable
    file) is raised for the caller to report."""
    if parser_name not in PARSERS and parser_name not in STREAMING:
        raise UnknownParser(parser_name)
    with open(path, "rb") as handle:
        return parse_stream(parser_name, handle, source_name=path.name)


def parse_stream(
    parser_name: str, handle: BinaryIO, *, source_name: str = ""
) -> ParseResult:
    """Parse from a binary file object: latency logs are streamed (memory does
    not grow with the file), the other formats are read whole, up to
    ``MAX_INPUT_BYTES``."""
    if parser_name in STREAMING:
        return _guarded(
            parser_name, lambda result: _stream(handle, source_name, result)
        )
    if parser_name not in PARSERS:
        raise UnknownParser(parser_name)
    data = handle.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        return _refused(parser_name, f"over the {MAX_INPUT_BYTES} byte limit")
    return parse(parser_name, data, source_name=source_name)


def _stream(handle: BinaryIO, source_name: str, result: ParseResult) -> None:
    from benchmarks.lib.parsers.latlog import parse_lat_log  # numpy: imported when used

    parse_lat_log(handle, result, source_name=source_name)


def _refused(parser_name: str, message: str) -> ParseResult:
    return ParseResult(parser=parser_name, problems=[Problem("", message)])


def _guarded(parser_name: str, run: Callable[[ParseResult], None]) -> ParseResult:
    result = ParseResult(parser=parser_name)
    try:
        run(result)
    except ParseError as exc:
        return ParseResult(
            parser=parser_name, warnings=result.warnings, problems=exc.problems
        )
    except RecursionError:
        return _refused(parser_name, "the input is nested too deeply")
    except OSError:
        raise  # reading failed: the caller reports it, it is not the input's fault
    except Exception as exc:  # a parser bug must not become a traceback for the user
        logger.exception("parser %s failed", parser_name)
        failure = f"{type(exc).__name__}: {exc}"
        message = f"the {parser_name} parser failed on this input ({failure})"
        return _refused(parser_name, message)
    return result
