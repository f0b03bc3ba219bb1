"""The trace generator's command line:

    python -m benchmarks.lib.workloads generate PROFILE.json [--seed N]
        [--concurrency C] [--count N] [--duration S] -o trace.jsonl

PROFILE.json is a bare trace profile or a workload file (its ``requests``).
Writes the trace, ``trace.jsonl.sha256`` (``sha256sum -c`` format) and prints
the digest. Exit 2 on a bad profile or arguments, with the reasons.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.lib.workloads.tracegen import ProfileError, TraceProfile, write_trace


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.lib.workloads",
        description="Deterministic synthetic LLM-serving request traces.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="write a trace (JSON Lines) and its SHA-256")
    gen.add_argument("profile", type=Path, help="a profile or workload JSON file")
    gen.add_argument("--seed", type=int, help="default: the profile's requests.seed")
    gen.add_argument("--concurrency", type=int, help="resolves rate_rps_per_stream")
    gen.add_argument("--count", type=int, help="replaces the request count")
    gen.add_argument("--duration", type=float, help="stop at this arrival time (s)")
    gen.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        profile, seed = _profile(args)
    except (OSError, ValueError) as error:
        print(f"{parser.prog}: {args.profile}: {error}", file=sys.stderr)
        return 2
    with args.output.open("wb") as out:
        digest, count = write_trace(profile, seed, out)
    Path(f"{args.output}.sha256").write_text(f"{digest}  {args.output.name}\n")
    print(f"{digest}  {args.output}  ({count} requests, seed {seed})")
    return 0


def _profile(args: argparse.Namespace) -> tuple[TraceProfile, int]:
    data: Any = json.loads(args.profile.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ProfileError(["must be a JSON object"])
    requests = data.get("requests", data)
    requests = dict(requests) if isinstance(requests, dict) else {}
    requests.pop("name", None)
    seed = args.seed if args.seed is not None else requests.get("seed")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ProfileError(["--seed: required (the profile has no requests.seed)"])
    if args.count is not None:
        requests["count"] = args.count
    if args.duration is not None:
        requests["duration_s"] = args.duration
    name = data.get("name", args.profile.stem)
    profile = TraceProfile.from_dict(
        {"name": name, "requests": requests}, concurrency=args.concurrency
    )
    return profile, seed
