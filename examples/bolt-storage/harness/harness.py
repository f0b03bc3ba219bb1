"""The example harness (run by harness/run.sh; python3 >= 3.10, stdlib only).

For one scenario (REPROGATE_SCENARIO) it writes into REPROGATE_OUTPUT_DIR:

- fio.json: a small fio job (4k random reads, json+) on the SSD tier's home
  (below), when fio is installed; without fio it says so and goes on;
- trace.jsonl and trace.jsonl.sha256: the synthetic trace it replays
  (tracegen.py, the workload named in config.json, a seed derived from the
  workload's seed and the scenario's concurrency, so cold and warm runs and
  both batch sizes replay the same requests);
- in a ``warmup`` scenario, also ``model_load_s``: the example has no model
  weights, so its load is everything before the first request (the
  configuration, the workload, the trace, the tiers; the fio job left out);
- in a ``failover`` scenario, only metrics.json: per-second ``throughput`` and
  ``errors`` series of reads from the lab's NBD endpoint (nbdprobe.py) while
  the lab injects its faults;
- metrics.json (reprogate-metrics), from the KV-cache simulator (kvsim.py):
  TTFT, TPOT and end-to-end latency (mean, p50, p90, p99), request and
  output-token throughput, KV-cache hit rate (mean and over time) and the part
  of it served by the SSD tier, the prefix recomputation share, and the
  measured latency of the real SSD-tier block reads and writes.

The trace covers ``warmup_s`` (config.json) of earlier traffic, then the
scenario's duration_s; only the latter is measured, in both modes. Cold: the
tiers are empty when it starts. Warm: the earlier traffic went through the
tiers first.

The SSD tier's home: the block device the lab gave the run, when
REPROGATE_DEVICES (JSON: device name -> path) names one (a
``reprogate.dev/block=…`` name first), read and written with O_DIRECT (fio with
--direct=1); otherwise a file-backed fallback, buffered, in
REPROGATE_OUTPUT_DIR/.scratch. The log says which (a line starting with ``ssd
tier:``). Scratch files are removed before the harness ends (also on SIGTERM);
a device is left as it is. Prints ``::progress:: x`` lines.
Exit 0 on success, 2 on a bad scenario or configuration, 1 on any other
failure, always with a message on stderr.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import kvsim  # noqa: E402
import nbdprobe  # noqa: E402
import tracegen  # noqa: E402

NAME_RE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
PERCENTILES = (50, 90, 99)
SERIES_POINTS = 10
SHOWN = (
    "ttft_ms",
    "cache_hit_rate",
    "prefix_recompute_pct",
    "output_token_throughput_tps",
)


class BadInput(Exception):
    """A bad scenario or configuration: exit status 2."""


class Progress:
    def __init__(self) -> None:
        self.shown = -1.0

    def __call__(self, value: float) -> None:
        value = max(0.0, min(1.0, value))
        if value >= 1.0 or value - self.shown >= 0.05:
            self.shown = value
            print(f"::progress:: {value:.2f}", flush=True)


def scenario_from_env() -> dict[str, Any]:
    text = os.environ.get("REPROGATE_SCENARIO", "")
    if not text.strip():
        raise BadInput("REPROGATE_SCENARIO is not set")
    try:
        scenario = json.loads(text)
    except ValueError as error:
        raise BadInput(f"REPROGATE_SCENARIO is not JSON: {error}") from None
    if not isinstance(scenario, dict):
        raise BadInput("REPROGATE_SCENARIO must be a JSON object")
    problems = []
    name = scenario.get("name")
    if not (isinstance(name, str) and NAME_RE.match(name)):
        problems.append("name: 1-64 letters, digits, '.', '_' or '-'")
    if scenario.get("cache") not in ("cold", "warm"):
        problems.append(f"cache: cold or warm, not {scenario.get('cache')!r:.40}")
    for key, high in (("concurrency", 1024), ("batch_size", 256)):
        value = scenario.get(key)
        if not (type(value) is int and 1 <= value <= high):
            problems.append(f"{key}: an integer from 1 to {high}, not {value!r:.40}")
    duration = scenario.get("duration_s")
    if not (
        type(duration) in (int, float)
        and math.isfinite(duration)
        and 0 < duration <= 3600
    ):
        problems.append(
            f"duration_s: a number of seconds in (0, 3600], not {duration!r:.40}"
        )
    if problems:
        raise BadInput("bad REPROGATE_SCENARIO: " + "; ".join(problems))
    return scenario


def load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise BadInput(f"{path.name}: {error}") from None


class Tier:
    """Where the SSD tier's blocks live: a block device (O_DIRECT) or a file."""

    def __init__(self, path: Path, device: str = "") -> None:
        self.path, self.device = path, device  # device: its name, "" for a file

    @property
    def direct(self) -> bool:
        return bool(self.device)

    def describe(self) -> str:
        if self.direct:
            return f"ssd tier: device {self.device} at {self.path}, O_DIRECT"
        return (
            "ssd tier: file-backed (no block device in REPROGATE_DEVICES), "
            f"buffered I/O on {self.path.name} in the output folder's scratch"
        )


