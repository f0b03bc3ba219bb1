"""``vllm-bench``: ``vllm bench serve --save-result`` and ``vllm bench throughput``
JSON (formats-and-gates.md §A2; ``vllm/benchmarks/serve.py``).

Serve results (a flat object):

- ``mean_/median_/std_/p{P}_{m}_ms`` -> ``ttft_ms``, ``tpot_ms``, ``itl_ms``,
  ``e2e_latency_ms`` (from ``e2el``), ``client_queue_time_ms``,
  ``e2e_latency_including_client_queue_ms``; ``median`` is ``p50`` (a ``p50``
  key, when present, wins), ``std`` is ``stddev`` (numpy's population std);
  ``P`` may be fractional (``p99.9_ttft_ms``); unknown ``m`` keep their name;
- ``request_throughput`` -> ``request_throughput_rps``, ``request_goodput``
  (null unless ``--goodput``) -> ``request_goodput_rps``,
  ``output_throughput`` -> ``output_token_throughput_tps`` (``max`` from
  ``max_output_tokens_per_s``), ``total_token_throughput`` ->
  ``total_token_throughput_tps``; counts ``completed_requests``,
  ``failed_requests``, ``input_tokens``, ``output_tokens``; ``duration_s``;
- ``request_rate`` (a number or the string ``"inf"``), ``max_concurrency``,
  ``burstiness``, model, backend, date -> ``info``;
- failures -> a warning (latency figures cover successful requests only):
  ``failed`` when the file has it (older vLLM does not), else the requests in
  ``errors`` (one entry each) minus ``completed``, else ``num_prompts -
  completed``, else the non-empty ``errors``; counts that contradict each
  other (``failed`` vs the non-empty errors, the requests counted vs
  ``num_prompts``) are warnings too; nothing completed -> a warning and no
  latency figures;
- per-request arrays (``ttfts``, ``itls``, ``latencies``, ``output_lens``,
  ``errors``; which ones a file holds depends on the vLLM version and
  ``--save-detailed``; vLLM 0.8 saves ``ttfts``/``itls`` but no
  ``latencies``): the percentiles are recomputed whenever ``ttfts`` is there,
  the way vLLM computes them (successful requests; ITL flattened; numpy's
  linear percentile), with method ``recomputed:per-request``, and compared
  with the file's own (warning beyond 0.1%). TTFT from ``ttfts``, ITL from
  ``itls``, E2E latency from ``latencies``; TPOT = (latency - ttft) /
  (output_len - 1) when output_len > 1, where latency - ttft is the sum of the
  request's ``itls`` when ``latencies`` is missing (the time from the first
  to the last chunk, which is what vLLM subtracts). A request is successful
  when its ``errors`` entry is an empty string: an empty string is no error.
  vLLM may store an empty reason for a failed request, so when the empty
  entries do not number ``completed`` the samples cannot be told apart and
  nothing is recomputed (a warning says so). Without ``failed`` the count of
  non-empty errors becomes ``failed_requests`` (``recomputed:per-request``).

Throughput results (``elapsed_time``, ``num_requests``, ``total_num_tokens``,
``requests_per_second``, ``tokens_per_second``) -> ``duration_s``,
``completed_requests``, ``tokens``, ``request_throughput_rps``,
``token_throughput_tps`` (prompt and output tokens together).
"""

from __future__ import annotations

import math
import re
from typing import Any, Final

from benchmarks.lib.parsers import percentiles
from benchmarks.lib.parsers.common import array, wrong_tool
from benchmarks.lib.parsers.jsontext import load_lenient
from benchmarks.lib.parsers.model import (
    STANDARD_PERCENTILES,
    MetricSink,
    ParseError,
    ParseResult,
    as_number,
    percentile_stat,
)

STAT_KEY_RE: Final = re.compile(r"^(mean|median|std|p(\d+(?:\.\d+)?))_([a-z0-9_]+)_ms$")
METRIC_NAMES: Final = {
    "ttft": "ttft_ms",
    "tpot": "tpot_ms",
    "itl": "itl_ms",
    "e2el": "e2e_latency_ms",
    "client_queue_time": "client_queue_time_ms",
    "e2el_including_client_queue": "e2e_latency_including_client_queue_ms",
}
SERVE_VALUES: Final = (
    ("request_throughput", "request_throughput_rps", "mean", "req/s"),
    ("request_goodput", "request_goodput_rps", "mean", "req/s"),
    ("output_throughput", "output_token_throughput_tps", "mean", "tok/s"),
    ("max_output_tokens_per_s", "output_token_throughput_tps", "max", "tok/s"),
    ("total_token_throughput", "total_token_throughput_tps", "mean", "tok/s"),
    ("duration", "duration_s", "total", "s"),
    ("completed", "completed_requests", "total", "requests"),
    ("failed", "failed_requests", "total", "requests"),
    ("total_input_tokens", "input_tokens", "total", "tokens"),
    ("total_output_tokens", "output_tokens", "total", "tokens"),
    ("max_concurrent_requests", "concurrent_requests", "max", "requests"),
)
THROUGHPUT_VALUES: Final = (
    ("elapsed_time", "duration_s", "total", "s"),
    ("num_requests", "completed_requests", "total", "requests"),
    ("total_num_tokens", "tokens", "total", "tokens"),
    ("requests_per_second", "request_throughput_rps", "mean", "req/s"),
    ("tokens_per_second", "token_throughput_tps", "mean", "tok/s"),
)
INFO_KEYS: Final = (
    "date", "backend", "endpoint_type", "label", "model_id", "tokenizer_id",
    "num_prompts", "request_rate", "burstiness", "max_concurrency",
)  # fmt: skip
TOLERANCE: Final = 0.001
METHOD: Final = "recomputed:per-request"


