"""Latency-log parsing benchmark, whole process against whole process: prints
figures, asserts nothing about timing.

    python -m tests.perf.bench_latlog [--samples 10000000] [--seed 6]
                                      [--rounds 1] [--work-dir DIR]

1. writes a deterministic fio ``write_lat_log`` file as fio >= 3.30 writes it
   with ``log_offset=1``: ``time_ms, value_ns, direction, 4096, offset,
   priority`` -- ``--samples`` lines, log-normal latencies around 100 µs with a
   0.1% tail 20x slower, 70% reads and 30% writes, offsets random and 4 KiB
   aligned within 1 TiB, the same bytes for the same seed (``random.Random``);
   with ``--work-dir`` a file already written for the same size and seed is
   reused;
2. runs, each as its own process, timed from spawn to exit (interpreter start
   and imports included) with its peak RSS from ``os.wait4``:
   - ``reprogate parse fio-lat-log FILE`` (``python -m reprogate_cli.main``),
     the command the lab runs, printing its metrics as JSON lines;
   - the yardstick, ``python -c``: ``pandas.read_csv`` of the whole file
     (every column) + ``numpy.percentile`` per direction;
   - the same with ``usecols`` (value and direction only), pandas at its
     fastest;
   ``--rounds N`` runs the three N times, interleaved, and reports each
   process's median;
3. prints seconds, peak RSS and CPU time (user + system) of each, the speed
   ratios (pandas / parser; the CPU-time ratio too, steadier on a loaded
   machine) and the largest relative difference between the parser's
   percentiles and numpy's exact ones (p50 … p99.99, each direction): the
   parser's documented bound is 0.025%, the target 0.1%.

The parent imports neither numpy nor pandas. Exits non-zero only on errors (a
subprocess failed), never because of a figure.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
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
KINDS: Final = ("parser", "pandas", "pandas-usecols")
OFFSET_PAGES: Final = (1 << 40) // 4096  # offsets: 4 KiB pages of a 1 TiB device

# The yardstick, run as ``python -c CODE FILE all|usecols PERCENTILES DIRECTIONS``
# (the last two as JSON).
PANDAS_CODE: Final = """\
import json, sys
import numpy as np
import pandas as pd
path, how = sys.argv[1], sys.argv[2]
percentiles, directions = json.loads(sys.argv[3]), json.loads(sys.argv[4])
if how == "usecols":
    frame = pd.read_csv(path, header=None, usecols=[1, 2], names=["value", "ddir"])
else:
    names = ["time", "value", "ddir", "bs", "offset", "prio"]
    frame = pd.read_csv(path, header=None, names=names, skipinitialspace=True)
values, ddirs = frame["value"].to_numpy(), frame["ddir"].to_numpy()
found = {}
for d, direction in enumerate(directions):
    figures = np.percentile(values[ddirs == d], percentiles)
    found[direction] = {f"p{p:g}": float(v) for p, v in zip(percentiles, figures)}
