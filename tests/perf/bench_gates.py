"""Gate evaluation benchmark: prints figures, asserts nothing about timing.

    python -m tests.perf.bench_gates [--runs 5000] [--scenarios 1] [--repeat 3]

Builds a gate plan of 7 criteria (latencies lower, throughputs higher, percent
and absolute bands, a threshold) and 4 stop-loss conditions (a ceiling on any
scenario, a floor, environment drift, a failed run), and a results document of
``--runs`` runs spread over ``--scenarios`` scenarios (default 1: every
criterion judges every succeeded run, the worst case), each run reporting 8
metrics, 1 % of them failed and 1 % with minor drift, values from a seeded
``random.Random``. Then times, in this process, ``evaluate_plan`` (validation
of both documents, their digests, every criterion's statistics and bootstrap,
stop-loss, score) and ``evaluation_bytes``: CPU time (``time.process_time``)
and wall time, the median of ``--repeat`` calls. The target is under 1 s of CPU
for 5,000 runs. Exit status 0, or non-zero only on an error.
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from gates.engine import evaluate_plan, evaluation_bytes

METRICS = (  # name, stat, unit, typical value, direction, band
    ("ttft_ms", "p99", "ms", 180.0, "lower", {"pct": 10}),
    ("tpot_ms", "p99", "ms", 40.0, "lower", {"abs": 5}),
    ("itl_ms", "p50", "ms", 12.0, "lower", {"pct": 15}),
    ("e2e_latency_ms", "p95", "ms", 2500.0, "lower", None),  # threshold 2800
    ("output_token_throughput_tps", "mean", "tok/s", 9000.0, "higher", {"pct": 10}),
    ("read_iops", "mean", "IOPS", 1.2e6, "higher", {"pct": 5}),
    ("cache_hit_rate", "mean", "", 0.93, "higher", {"abs": 0.02}),
)


def build(
    runs: int, scenarios: int, seed: int = 7
) -> tuple[dict[str, Any], dict[str, Any]]:
    rng = random.Random(seed)  # noqa: S311 - reproducible test data
    names = [f"s{i}" for i in range(scenarios)]
    criteria = []
    for i, (metric, stat, _unit, typical, direction, band) in enumerate(METRICS):
        c: dict[str, Any] = {
            "id": f"{metric}-{stat}", "metric": metric, "stat": stat,
            "scenario": names[i % scenarios], "direction": direction,
            "min_runs": 3, "max_cv_pct": 15, "on_high_cv": "inconclusive",
            "blocking": i < 5, "weight": 1 + i % 2,
        }  # fmt: skip
        if band is None:
            c["threshold"] = typical * 1.12
        else:
            c.update(claim=typical, band=band)
        criteria.append(c)
    stop_loss = [
        {"id": "ttft-ceiling", "metric": "ttft_ms", "stat": "p99.9", "scenario": "*",
         "above": 2000},
        {"id": "iops-floor", "metric": "read_iops", "stat": "mean",
         "scenario": names[0], "below": 1000},
        {"id": "env-drift", "drift_at_least": "major"},
        {"id": "failed-run", "run_failed": True},
    ]  # fmt: skip
    plan = {
        "schema": "reprogate.gate-plan/v1", "rfp": "RFP-BENCH", "vendor": "bench",
        "gates": [{"name": "lab-validation", "stage": "lab", "consecutive_passes": 1,
                   "score": {"pass_pct": 90, "warn_pct": 75},
                   "criteria": criteria, "stop_loss": stop_loss}],
    }  # fmt: skip
    rows = []
    for i in range(runs):
        metrics = [
            {"name": m, "stat": s, "unit": u,
             "value": round(typical * rng.lognormvariate(0, 0.03), 4),
             "source": {"file": "metrics.json", "key": f"metrics[{k}].value"}}
            for k, (m, s, u, typical, _d, _b) in enumerate(METRICS)
        ]  # fmt: skip
        metrics.append(
            {"name": "ttft_ms", "stat": "p99.9", "unit": "ms",
             "value": round(300 * rng.lognormvariate(0, 0.1), 3),
             "source": {"file": "metrics.json", "key": "metrics[7].value"}}
        )  # fmt: skip
        rows.append({
            "id": f"run-{i:05d}", "scenario": names[i % scenarios],
            "repetition": i // scenarios + 1,
            "status": "failed" if rng.random() < 0.01 else "succeeded",
            "drift": "minor" if rng.random() < 0.01 else "none", "metrics": metrics,
        })  # fmt: skip
    return plan, {"schema": "reprogate.results/v1", "runs": rows}


def timed(call: Any, repeat: int) -> tuple[float, float, Any]:
    cpu, wall, result = [], [], None
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        result = call()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return statistics.median(cpu), statistics.median(wall), result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5000)
    parser.add_argument("--scenarios", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    if args.runs < 1 or args.scenarios < 1 or args.repeat < 1:
        parser.error("--runs, --scenarios and --repeat must be at least 1")
    plan, results = build(args.runs, args.scenarios)
    cpu, wall, docs = timed(lambda: evaluate_plan(plan, results), args.repeat)
    out_cpu, _, data = timed(
        lambda: b"".join(evaluation_bytes(d) for d in docs), args.repeat
    )
    (doc,) = docs
    judged = max(len(c["values"]) for c in doc["criteria"])
    print(f"python {platform.python_version()}, numpy {np.__version__}, "
          f"{platform.machine()}")  # fmt: skip
    print(
        f"runs                          {args.runs:,} in {args.scenarios} scenario(s)"
    )
    print(
        f"criteria, stop-loss           {len(doc['criteria'])}, {len(doc['stop_loss'])}"
    )
    print(f"values per criterion (max)    {judged:,}")
    print(f"verdict                       {doc['verdict']} ({doc['score_pct']} %)")
    print(f"evaluate_plan CPU time (s)    {cpu:.3f}   (median of {args.repeat})")
    print(f"evaluate_plan wall time (s)   {wall:.3f}")
    print(f"evaluation_bytes CPU (s)      {out_cpu:.3f}   ({len(data):,} bytes)")
    print(f"target: under 1 s of CPU      {'met' if cpu < 1 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
