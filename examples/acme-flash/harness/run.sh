#!/bin/sh
# Acme Flash — benchmark harness for RFP-DEMO-1 (KV-cache tier over NVMe-oF RDMA).
# Usage (what the runner does):
#   REPROGATE_SCENARIO='{"name": "warm-c32-b8", "cache": "warm", "concurrency": 32,
#   "batch_size": 8, "duration_s": 60}' REPROGATE_OUTPUT_DIR=out harness/run.sh
# Outputs: metrics.json (reprogate-metrics) and fio.json (fio-json).

# Acme's model of its system (placeholder constants, see below).
TTFT_BASE_MS=40 TTFT_PER_STREAM_MS=3 TTFT_PER_BATCH_MS=2 COLD_TTFT_MS=60
TPOT_BASE_MS=11 TPS_PER_SLOT=60
CLAT_BASE_US=160 CLAT_PER_STREAM_US=2 COLD_CLAT_US=150
WARM_HIT_PCT=93 COLD_HIT_PCT=12

# ---------------------------------------------------------------------------
# Runner contract (DESIGN §4): the working directory is the unpacked bundle,
#   REPROGATE_SCENARIO    the scenario object as JSON,
#   REPROGATE_OUTPUT_DIR  an empty directory for the declared outputs,
#   REPROGATE_RUN_ID      the run's id (optional here).
# Prints "::progress:: <0..1>" lines; exit code 0 means success.
#
# PLACEHOLDER: the numbers below are synthesised from the scenario with the
# vendor's constants above, so that the pipeline can be demonstrated end to
# end. The runner issue replaces this with the real benchmark invocation.
# ---------------------------------------------------------------------------
set -eu

fail() {
    printf 'run.sh: %s\n' "$1" >&2
    exit 2
}

[ -n "${REPROGATE_SCENARIO:-}" ] || fail "REPROGATE_SCENARIO is not set"
[ -n "${REPROGATE_OUTPUT_DIR:-}" ] || fail "REPROGATE_OUTPUT_DIR is not set"
[ -d "$REPROGATE_OUTPUT_DIR" ] || fail "REPROGATE_OUTPUT_DIR is not a directory"

# One JSON field of the scenario (flat object; strings or integers).
field() {
    printf '%s' "$REPROGATE_SCENARIO" | tr -d '\n' |
        sed -n "s/.*\"$1\"[[:space:]]*:[[:space:]]*\"*\([A-Za-z0-9._-]*\)\"*.*/\1/p"
}

name=$(field name)
cache=$(field cache)
concurrency=$(field concurrency)
batch=$(field batch_size)
case "$name" in '' | *[!A-Za-z0-9._-]*) fail "scenario name missing or invalid" ;; esac
case "$cache" in cold | warm) ;; *) fail "cache must be cold or warm, not '$cache'" ;; esac
case "$concurrency" in '' | *[!0-9]*) fail "concurrency must be an integer" ;; esac
case "$batch" in '' | *[!0-9]*) fail "batch_size must be an integer" ;; esac

here=$(cd "$(dirname "$0")/.." && pwd)
echo "scenario $name: cache=$cache concurrency=$concurrency batch_size=$batch run=${REPROGATE_RUN_ID:-local}"
echo "::progress:: 0.1"

if [ "$cache" = cold ]; then
    penalty=$COLD_TTFT_MS clat_penalty=$COLD_CLAT_US hit=$COLD_HIT_PCT tps_div=2
else
    penalty=0 clat_penalty=0 hit=$WARM_HIT_PCT tps_div=1
fi
ttft_p99=$((TTFT_BASE_MS + concurrency * TTFT_PER_STREAM_MS + batch * TTFT_PER_BATCH_MS + penalty))
ttft_p50=$((ttft_p99 * 45 / 100))
tpot_p50=$((TPOT_BASE_MS + concurrency / 8 + batch / 4))
tpot_p99=$((tpot_p50 * 2))
tps=$((concurrency * batch * TPS_PER_SLOT / tps_div))
clat_p99=$((CLAT_BASE_US + concurrency * CLAT_PER_STREAM_US + clat_penalty))
gpu=$((60 + concurrency))
[ "$gpu" -le 95 ] || gpu=95
echo "::progress:: 0.5"

# Two-digit fraction for a percentage: 7 -> 0.07, 93 -> 0.93.
fraction() {
    printf '0.%02d' "$1"
}

metric() {
    printf '    {"name": "%s", "stat": "%s", "value": %s, "unit": "%s", "scenario": "%s"}' \
        "$1" "$2" "$3" "$4" "$name"
}

{
    printf '{\n  "metrics": [\n'
    metric ttft_ms p50 "$ttft_p50" ms && printf ',\n'
    metric ttft_ms p99 "$ttft_p99" ms && printf ',\n'
    metric tpot_ms p50 "$tpot_p50" ms && printf ',\n'
    metric tpot_ms p99 "$tpot_p99" ms && printf ',\n'
    metric output_token_throughput_tps mean "$tps" tokens/s && printf ',\n'
    metric read_clat_us p99 "$clat_p99" us && printf ',\n'
    metric gpu_util_pct mean "$gpu" % && printf ',\n'
    metric cache_hit_rate mean "$(fraction "$hit")" ratio && printf '\n'
    printf '  ],\n  "series": [\n'
    printf '    {"name": "cache_hit_rate", "unit": "ratio", "points": '
    printf '[[0, 0.00], [15, %s], [30, %s], [60, %s]]}\n' \
        "$(fraction $((hit / 3)))" "$(fraction $((hit * 2 / 3)))" "$(fraction "$hit")"
    printf '  ]\n}\n'
} >"$REPROGATE_OUTPUT_DIR/metrics.json"
echo "::progress:: 0.8"

# The storage-side trace: the recorded fio 4k random-read run of the flash tier.
cp "$here/traces/fio-randread-qd1.json" "$REPROGATE_OUTPUT_DIR/fio.json"
echo "::progress:: 1"