def parse_vllm(data: bytes, result: ParseResult) -> None:
    doc, warnings = load_lenient(data, what="vllm bench JSON")
    result.warnings.extend(warnings)
    sink = MetricSink(result)
    if "requests_per_second" in doc and "elapsed_time" in doc:
        result.info["kind"] = "throughput"
        _values(sink, doc, THROUGHPUT_VALUES)
        return
    if not {"request_throughput", "completed", "duration"} & set(doc):
        raise wrong_tool(doc, "vllm-bench", "vllm bench serve or throughput JSON")
    result.info["kind"] = "serve"
    result.info.update({k: doc[k] for k in INFO_KEYS if k in doc})
    _values(sink, doc, SERVE_VALUES)
    _failures(result, doc)
    if as_number(doc.get("completed")) == 0:
        result.warnings.append("completed: no request completed; no latency figures")
        return
    tool = _stat_keys(sink, doc)
    _recompute(sink, doc, tool)


def _real_errors(doc: dict[str, Any]) -> int | None:
    """How many ``errors`` entries name an error (an empty string is none)."""
    errors = doc.get("errors")
    if not isinstance(errors, list):
        return None
    return sum(1 for e in errors if e)


def _failures(result: ParseResult, doc: dict[str, Any]) -> None:
    """Warn about failed requests, counted the best way the file allows, and
    about counts that contradict each other."""
    completed = as_number(doc.get("completed"))
    failed = as_number(doc.get("failed"))
    prompts = as_number(doc.get("num_prompts"))
    errors = doc["errors"] if isinstance(doc.get("errors"), list) else None
    named = _real_errors(doc)
    if failed is not None and named is not None and int(failed) != named:
        result.warnings.append(
            f"failed: failed is {int(failed)} but errors holds {named} non-empty "
            "error(s)"
        )
    if failed is not None and completed is not None:
        total, count, key = int(failed + completed), int(failed), "failed"
    elif errors is not None and completed is not None:
        total, key = len(errors), "errors"
        count = total - int(completed)
    elif prompts is not None and completed is not None:
        total, count, key = int(prompts), int(prompts - completed), "num_prompts"
    elif errors is not None and named is not None:
        total, count, key = len(errors), named, "errors"
    else:
        return
    if prompts is not None and key != "num_prompts" and int(prompts) != total:
        result.warnings.append(
            f"num_prompts: {int(prompts)} prompts but {total} requests were counted "
            f"({key})"
        )
    if count > 0:
        result.warnings.append(
            f"{key}: {count} of {total} requests failed; latency figures cover "
            "the successful ones only"
        )


def _values(
    sink: MetricSink, doc: dict[str, Any], table: tuple[tuple[str, str, str, str], ...]
) -> None:
    for key, name, stat, unit in table:
        if key in doc and doc[key] is not None:
            sink.add(name, stat, doc[key], unit, key)


def _stat_keys(sink: MetricSink, doc: dict[str, Any]) -> dict[tuple[str, str], float]:
    found: dict[tuple[str, str], tuple[str, Any]] = {}
    for key, value in doc.items():
        match = STAT_KEY_RE.match(key)
        if not match:
            continue
        kind, p, metric = match.groups()
        name = METRIC_NAMES.get(metric, f"{metric}_ms")
        stat = {"mean": "mean", "median": "p50", "std": "stddev"}.get(kind)
        if stat is None:
            stat = percentile_stat(float(p))
            if not 0 < float(p) <= 100:
                sink.result.warnings.append(f"{key}: {p} is not a percentile; skipped")
                continue
        if (name, stat) in found and kind == "median":
            continue  # an explicit p50 key wins over median
        found[(name, stat)] = (key, value)
    tool: dict[tuple[str, str], float] = {}
    for (name, stat), (key, value) in found.items():
        metric = sink.add(name, stat, value, "ms", key)
        if metric is not None:
            tool[(name, stat)] = metric.value
    return tool