def ssd_tier(scratch: Path) -> Tier:
    """The block device REPROGATE_DEVICES names (``reprogate.dev/block=`` names
    first, then by name), else a file in ``scratch``."""
    text = os.environ.get("REPROGATE_DEVICES", "").strip()
    try:
        devices = json.loads(text) if text else {}
    except ValueError as error:
        raise BadInput(f"REPROGATE_DEVICES is not JSON: {error}") from None
    if not isinstance(devices, dict):
        raise BadInput("REPROGATE_DEVICES must be a JSON object")
    names = sorted(devices, key=lambda n: (not n.startswith("reprogate.dev/block="), n))
    for name in names:
        path = devices[name]
        try:
            is_block = isinstance(path, str) and stat.S_ISBLK(os.stat(path).st_mode)
        except OSError:
            is_block = False
        if is_block:
            return Tier(Path(path), name)
    return Tier(scratch / "ssd-tier.dat")


def run_fio(fio: dict[str, Any], scratch: Path, out: Path, tier: Tier) -> str:
    """The fio job (on the tier's device with O_DIRECT, else on a scratch
    file); returns a line for the log."""
    binary = shutil.which("fio")
    if binary is None:
        return "fio: not installed on this host; fio job skipped, fio.json not written"
    target = tier.path if tier.direct else scratch / "fio.dat"
    args = [
        binary,
        "--name=scratch-randread",
        f"--filename={target}",
        *(["--direct=1"] if tier.direct else []),
        f"--size={int(fio['size_mib'])}M",
        f"--rw={fio['rw']}",
        f"--bs={fio['block_size']}",
        "--ioengine=psync",
        f"--runtime={int(fio['runtime_s'])}",
        "--time_based",
        "--output-format=json+",
        f"--output={out / 'fio.json'}",
    ]
    done = subprocess.run(args, capture_output=True, text=True, check=False)  # noqa: S603
    (scratch / "fio.dat").unlink(missing_ok=True)
    if done.returncode != 0:
        raise RuntimeError(
            f"fio failed ({done.returncode}): {done.stderr.strip()[-400:]}"
        )
    return f"fio: {' '.join(args[1:])}"


