"""``reprogate parse PARSER FILE``: turn a benchmark tool's output into the
canonical metrics (docs/runner-contract.md), one JSON object per line on stdout::

    {"name": "read_clat_us", "stat": "p99.9", "value": 464.896, "unit": "us",
     "scope": "random-read", "scenario": null, "method": "tool",
     "source_key": "jobs[0].read.clat_ns.percentile['99.900000']"}

Warnings (tolerated quirks, tool vs recomputed disagreements, failed requests)
go to stderr. ``FILE`` may be ``-`` for stdin. ``--series`` also prints the
time series, one object per line with ``"points"``.

Exit codes: 0 parsed; 2 unknown parser, unreadable file, or input the parser
rejects (each problem is printed, naming where it is).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from benchmarks.lib.parsers import NAMES, UnknownParser, parse_file, parse_stream
from benchmarks.lib.parsers.model import ParseResult

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h


def cmd_parse(args: argparse.Namespace) -> int:
    _keep_freed_memory()
    try:
        if str(args.file) == "-":
            result = parse_stream(args.parser, sys.stdin.buffer, source_name="stdin")
        else:
            result = parse_file(args.parser, args.file)
    except UnknownParser as exc:
        print(f"reprogate: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(
            f"reprogate: cannot read {args.file}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return 2
    return _render(result, args)


def _keep_freed_memory() -> None:
    """Have glibc keep freed memory for the next allocations rather than hand
    it back to the kernel at once: the latency-log parser's worker threads
    allocate and free the same arrays for every block, and faulting their pages
    in afresh took a fifth of its time. The process parses one file and exits;
    without glibc's ``mallopt`` nothing changes."""
    import ctypes

    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is not None:
        mallopt(_M_TRIM_THRESHOLD, 1 << 30)
        mallopt(_M_MMAP_THRESHOLD, 32 << 20)  # glibc's largest on 64-bit


def _render(result: ParseResult, args: argparse.Namespace) -> int:
    for warning in result.warnings:
        print(f"reprogate: warning: {warning}", file=sys.stderr)
    if result.problems:
        print(
            f"reprogate: {args.file} is not valid {args.parser} output:",
            file=sys.stderr,
        )
        for problem in result.problems:
            print(f"  {problem}", file=sys.stderr)
        return 2
    lines = [json.dumps(metric.to_dict()) for metric in result.metrics]
    if args.series:
        lines += [json.dumps(series.to_dict()) for series in result.series]
    try:
        for line in lines:
            sys.stdout.write(line + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. `| head`: the reader has all it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def add_parse_command(commands: Any) -> None:
    command = commands.add_parser(
        "parse",
        help="print a benchmark output's canonical metrics (JSON lines)",
        description=(
            "Reads FILE as PARSER's format and prints one JSON object per metric "
            f"(name, stat, value, unit, scope, scenario, method, source_key). "
            f"Parsers: {', '.join(NAMES)}."
        ),
    )
    command.add_argument("parser", metavar="PARSER", help=", ".join(NAMES))
    command.add_argument(
        "file", type=Path, metavar="FILE", help="the output file, or -"
    )
    command.add_argument("--series", action="store_true", help="also print time series")
    command.set_defaults(handler=cmd_parse)
