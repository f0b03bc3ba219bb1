"""Small helpers the parsers share: typed access that fails with a ParseError
naming the key path, and a guess at which tool wrote a JSON document (for the
"wrong parser" message)."""

from __future__ import annotations

from typing import Any

from benchmarks.lib.parsers.model import ParseError, as_number


def obj(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ParseError(where, f"expected a JSON object, found {_kind(value)}")
    return value


def array(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise ParseError(where, f"expected a JSON array, found {_kind(value)}")
    return value


def number(value: Any, where: str) -> float:
    result = as_number(value)
    if result is None:
        raise ParseError(where, f"expected a number, found {value!r:.60}")
    return result


def scaled(value: Any, divisor: float) -> Any:
    """``value / divisor`` when it is a number; else ``value`` unchanged, so the
    sink reports it as not a number."""
    result = as_number(value)
    return value if result is None else result / divisor


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def guess_parser(doc: Any) -> str | None:
    if not isinstance(doc, dict):
        return None
    keys = set(doc)
    if keys & {"jobs", "client_stats"} and ("fio version" in keys or "jobs" in keys):
        return "fio-json"
    if keys & {"request_throughput", "requests_per_second", "mean_ttft_ms"}:
        return "vllm-bench"
    if {"metric", "num_accelerators"} <= keys or {"overall", "runs"} <= keys:
        return "mlperf-storage"
    if "summary" in keys and "requests_completed" in keys:
        return "mlperf-storage"
    if "metrics" in keys and isinstance(doc.get("metrics"), list):
        return "reprogate-metrics"
    return None


def wrong_tool(doc: Any, expected: str, what: str) -> ParseError:
    guess = guess_parser(doc)
    hint = f"; it looks like {guess} output" if guess and guess != expected else ""
    return ParseError("", f"not {what}{hint}")
