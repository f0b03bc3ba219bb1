"""Latency-log parsing benchmark: prints figures,
asserts nothing about timing.

    python -m tests.perf.bench_latlog [--samples 10000000] [--seed 6]
                                      [--work-dir DIR]

1. writes a deterministic fio ``write_lat_log`` file (``time_ms, value_ns,
   direction, 4096, 0``): ``--samples`` lines, log-normal latencies around
   100 µs with a 0.1% tail 20x slower, 70% reads and 30% writes, the same
   bytes for the same seed (``random.Random``);
2. in a subprocess, parses it with ``fio-lat-log`` (``benchmarks.lib.parsers``:
   streamed, bounded memory) and times the ``parse_file`` call;
3. in another subprocess, the yardstick: ``pandas.read_csv`` of the whole file
   (every column) + ``numpy.percentile`` per direction; and in a third the
   same with ``usecols`` (value and direction only), pandas at its fastest;
4. prints seconds and peak RSS of each subprocess (its own ``ru_maxrss``, read
   with ``os.wait4``; the parent imports neither numpy nor pandas, so it adds
   little to the children's figure), the speed ratio and the largest relative
   difference between the parser's percentiles and numpy's exact ones
   (p50 … p99.99, each direction): the parser's documented bound is 0.025%, the
   target 0.1%.

Exits non-zero only on errors (a subprocess failed), never because of a figure.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parents[2]
PERCENTILES: Final = (50.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.99)
ERROR_TARGET: Final = 0.001
DIRECTIONS: Final = ("read", "write")


def write_log(path: Path, samples: int, seed: int) -> None:
    rng = random.Random(seed)  # noqa: S311 - test data, not secrets
    lognormal, uniform = rng.lognormvariate, rng.random
    with open(path, "w", encoding="ascii") as out:
        batch: list[str] = []
        for i in range(samples):
            value = int(lognormal(11.5, 0.35))
            if uniform() < 0.001:
                value *= 20
            direction = 0 if uniform() < 0.7 else 1
            batch.append(f"{i // 1000}, {value}, {direction}, 4096, 0\n")
            if len(batch) == 100_000:
                out.write("".join(batch))
                batch.clear()
        out.write("".join(batch))


# --- the subprocesses ---------------------------------------------------------------


def child_parser(path: Path) -> dict[str, Any]:
    import benchmarks.lib.parsers.latlog  # noqa: F401 - numpy imported before timing, as for pandas
    from benchmarks.lib.parsers import parse_file

    began = time.perf_counter()
    result = parse_file("fio-lat-log", path)
    seconds = time.perf_counter() - began
    if result.problems:
        raise SystemExit(f"parse failed: {result.problems}")
    found: dict[str, dict[str, float]] = {}
    for metric in result.metrics:
        if metric.stat.startswith("p"):
            found.setdefault(metric.name.split("_")[0], {})[metric.stat] = (
                metric.value * 1000
            )
    return {"seconds": seconds, "percentiles": found}


def child_pandas(path: Path, *, usecols: bool) -> dict[str, Any]:
    import numpy as np
    import pandas as pd

    began = time.perf_counter()
    if usecols:
        frame = pd.read_csv(path, header=None, usecols=[1, 2], names=["value", "ddir"])
    else:
        names = ["time", "value", "ddir", "bs", "offset"]
        frame = pd.read_csv(path, header=None, names=names, skipinitialspace=True)
    values, ddirs = frame["value"].to_numpy(), frame["ddir"].to_numpy()
    found = {}
    for d, direction in enumerate(DIRECTIONS):
        figures = np.percentile(values[ddirs == d], PERCENTILES)
        found[direction] = {
            f"p{p:g}": float(v) for p, v in zip(PERCENTILES, figures, strict=True)
        }
    return {"seconds": time.perf_counter() - began, "percentiles": found}


def child(kind: str, path: Path) -> int:
    if kind == "parser":
        report = child_parser(path)
    else:
        report = child_pandas(path, usecols=kind == "pandas-usecols")
    print(json.dumps(report))
    return 0


# --- the parent -----------------------------------------------------------------------


def _run(kind: str, path: Path) -> dict[str, Any]:
    command = [
        sys.executable,
        "-m",
        "tests.perf.bench_latlog",
        "--child",
        kind,
        str(path),
    ]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"the {kind} subprocess failed (exit {process.returncode})")
    report = json.loads(output)
    report["peak_rss_mb"] = usage.ru_maxrss / 1024
    return report


def max_error(
    ours: dict[str, dict[str, float]], exact: dict[str, dict[str, float]]
) -> float:
    worst = 0.0
    for direction, figures in exact.items():
        for stat, value in figures.items():
            worst = max(worst, abs(ours[direction][stat] - value) / value)
    return worst


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=10_000_000)
    parser.add_argument("--seed", type=int, default=6)
    parser.add_argument("--work-dir", type=Path, help="keep the log there")
    parser.add_argument(
        "--child", nargs=2, metavar=("KIND", "PATH"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.child:
        return child(args.child[0], Path(args.child[1]))
    with tempfile.TemporaryDirectory() as scratch:
        work = args.work_dir or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        path = work / "bench_lat.1.log"
        began = time.perf_counter()
        write_log(path, args.samples, args.seed)
        written = time.perf_counter() - began
        runs = {
            kind: _run(kind, path) for kind in ("parser", "pandas", "pandas-usecols")
        }
        size = path.stat().st_size
    _print(args.samples, size, written, runs)
    return 0


def _print(
    samples: int, size: int, written: float, runs: dict[str, dict[str, Any]]
) -> None:
    ours, pandas, usecols = runs["parser"], runs["pandas"], runs["pandas-usecols"]
    error = max_error(ours["percentiles"], pandas["percentiles"])
    labels = {
        "parser": "reprogate fio-lat-log (streamed)",
        "pandas": "pandas read_csv + numpy.percentile",
        "pandas-usecols": "  the same, usecols value+direction",
    }
    mb = size / 1e6
    print(f"{'samples':<38}{samples:,} ({mb:,.0f} MB, written in {written:.1f} s)")
    for kind, label in labels.items():
        run = runs[kind]
        rss = run["peak_rss_mb"]
        print(f"{label:<38}{run['seconds']:8.2f} s   peak RSS {rss:7.1f} MB")
    for label, run in (("", pandas), (" usecols", usecols)):
        ratio = run["seconds"] / ours["seconds"]
        print(f"{f'speed ratio pandas{label} / parser':<38}{ratio:8.2f}")
    target = f"(target <= {ERROR_TARGET * 100:g} %)"
    print(f"{'max relative percentile error':<38}{error * 100:8.4f} % {target}")


if __name__ == "__main__":
    sys.exit(main())