def _samples(sink: MetricSink, doc: dict[str, Any]) -> dict[str, list[float]] | None:
    """The per-request samples vLLM's statistics are computed from (ms), or
    None when the file does not hold them or its failed requests cannot be
    told apart (a warning says why)."""
    if not isinstance(doc.get("ttfts"), list):
        return None
    ttfts = array(doc["ttfts"], "ttfts")
    count = len(ttfts)
    arrays: dict[str, list[Any] | None] = {
        key: doc[key] if isinstance(doc.get(key), list) else None
        for key in ("latencies", "errors", "itls", "output_lens")
    }
    for key, values in arrays.items():
        if values is not None and len(values) != count:
            raise ParseError(key, f"has {len(values)} entries but ttfts has {count}")
    errors = arrays["errors"]
    ok = [i for i in range(count) if errors is None or not errors[i]]
    if not _told_apart(sink, doc, len(ok), errors is not None):
        return None
    latencies, itls, lens = arrays["latencies"], arrays["itls"], arrays["output_lens"]
    out: dict[str, list[float]] = {"ttft_ms": [], "tpot_ms": [], "itl_ms": []}
    if latencies is not None:
        out["e2e_latency_ms"] = []
    for i in ok:
        ttft = _seconds(ttfts[i], f"ttfts[{i}]")
        out["ttft_ms"].append(ttft * 1000)
        gaps = None
        if itls is not None:
            gaps = [_seconds(g, f"itls[{i}]") for g in array(itls[i], f"itls[{i}]")]
            out["itl_ms"].extend(g * 1000 for g in gaps)
        decode = None  # latency - ttft (s)
        if latencies is not None:
            latency = _seconds(latencies[i], f"latencies[{i}]")
            out["e2e_latency_ms"].append(latency * 1000)
            decode = latency - ttft
        elif gaps is not None:
            decode = math.fsum(gaps)
        length = as_number(lens[i]) if lens is not None else None
        if decode is not None and length is not None and length > 1:
            out["tpot_ms"].append(decode / (length - 1) * 1000)
    if lens is None or (latencies is None and itls is None):
        del out["tpot_ms"]
    if itls is None:
        del out["itl_ms"]
    if errors is not None and "failed" not in doc:
        failed = _real_errors(doc) or 0
        sink.add(
            "failed_requests", "total", failed, "requests", "errors", method=METHOD
        )
    return out


def _told_apart(sink: MetricSink, doc: dict[str, Any], ok: int, errors: bool) -> bool:
    """Whether the successful requests are known: as many as ``completed``
    (vLLM counts only those) among the entries without an error."""
    completed = as_number(doc.get("completed"))
    if completed is None or int(completed) == ok:
        return True
    if errors:
        why = (
            f"{ok} requests have an empty error but completed is {int(completed)} "
            "(a failed request may carry an empty error)"
        )
    else:
        why = f"no 'errors' and completed is {int(completed)} of {ok} requests"
    sink.result.warnings.append(
        f"ttfts: {why}; the failed requests cannot be told apart, percentiles not "
        "recomputed"
    )
    return False


def _seconds(value: Any, where: str) -> float:
    number = as_number(value)
    if number is None or number < 0:
        raise ParseError(
            where, f"expected a duration in seconds >= 0, found {value!r:.40}"
        )
    return number


def _recompute(
    sink: MetricSink, doc: dict[str, Any], tool: dict[tuple[str, str], float]
) -> None:
    samples = _samples(sink, doc)
    if samples is None:
        return
    method = METHOD
    for name, values in samples.items():
        if not values:
            continue
        values.sort()
        wanted = sorted(
            {p for (n, s), _ in tool.items() if n == name and (p := _p(s))}
            | set(STANDARD_PERCENTILES)
        )
        figures = {
            "mean": percentiles.mean(values),
            "stddev": percentiles.pstdev(values),
        }
        figures.update(
            {percentile_stat(p): percentiles.linear(values, p) for p in wanted}
        )
        for stat, value in figures.items():
            sink.add(name, stat, value, "ms", _source(name, doc), method=method)
            if (name, stat) in tool and percentiles.disagrees(
                tool[(name, stat)], value, rel_tol=TOLERANCE
            ):
                sink.result.warnings.append(
                    f"{name} {stat}: the file says {tool[(name, stat)]:g} ms but its "
                    f"per-request samples give {value:g} ms; both kept"
                )


def _p(stat: str) -> float | None:
    return float(stat[1:]) if stat.startswith("p") else None


def _source(name: str, doc: dict[str, Any]) -> str:
    tpot = "latencies,ttfts" if isinstance(doc.get("latencies"), list) else "itls"
    return {
        "ttft_ms": "ttfts",
        "e2e_latency_ms": "latencies",
        "tpot_ms": f"{tpot},output_lens",
        "itl_ms": "itls",
    }[name]
