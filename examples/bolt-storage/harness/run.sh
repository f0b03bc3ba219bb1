#!/bin/sh
# Benchmark harness for RFP-DEMO-1 (runner contract, docs/runner-contract.md). The same
# harness code is in both example bundles; the vendor's tier parameters are in
# harness/config.json.
#
#   REPROGATE_SCENARIO='{"name": "warm-c32-b8", "cache": "warm", "concurrency": 32,
#   "batch_size": 8, "duration_s": 6}' REPROGATE_OUTPUT_DIR=out harness/run.sh
#
# The working directory is the unpacked bundle; REPROGATE_SCENARIO is the
# scenario as JSON, REPROGATE_OUTPUT_DIR an empty directory for the outputs,
# REPROGATE_RUN_ID the run's id (optional). It runs a small fio job when fio is
# installed (fio.json), then replays a synthetic trace through a KV-cache
# tiering simulator with real reads and writes on local disk (metrics.json,
# trace.jsonl): see harness/harness.py and harness/kvsim.py. Needs python3
# (3.10 or later, standard library only). Prints "::progress:: <0..1>" lines;
# exit 0 on success, 2 on a bad scenario, 1 on any other failure.
set -eu

here=$(dirname "$0")
if ! command -v python3 >/dev/null 2>&1; then
    echo "run.sh: python3 is not installed" >&2
    exit 1
fi
# -B: write no .pyc into the bundle; -E -s: ignore PYTHON* variables and user
# site-packages, so only the standard library and the bundle's files are used.
exec python3 -B -E -s "$here/harness.py"