def percentile(values: list[float], p: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    rank = (len(ordered) - 1) * p / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def metric(
    name: str, stat: str, value: float, unit: str, scenario: str
) -> dict[str, Any]:
    return {
        "name": name,
        "stat": stat,
        "value": round(value, 4),
        "unit": unit,
        "scenario": scenario,
    }


def summarise(
    outcomes: list[kvsim.Outcome], cache: kvsim.KvCache, scenario: dict[str, Any]
) -> dict[str, Any]:
    name = scenario["name"]
    result = []
    for label, unit, values in [
        ("ttft_ms", "ms", [o.ttft_ms for o in outcomes]),
        ("tpot_ms", "ms", [o.tpot_ms for o in outcomes]),
        ("e2e_latency_ms", "ms", [o.e2e_ms for o in outcomes]),
        ("kv_ssd_read_us", "us", [s * 1e6 for s in cache.ssd.read_s]),
        ("kv_ssd_write_us", "us", [s * 1e6 for s in cache.ssd.write_s]),
    ]:
        if not values:
            continue
        result.append(metric(label, "mean", sum(values) / len(values), unit, name))
        result += [
            metric(label, f"p{p}", percentile(values, p), unit, name)
            for p in PERCENTILES
        ]
    start = min(o.request.t * 1000.0 for o in outcomes)
    span_s = (max(o.done_ms for o in outcomes) - start) / 1000.0
    tokens = sum(o.request.output_tokens for o in outcomes)
    prompt = sum(o.request.prompt_tokens for o in outcomes)
    shared = sum(o.request.prefix_tokens for o in outcomes)
    hits = sum(o.hit_tokens for o in outcomes)
    ssd_hits = sum(o.ssd_hit_tokens for o in outcomes)
    shared_hits = sum(o.shared_hit_tokens for o in outcomes)
    result += [
        metric("output_token_throughput_tps", "mean", tokens / span_s, "tok/s", name),
        metric("request_throughput_rps", "mean", len(outcomes) / span_s, "req/s", name),
        metric("cache_hit_rate", "mean", hits / prompt, "ratio", name),
        metric("ssd_tier_hit_rate", "mean", ssd_hits / prompt, "ratio", name),
        metric(
            "prefix_recompute_pct",
            "mean",
            100.0 * (1 - shared_hits / shared) if shared else 0.0,
            "%",
            name,
        ),
        metric("requests", "total", len(outcomes), "requests", name),
    ]
    return {"metrics": result, "series": [hit_rate_series(outcomes, scenario)]}


def hit_rate_series(
    outcomes: list[kvsim.Outcome], scenario: dict[str, Any]
) -> dict[str, Any]:
    """The hit rate of the prompts admitted in each of SERIES_POINTS equal
    windows from the first admission to the last (time = the window's end, s)."""
    end = max(o.admitted_ms for o in outcomes) / 1000.0
    window = max(end / SERIES_POINTS, 0.001)
    buckets: dict[int, list[int]] = {}
    for o in outcomes:
        slot = min(int(o.admitted_ms / 1000.0 / window), SERIES_POINTS - 1)
        bucket = buckets.setdefault(slot, [0, 0])
        bucket[0] += o.hit_tokens
        bucket[1] += o.request.prompt_tokens
    points = [
        [round((slot + 1) * window, 3), round(hit / total, 4)]
        for slot, (hit, total) in sorted(buckets.items())
    ]
    return {
        "name": "cache_hit_rate",
        "unit": "ratio",
        "scenario": scenario["name"],
        "points": points,
    }


def scenario_seed(base: int, concurrency: int) -> int:
    """The trace's seed: the workload's and the concurrency (which sets the
    arrival rate), so cold and warm and every batch size replay one trace."""
    digest = hashlib.sha256(f"{base}:c{concurrency}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def write_trace(profile: Any, seed: int, out: Path) -> list[Any]:
    path = out / "trace.jsonl"
    with path.open("wb") as handle:
        digest, count = tracegen.write_trace(profile, seed, handle)
    (out / "trace.jsonl.sha256").write_text(f"{digest}  trace.jsonl\n")
    print(f"trace: {count} requests, seed {seed}, sha256 {digest}", flush=True)
    with path.open(encoding="utf-8") as handle:
        return tracegen.read_trace(handle)[1]


def run(scenario: dict[str, Any], out: Path, progress: Progress) -> None:
    loading = time.monotonic()  # a warm-up's model_load_s: up to the first request
    config = load_json(HERE / "config.json")
    workload = load_json(HERE.parent / config["workload"])
    concurrency, duration = scenario["concurrency"], float(scenario["duration_s"])
    before = float(config["warmup_s"])
    requests = {**workload["requests"], "duration_s": before + duration}
    try:
        profile = tracegen.TraceProfile.from_dict(
            {"name": workload["name"], "requests": requests}, concurrency=concurrency
        )
    except tracegen.ProfileError as error:
        raise BadInput(f"{config['workload']}: {error}") from None
    scratch = out / ".scratch"
    scratch.mkdir(exist_ok=True)
    try:
        tier = ssd_tier(scratch)
        print(tier.describe(), flush=True)
        fio_started = time.monotonic()
        print(run_fio(config["fio"], scratch, out, tier), flush=True)
        loading += time.monotonic() - fio_started  # the fio job is not loading
        progress(0.25)
        seed = scenario_seed(int(workload["requests"]["seed"]), concurrency)
        trace = write_trace(profile, seed, out)
        earlier = [r for r in trace if r.t < before]
        measured = [
            replace(r, t=round(r.t - before, 6)) for r in trace if r.t >= before
        ]
        if not measured:
            raise BadInput("the trace has no request in the scenario's duration")
        cache = kvsim.KvCache(config["tiers"], tier.path, direct=tier.direct)
        try:
            if scenario["cache"] == "warm":
                kvsim.warm_up(cache, earlier)
                cache.ssd.read_s.clear()
                cache.ssd.write_s.clear()
            through = len(earlier) if scenario["cache"] == "warm" else 0
            print(
                f"{scenario['cache']}: {through} earlier requests through the tiers, "
                f"{len(measured)} measured",
                flush=True,
            )
            progress(0.3)
            engine = kvsim.Engine(
                cache,
                config["engine"],
                config["tiers"],
                concurrency,
                scenario["batch_size"],
            )
            load_s = time.monotonic() - loading
            outcomes = engine.run(measured, pacer(duration, progress))
            summary = summarise(outcomes, cache, scenario)
            if scenario.get("kind") == "warmup":
                model_load = metric(
                    "model_load_s", "mean", load_s, "s", scenario["name"]
                )
                summary["metrics"].append(model_load)
        finally:
            cache.ssd.close()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    (out / "metrics.json").write_text(json.dumps(summary, indent=1) + "\n")
    for m in summary["metrics"]:
        if m["name"] in SHOWN and m["stat"] in ("p99", "mean"):
            print(f"{m['name']} {m['stat']} = {m['value']} {m['unit']}", flush=True)
    progress(1.0)


def run_probe(scenario: dict[str, Any], out: Path, progress: Progress) -> None:
    """Failover mode (nbdprobe.py): reads the lab's NBD endpoint for the
    scenario's duration while the lab injects its faults."""
    address = nbdprobe.endpoint_address(scenario)
    seed = int(os.environ.get("REPROGATE_SEED") or 0)
    print(f"failover: reading {address} for {scenario['duration_s']} s", flush=True)
    summary = nbdprobe.probe(address, float(scenario["duration_s"]), seed, progress)
    for item in summary["metrics"] + summary["series"]:
        item["scenario"] = scenario["name"]
    (out / "metrics.json").write_text(json.dumps(summary, indent=1) + "\n")
    for m in summary["metrics"]:
        print(f"{m['name']} {m['stat']} = {m['value']} {m['unit']}", flush=True)
    progress(1.0)


def pacer(duration: float, progress: Progress) -> Any:
    """Sleeps so that events of the arrival window happen at their wall time."""
    started = time.monotonic()

    def wait_until(at_ms: float) -> None:
        if at_ms <= duration * 1000.0:
            progress(0.3 + 0.65 * at_ms / (duration * 1000.0))
            delay = started + at_ms / 1000.0 - time.monotonic()
            if delay > 0:
                time.sleep(delay)

    return wait_until


def main() -> int:
    # A cancelled run gets SIGTERM: unwind, so that the scratch files go too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        scenario = scenario_from_env()
        out = Path(os.environ.get("REPROGATE_OUTPUT_DIR", ""))
        if not os.environ.get("REPROGATE_OUTPUT_DIR") or not out.is_dir():
            raise BadInput("REPROGATE_OUTPUT_DIR is not set or not a directory")
        settings = " ".join(
            f"{key}={scenario[key]}"
            for key in ("cache", "concurrency", "batch_size", "duration_s")
        )
        run_id = os.environ.get("REPROGATE_RUN_ID", "local")
        print(f"scenario {scenario['name']}: {settings} run={run_id}", flush=True)
        if scenario.get("kind") == "failover":
            run_probe(scenario, out, Progress())
        else:
            run(scenario, out, Progress())
    except BadInput as error:
        print(f"harness: {error}", file=sys.stderr)
        return 2
    except (OSError, RuntimeError, KeyError, TypeError, ValueError) as error:
        print(f"harness: failed: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
