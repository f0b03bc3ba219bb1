"""The MLPerf Storage v3 KV-cache benchmark's outputs (``kv-cache.py``), read
by the ``mlperf-storage`` parser (formats-and-gates.md §A5.3):

- ``mlperf_storage_summary.csv``, one row per trial: the scope is the trial
  file's name (``.\\kvcache_gpu_cpu_trial1.json`` -> ``kvcache_gpu_cpu_trial1``);
  ``E2E/Gen/Storage Latency Mean|Pnn (ms)`` -> ``e2e_latency_ms`` /
  ``generation_latency_ms`` / ``storage_io_latency_ms``; throughput, counts,
  ``cache_hit_rate`` (a ratio); the ``(GB)`` columns are GiB (the tool divides
  bytes by 1024**3 and later versions label them ``(GiB)``); columns it does
  not know are listed in ``info["unmapped_columns"]``;
- a per-run JSON (``--output``): the ``summary`` figures, failed
  ``storage_health`` criteria as warnings, and the E2E and storage latency
  percentiles recomputed from the per-request ``end_to_end_latencies`` /
  ``storage_latencies`` (seconds), compared with the summary's.
"""

from __future__ import annotations

import csv
import io
import re
from typing import Any, Final

from benchmarks.lib.parsers import percentiles
from benchmarks.lib.parsers.common import array, number, obj
from benchmarks.lib.parsers.model import (
    MetricSink,
    ParseError,
    ParseResult,
    percentile_stat,
)

TOLERANCE: Final = 0.001
CSV_COLUMNS: Final = {
    "storage throughput (tokens/sec)": (
        "storage_token_throughput_tps",
        "mean",
        "tok/s",
    ),
    "storage requests/sec": ("storage_request_throughput_rps", "mean", "req/s"),
    "total i/o time (s)": ("storage_io_time_s", "total", "s"),
    "wall-clock throughput (tokens/sec)": ("token_throughput_tps", "mean", "tok/s"),
    "wall-clock requests/sec": ("request_throughput_rps", "mean", "req/s"),
    "total tokens": ("tokens", "total", "tokens"),
    "total requests": ("completed_requests", "total", "requests"),
    "cache hit rate": ("cache_hit_rate", "mean", "ratio"),
    "read/write ratio": ("read_write_ratio", "mean", "ratio"),
    "total read (gb)": ("storage_read_gib", "total", "GiB"),
    "total write (gb)": ("storage_write_gib", "total", "GiB"),
    "prefill bytes written (gb)": ("prefill_write_gib", "total", "GiB"),
    "decode bytes read (gb)": ("decode_read_gib", "total", "GiB"),
}
LATENCY_COLUMN_RE: Final = re.compile(
    r"^(e2e|gen|storage) latency (mean|p(\d+(?:\.\d+)?)) \(ms\)$"
)
LATENCY_NAMES: Final = {
    "e2e": "e2e_latency_ms",
    "gen": "generation_latency_ms",
    "storage": "storage_io_latency_ms",
}
SUMMARY_LATENCIES: Final = (
    ("end_to_end_latency_ms", "e2e_latency_ms"),
    ("storage_io_latency_ms", "storage_io_latency_ms"),
    ("generation_latency_ms", "generation_latency_ms"),
)
RAW_LATENCIES: Final = (
    ("end_to_end_latencies", "e2e_latency_ms"),
    ("storage_latencies", "storage_io_latency_ms"),
)
SUMMARY_RATES: Final = (
    ("avg_throughput_tokens_per_sec", "token_throughput_tps", "tok/s"),
    ("requests_per_second", "request_throughput_rps", "req/s"),
)
Column = tuple[str, str, str]


def parse_summary_csv(text: str, result: ParseResult) -> None:
    reader = csv.reader(io.StringIO(text))
    try:
        _summary_rows(reader, result)
    except csv.Error as exc:
        raise ParseError(f"line {reader.line_num}", f"not valid CSV: {exc}") from None


