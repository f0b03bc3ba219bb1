"""``mlperf-loadgen``: MLPerf Inference ``mlperf_log_summary.txt`` and
``mlperf_log_detail.txt`` (formats-and-gates.md §A6).

Summary text: ``Key : Value`` lines (spacing around the colon varies) in three
banner sections. Read:

- ``Samples per second`` (Offline) and ``Completed samples per second``
  (Server) -> ``sample_throughput_sps``; ``Scheduled samples per second`` ->
  ``scheduled_sample_throughput_sps``; ``Tokens per second`` / ``Completed
  tokens per second`` -> ``output_token_throughput_tps`` (it is printed twice
  in LLM Server summaries; a different second value is a warning);
- ``Min/Max/Mean latency (ns)`` and ``NN.NN percentile latency (ns)`` ->
  ``e2e_latency_ms``; the ``First Token`` set -> ``ttft_ms``; the ``Time to
  Output Token`` set -> ``tpot_ms`` (ns / 1e6); LoadGen's percentiles are
  order statistics over all samples (method ``tool``); ``Early stopping NNth
  percentile estimate`` -> method ``tool:early-stopping-estimate``;
- ``Result is : INVALID`` and any ``… satisfied : No`` -> warnings;
  ``SUT name``, ``Scenario``, ``Mode``, the validity and the test parameters ->
  ``info``; every metric carries the scenario.

Detail log: ``:::MLLOG {json}`` lines; the ``result_*`` keys map to the same
metrics (the first occurrence of a repeated key wins, as in the submission
checker, and a different repeat is a warning).
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from benchmarks.lib.parsers.jsontext import decode_text
from benchmarks.lib.parsers.model import (
    MetricSink,
    ParseError,
    ParseResult,
    percentile_stat,
)

LINE_RE: Final = re.compile(r"^\s*([^:]+?)\s*:\s*(.*?)\s*$")
KINDS: Final = "(latency|first token latency|time to output token)"
PERCENTILE_RE: Final = re.compile(
    rf"^(\d+(?:\.\d+)?)(?:th)? percentile {KINDS} \(ns\)$"
)
MINMAX_RE: Final = re.compile(rf"^(min|max|mean) {KINDS} \(ns\)$")
EARLY_RE: Final = re.compile(
    r"early stopping (\d+(?:\.\d+)?)th percentile estimate\s*:?\s*(\d+)", re.I
)
LATENCY_NAMES: Final = {
    "latency": "e2e_latency_ms",
    "first token latency": "ttft_ms",
    "time to output token": "tpot_ms",
}
RATES: Final = {
    "samples per second": ("sample_throughput_sps", "samples/s"),
    "completed samples per second": ("sample_throughput_sps", "samples/s"),
    "scheduled samples per second": ("scheduled_sample_throughput_sps", "samples/s"),
    "tokens per second": ("output_token_throughput_tps", "tok/s"),
    "completed tokens per second": ("output_token_throughput_tps", "tok/s"),
}
INFO: Final = {
    "sut name": "sut_name",
    "scenario": "scenario",
    "mode": "mode",
    "result is": "result",
}
DETAIL_RATES: Final = {
    "result_samples_per_second": "samples per second",
    "result_completed_samples_per_sec": "completed samples per second",
    "result_scheduled_samples_per_sec": "scheduled samples per second",
    "result_tokens_per_second": "tokens per second",
    "result_completed_tokens_per_second": "completed tokens per second",
}
DETAIL_LATENCY_RE: Final = re.compile(
    r"^result_(?:(first_token_)|(time_per_output_token_))?"
    r"(?:(min|max|mean)_latency_ns|(\d+\.\d+)_percentile(?:_latency)?_ns)$"
)
NS_PER_MS: Final = 1e6


def parse_loadgen(data: bytes, result: ParseResult) -> None:
    text = decode_text(data)
    if text.lstrip().startswith((":::MLLOG", ":::ENDPTS")):
        _detail(text, result)
        return
    if "MLPerf Results Summary" not in text:
        raise ParseError(
            "", "not an MLPerf LoadGen summary: no 'MLPerf Results Summary' banner"
        )
    pairs = _pairs(text)
    scenario = next((v for k, v, _ in pairs if k == "scenario"), None)
    sink = MetricSink(result)
    seen: dict[tuple[str, str], float] = {}
    for key, value, line in pairs:
        _summary_line(sink, key, value, f"line {line}", scenario, seen)
        if key.endswith("satisfied") and value.lower().startswith("no"):
            result.warnings.append(
                f"line {line}: LoadGen says '{key}' is not satisfied"
            )
    for match in EARLY_RE.finditer(text):
        p, estimate_ns = float(match.group(1)), float(match.group(2))
        line = text.count("\n", 0, match.start()) + 1
        stat, where = percentile_stat(p), f"line {line}"
        method = "tool:early-stopping-estimate"
        estimate_ms = estimate_ns / NS_PER_MS
        sink.add(
            "e2e_latency_ms",
            stat,
            estimate_ms,
            "ms",
            where,
            method=method,
            scenario=scenario,
        )
    info: dict[str, Any] = {INFO[k]: v for k, v, _ in pairs if k in INFO}
    banner = text.find("Test Parameters Used")
    if banner >= 0:
        start = text.count("\n", 0, banner) + 1
        info["parameters"] = {k: v for k, v, n in pairs if n > start}
    result.info.update(info)
    if info.get("result", "").upper() == "INVALID":
        result.warnings.append("LoadGen says the result is INVALID")
    if not result.metrics:
        raise ParseError(
            "", "the LoadGen summary holds no throughput or latency figures"
        )


def _pairs(text: str) -> list[tuple[str, str, int]]:
    pairs = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = LINE_RE.match(line)
        if match and not line.lstrip().startswith("*"):
            pairs.append((match.group(1).lower(), match.group(2), number))
    return pairs


def _summary_line(
    sink: MetricSink,
    key: str,
    value: str,
    where: str,
    scenario: str | None,
    seen: dict[tuple[str, str], float],
) -> None:
    if key in RATES:
        name, unit = RATES[key]
        _once(sink, seen, name, "mean", value, 1.0, unit, f"{where} ({key})", scenario)
        return
    if match := PERCENTILE_RE.match(key):
        stat, name = (
            percentile_stat(float(match.group(1))),
            LATENCY_NAMES[match.group(2)],
        )
    elif match := MINMAX_RE.match(key):
        stat, name = match.group(1), LATENCY_NAMES[match.group(2)]
    else:
        return
    _once(sink, seen, name, stat, value, NS_PER_MS, "ms", f"{where} ({key})", scenario)


def _once(
    sink: MetricSink,
    seen: dict[tuple[str, str], float],
    name: str,
    stat: str,
    value: str,
    divisor: float,
    unit: str,
    where: str,
    scenario: str | None,
) -> None:
    try:
        number = float(value) / divisor
    except ValueError:
        raise ParseError(where, f"expected a number, found {value!r:.40}") from None
    if (name, stat) in seen:
        if seen[(name, stat)] != number:
            sink.result.warnings.append(
                f"{where}: a second, different {name} {stat}; kept the first"
            )
        return
    if sink.add(name, stat, number, unit, where, scenario=scenario) is not None:
        seen[(name, stat)] = number


def _detail(text: str, result: ParseResult) -> None:
    values: dict[str, tuple[Any, int]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.startswith(":::MLLOG"):
            continue
        try:
            event = json.loads(line[len(":::MLLOG") :])
        except (ValueError, RecursionError):
            raise ParseError(
                f"line {number}", "not a valid :::MLLOG JSON event"
            ) from None
        if not isinstance(event, dict) or not isinstance(event.get("key"), str):
            raise ParseError(f"line {number}", "an :::MLLOG event without a 'key'")
        key = event["key"]
        if key in values:
            if values[key][0] != event.get("value"):
                result.warnings.append(
                    f"line {number}: {key} repeated with another value; kept the first"
                )
            continue
        values[key] = (event.get("value"), number)
    scenario = str(values.get("effective_scenario", ("",))[0]) or None
    sink = MetricSink(result)
    seen: dict[tuple[str, str], float] = {}
    for key, (value, number) in values.items():
        where = f"line {number} ({key})"
        if key in DETAIL_RATES:
            name, unit = RATES[DETAIL_RATES[key]]
            _once(sink, seen, name, "mean", str(value), 1.0, unit, where, scenario)
        elif match := DETAIL_LATENCY_RE.match(key):
            first, tpot, plain, p = match.groups()
            name = "ttft_ms" if first else "tpot_ms" if tpot else "e2e_latency_ms"
            stat = plain or percentile_stat(float(p))
            _once(sink, seen, name, stat, str(value), NS_PER_MS, "ms", where, scenario)
    validity = values.get("result_validity", (None,))[0]
    result.info.update({"scenario": scenario, "result": validity})
    if validity == "INVALID":
        result.warnings.append("LoadGen says the result is INVALID")
    if not result.metrics:
        raise ParseError("", "the LoadGen detail log holds no result_* figures")