print(json.dumps(found))
"""


def write_log(path: Path, samples: int, seed: int) -> None:
    rng = random.Random(seed)  # noqa: S311 - test data, not secrets
    lognormal, uniform, page = rng.lognormvariate, rng.random, rng.randrange
    with open(path, "w", encoding="ascii") as out:
        batch: list[str] = []
        for i in range(samples):
            value = int(lognormal(11.5, 0.35))
            if uniform() < 0.001:
                value *= 20
            direction = 0 if uniform() < 0.7 else 1
            offset = page(OFFSET_PAGES) * 4096
            batch.append(f"{i // 1000}, {value}, {direction}, 4096, {offset}, 0\n")
            if len(batch) == 100_000:
                out.write("".join(batch))
                batch.clear()
        out.write("".join(batch))


def command(kind: str, path: Path) -> list[str]:
    if kind == "parser":
        parse = ["-m", "reprogate_cli.main", "parse", "fio-lat-log"]
        return [sys.executable, *parse, str(path)]
    how = "usecols" if kind == "pandas-usecols" else "all"
    wanted = [json.dumps(PERCENTILES), json.dumps(DIRECTIONS)]
    return [sys.executable, "-c", PANDAS_CODE, str(path), how, *wanted]


def run(kind: str, path: Path) -> dict[str, Any]:
    """One whole process: wall seconds from spawn to exit, peak RSS, and the
    percentiles it printed (ns)."""
    began = time.perf_counter()
    process = subprocess.Popen(
        command(kind, path), cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - began
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"the {kind} process failed (exit {process.returncode})")
    found = _metrics(output) if kind == "parser" else json.loads(output)
    rss, cpu = usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime
    return {"seconds": seconds, "cpu": cpu, "peak_rss_mb": rss, "percentiles": found}


def _metrics(output: str) -> dict[str, dict[str, float]]:
    """The percentiles (ns) among the CLI's JSON-lines metrics (µs)."""
    found: dict[str, dict[str, float]] = {}
    for line in output.splitlines():
        metric = json.loads(line)
        if metric["stat"].startswith("p"):
            direction = metric["name"].split("_")[0]
            found.setdefault(direction, {})[metric["stat"]] = metric["value"] * 1000
    return found


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
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--work-dir", type=Path, help="keep (and reuse) the log there")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        work = args.work_dir or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        path = work / f"bench_{args.samples}_{args.seed}_lat.1.log"
        began = time.perf_counter()
        if not path.exists():
            partial = path.with_suffix(".partial")
            write_log(partial, args.samples, args.seed)
            partial.rename(path)
        written = time.perf_counter() - began
        rounds = [{kind: run(kind, path) for kind in KINDS} for _ in range(args.rounds)]
        size = path.stat().st_size
    _print(args.samples, size, written, rounds)
    return 0


def _print(
    samples: int, size: int, written: float, rounds: list[dict[str, dict[str, Any]]]
) -> None:
    labels = {
        "parser": "reprogate parse fio-lat-log",
        "pandas": "pandas read_csv + numpy.percentile",
        "pandas-usecols": "  the same, usecols value+direction",
    }
    mb = size / 1e6
    print(f"{'samples':<38}{samples:,} ({mb:,.0f} MB, ready in {written:.1f} s)")
    print(f"{'whole processes, median of':<38}{len(rounds)} round(s)")
    median = {
        kind: {
            key: statistics.median(r[kind][key] for r in rounds)
            for key in ("seconds", "cpu", "peak_rss_mb")
        }
        for kind in KINDS
    }
    for kind, label in labels.items():
        figures = median[kind]
        seconds, cpu, rss = figures["seconds"], figures["cpu"], figures["peak_rss_mb"]
        print(
            f"{label:<38}{seconds:8.2f} s   peak RSS {rss:7.1f} MB   CPU {cpu:6.2f} s"
        )
    for label, kind in (("", "pandas"), (" usecols", "pandas-usecols")):
        ratios = [r[kind]["seconds"] / r["parser"]["seconds"] for r in rounds]
        each = ", ".join(f"{ratio:.2f}" for ratio in ratios)
        line = f"{statistics.median(ratios):8.2f}"
        if len(rounds) > 1:
            line += f"   (rounds: {each})"
        print(f"{f'speed ratio pandas{label} / parser':<38}{line}")
    for label, kind in (("", "pandas"), (" usecols", "pandas-usecols")):
        ratio = statistics.median(r[kind]["cpu"] / r["parser"]["cpu"] for r in rounds)
        print(f"{f'CPU-time ratio pandas{label} / parser':<38}{ratio:8.2f}")
    error = max(
        max_error(r["parser"]["percentiles"], r["pandas"]["percentiles"])
        for r in rounds
    )
    target = f"(target <= {ERROR_TARGET * 100:g} %)"
    print(f"{'max relative percentile error':<38}{error * 100:8.4f} % {target}")


if __name__ == "__main__":
    sys.exit(main())