def _summary_rows(reader: Any, result: ParseResult) -> None:
    result.info["kind"] = "kvcache-summary-csv"
    header = [h.strip() for h in next(reader)]
    columns = [_column(c) for c in header[1:]]
    result.info["unmapped_columns"] = [
        c for c, mapped in zip(header[1:], columns, strict=True) if mapped is None
    ]
    sink = MetricSink(result)
    for line, row in enumerate(reader, start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            message = f"{len(row)} cells but the header has {len(header)}"
            raise ParseError(f"line {line}", message)
        scope = re.split(r"[\\/]", row[0].strip())[-1].removesuffix(".json")
        for title, cell, mapped in zip(header[1:], row[1:], columns, strict=True):
            if mapped is not None and cell.strip():
                name, stat, unit = mapped
                where = f"line {line} ({title})"
                sink.add(name, stat, cell, unit, where, scope=scope)
    if not result.metrics:
        raise ParseError("", "the KV-cache summary CSV has no figures")


def _column(title: str) -> Column | None:
    key = title.lower().replace("(gib)", "(gb)")
    if match := LATENCY_COLUMN_RE.match(key):
        kind, stat, p = match.groups()
        canonical = "mean" if stat == "mean" else percentile_stat(float(p))
        return (LATENCY_NAMES[kind], canonical, "ms")
    return CSV_COLUMNS.get(key)


def parse_run(doc: dict[str, Any], result: ParseResult) -> None:
    result.info["kind"] = "kvcache-run"
    summary = obj(doc["summary"], "summary")
    sink = MetricSink(result)
    for key, name in SUMMARY_LATENCIES:
        for stat, value in obj(summary.get(key, {}), f"summary.{key}").items():
            canonical = _stat(stat)
            if canonical:
                sink.add(name, canonical, value, "ms", f"summary.{key}.{stat}")
    for key, name, unit in SUMMARY_RATES:
        if key in summary:
            sink.add(name, "mean", summary[key], unit, f"summary.{key}")
    cache = obj(summary.get("cache_stats", {}), "summary.cache_stats")
    if "cache_hit_rate" in cache:
        key = "summary.cache_stats.cache_hit_rate"
        sink.add("cache_hit_rate", "mean", cache["cache_hit_rate"], "ratio", key)
    _health(cache, result)
    for key, name in RAW_LATENCIES:
        if isinstance(doc.get(key), list) and doc[key]:
            _recompute(sink, array(doc[key], key), key, name)
    if not result.metrics:
        raise ParseError("summary", "no latency, throughput or cache figures")


def _stat(stat: str) -> str | None:
    if stat in ("mean", "min", "max"):
        return stat
    if re.fullmatch(r"p\d+(\.\d+)?", stat) and 0 < float(stat[1:]) <= 100:
        return percentile_stat(float(stat[1:]))
    return None


def _health(cache: dict[str, Any], result: ParseResult) -> None:
    health = cache.get("storage_health")
    if not isinstance(health, dict):
        return
    result.info["storage_health"] = health.get("overall_status")
    for i, criterion in enumerate(health.get("criteria") or []):
        if isinstance(criterion, dict) and criterion.get("passed") is False:
            actual = f"{criterion.get('actual')} {criterion.get('unit', '')}".strip()
            result.warnings.append(
                f"summary.cache_stats.storage_health.criteria[{i}]: "
                f"{criterion.get('name')!r} failed (actual {actual}, "
                f"target {criterion.get('target')})"
            )


def _recompute(sink: MetricSink, raw: list[Any], key: str, name: str) -> None:
    values = sorted(number(v, f"{key}[{i}]") * 1000 for i, v in enumerate(raw))
    tool = {m.stat: m.value for m in sink.result.metrics if m.name == name}
    figures = {"mean": percentiles.mean(values)}
    for stat in tool:
        if stat.startswith("p"):
            figures[stat] = percentiles.linear(values, float(stat[1:]))
    for stat, value in figures.items():
        sink.add(name, stat, value, "ms", key, method="recomputed:per-request")
        if stat in tool and percentiles.disagrees(tool[stat], value, rel_tol=TOLERANCE):
            sink.result.warnings.append(
                f"{name} {stat}: the summary says {tool[stat]:g} ms but {key} "
                f"give {value:g} ms; both kept"
            )
