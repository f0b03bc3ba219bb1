"""``mlperf-storage``: MLPerf Storage results (formats-and-gates.md §A5).

Which file it is, is read from its content:

- DLIO ``summary.json`` (v1.0, one host of one run; has ``metric``):
  ``train_au_pct`` (mean, stddev; min/max over the epochs),
  ``train_sample_throughput_sps``, ``train_io_bw_mib_s`` (DLIO's
  ``MB_per_second`` is record_size/1024/1024, so MiB/s), ``eval_*`` the same;
  ``train_au_meet_expectation`` = ``fail`` and hosts reporting 0 memory or CPUs
  are warnings; scope = ``hostname``;
- ``mlperf_storage_report.json`` (v1.0 ``report.py``; ``overall`` + ``runs``):
  the overall mean/stddev and one scope per run; the mean and population
  stddev are recomputed from the runs (``recomputed:runs``) and compared; fewer
  or more than the 5 required runs is a warning; string numbers (``"64"``) are
  read as numbers;
- the v3 KV-cache ``mlperf_storage_summary.csv`` (one row per trial; header
  starts with ``Filename``): one scope per row (the trial file's name),
  latency columns -> ``e2e_latency_ms`` / ``generation_latency_ms`` /
  ``storage_io_latency_ms``, throughput, ``cache_hit_rate`` (ratio),
  ``(GB)`` columns as GiB (the tool divides by 1024**3; later versions label
  them GiB); unknown columns are listed in ``info``;
- a KV-cache per-run JSON (``summary`` + ``requests_completed``): the summary
  figures; ``storage_health`` criteria that failed are warnings; E2E and
  storage latency percentiles recomputed from ``end_to_end_latencies`` /
  ``storage_latencies`` (seconds) when present.
"""

from __future__ import annotations

from typing import Any, Final

from benchmarks.lib.parsers import kvcache, percentiles
from benchmarks.lib.parsers.common import number, obj, wrong_tool
from benchmarks.lib.parsers.jsontext import decode_text, load_lenient
from benchmarks.lib.parsers.model import (
    MetricSink,
    ParseError,
    ParseResult,
    as_number,
)

REQUIRED_RUNS: Final = 5
TOLERANCE: Final = 0.001
DLIO_KEYS: Final = (
    ("au_mean_percentage", "au_pct", "mean", "%"),
    ("au_stdev_percentage", "au_pct", "stddev", "%"),
    (
        "throughput_mean_samples_per_second",
        "sample_throughput_sps",
        "mean",
        "samples/s",
    ),
    (
        "throughput_stdev_samples_per_second",
        "sample_throughput_sps",
        "stddev",
        "samples/s",
    ),
    ("io_mean_MB_per_second", "io_bw_mib_s", "mean", "MiB/s"),
    ("io_stdev_MB_per_second", "io_bw_mib_s", "stddev", "MiB/s"),
)
REPORT_OVERALL: Final = (
    (
        "train_throughput_mean_samples_per_second",
        "train_sample_throughput_sps",
        "mean",
        "samples/s",
    ),
    (
        "train_throughput_stdev_samples_per_second",
        "train_sample_throughput_sps",
        "stddev",
        "samples/s",
    ),
    ("train_throughput_mean_MB_per_second", "train_io_bw_mib_s", "mean", "MiB/s"),
    ("train_throughput_stdev_MB_per_second", "train_io_bw_mib_s", "stddev", "MiB/s"),
)
REPORT_RUN: Final = (
    ("train_throughput_samples_per_second", "train_sample_throughput_sps", "samples/s"),
    ("train_throughput_MB_per_second", "train_io_bw_mib_s", "MiB/s"),
)


def parse_mlperf_storage(data: bytes, result: ParseResult) -> None:
    head = data[:200].lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.lower().startswith(b"filename,"):
        kvcache.parse_summary_csv(decode_text(data), result)
        return
    doc, warnings = load_lenient(data, what="MLPerf Storage")
    result.warnings.extend(warnings)
    if "metric" in doc:
        _dlio_summary(doc, result)
    elif "overall" in doc and "runs" in doc:
        _report(doc, result)
    elif "summary" in doc and "requests_completed" in doc:
        kvcache.parse_run(doc, result)
    else:
        raise wrong_tool(
            doc,
            "mlperf-storage",
            "an MLPerf Storage summary.json, report or KV-cache result",
        )


def _dlio_summary(doc: dict[str, Any], result: ParseResult) -> None:
    result.info["kind"] = "dlio-summary"
    metric = obj(doc["metric"], "metric")
    scope = str(doc.get("hostname", ""))
    sink = MetricSink(result)
    for phase in ("train", "eval"):
        for key, name, stat, unit in DLIO_KEYS:
            if f"{phase}_{key}" in metric:
                sink.add(
                    f"{phase}_{name}",
                    stat,
                    metric[f"{phase}_{key}"],
                    unit,
                    f"metric.{phase}_{key}",
                    scope=scope,
                )
        epochs = metric.get(f"{phase}_au_percentage")
        if isinstance(epochs, list) and epochs:
            values = [
                number(v, f"metric.{phase}_au_percentage[{i}]")
                for i, v in enumerate(epochs)
            ]
            for stat, value in (("min", min(values)), ("max", max(values))):
                key = f"metric.{phase}_au_percentage"
                sink.add(
                    f"{phase}_au_pct",
                    stat,
                    value,
                    "%",
                    key,
                    method="recomputed:per-epoch",
                    scope=scope,
                )
        verdict = metric.get(f"{phase}_au_meet_expectation")
        if verdict is not None:
            result.info[f"{phase}_au_meet_expectation"] = verdict
            if verdict != "success":
                result.warnings.append(
                    f"metric.{phase}_au_meet_expectation: {verdict!r}: "
                    "the AU target was not met"
                )
    if not result.metrics:
        raise ParseError("metric", "no train_* or eval_* figures")
    for key in ("host_memory_GB", "host_cpu_count"):
        per_host = doc.get(key)
        if isinstance(per_host, list) and per_host:
            zeros = sum(1 for v in per_host if as_number(v) == 0)
            if zeros:
                result.warnings.append(
                    f"{key}: 0 for {zeros} of {len(per_host)} hosts; checks based on "
                    "it cannot rely on it"
                )
    info_keys = (
        "num_accelerators",
        "num_hosts",
        "epochs",
        "num_files_train",
        "start",
        "end",
    )
    result.info.update({k: doc[k] for k in info_keys if k in doc})


def _report(doc: dict[str, Any], result: ParseResult) -> None:
    result.info["kind"] = "report"
    overall, runs = obj(doc["overall"], "overall"), obj(doc["runs"], "runs")
    sink = MetricSink(result)
    for key, name, stat, unit in REPORT_OVERALL:
        if key in overall:
            sink.add(name, stat, overall[key], unit, f"overall.{key}")
    for run_name, run in sorted(runs.items()):
        run = obj(run, f"runs.{run_name}")
        for key, name, unit in REPORT_RUN:
            if key in run:
                sink.add(
                    name,
                    "mean",
                    run[key],
                    unit,
                    f"runs.{run_name}.{key}",
                    scope=run_name,
                )
    _check_report(sink, overall, runs)
    for key in (
        "model",
        "accelerator",
        "num_benchmark_runs",
        "train_num_accelerators",
        "num_files_train",
    ):
        if key in overall:
            value = overall[key]
            count = (
                as_number(value) if key.startswith("num") or "_num_" in key else None
            )
            result.info[key] = value if count is None else int(count)


def _check_report(
    sink: MetricSink, overall: dict[str, Any], runs: dict[str, Any]
) -> None:
    declared = as_number(overall.get("num_benchmark_runs"))
    if declared is not None and declared != len(runs):
        sink.result.warnings.append(
            f"overall.num_benchmark_runs says {int(declared)} but "
            f"{len(runs)} runs are listed"
        )
    if len(runs) != REQUIRED_RUNS:
        sink.result.warnings.append(
            f"runs: {len(runs)} runs; MLPerf Storage requires {REQUIRED_RUNS}"
        )
    for key, name, unit in REPORT_RUN:
        values = [
            as_number(run.get(key)) for run in runs.values() if isinstance(run, dict)
        ]
        if not values or any(v is None for v in values):
            continue
        numbers = [v for v in values if v is not None]
        figures = {
            "mean": percentiles.mean(numbers),
            "stddev": percentiles.pstdev(numbers),
        }
        for stat, value in figures.items():
            sink.add(name, stat, value, unit, f"runs.*.{key}", method="recomputed:runs")
            reported = [
                m
                for m in sink.result.metrics
                if m.name == name
                and m.stat == stat
                and m.method == "tool"
                and not m.scope
            ]
            if reported and percentiles.disagrees(
                reported[0].value, value, rel_tol=TOLERANCE
            ):
                sink.result.warnings.append(
                    f"{reported[0].source_key} is {reported[0].value:g} but the runs "
                    f"give {value:g}; both kept"
                )
