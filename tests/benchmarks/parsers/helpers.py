"""Builders for small tool outputs in the shapes real tools write."""

from __future__ import annotations

import json
from typing import Any

from benchmarks.lib.parsers import ParseResult, parse
from benchmarks.lib.parsers.model import Metric


def values(result: ParseResult, name: str, stat: str, **where: Any) -> list[float]:
    def fits(m: Metric) -> bool:
        return all(getattr(m, k) == v for k, v in where.items())

    return [
        m.value for m in result.metrics if m.name == name and m.stat == stat and fits(m)
    ]


def one(result: ParseResult, name: str, stat: str, **where: Any) -> float:
    found = values(result, name, stat, **where)
    assert len(found) == 1, (name, stat, where, found)
    return found[0]


def problems(result: ParseResult) -> str:
    assert result.problems, "expected the input to be rejected"
    assert result.metrics == []
    return "\n".join(str(p) for p in result.problems)


def latency(
    mean: float, percentiles: dict[str, int] | None = None, **extra: Any
) -> dict[str, Any]:
    lat: dict[str, Any] = {"min": 1000, "max": 90000, "mean": mean, "stddev": 10.0}
    lat.update(extra)
    if percentiles is not None:
        lat["percentile"] = percentiles
    return lat


def direction(iops: float = 0.0, **latencies: Any) -> dict[str, Any]:
    ios = int(iops * 10)
    d: dict[str, Any] = {
        "io_bytes": ios * 4096, "bw_bytes": int(iops * 4096), "bw": int(iops * 4),
        "iops": iops, "runtime": 10000 if ios else 0, "total_ios": ios,
        "bw_min": 0, "bw_max": 0, "bw_samples": 0, "iops_samples": 0,
    }  # fmt: skip
    d.update(latencies)
    return d


def job(name: str = "job1", **directions: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"jobname": name, "groupid": 0, "error": 0}
    for ddir in ("read", "write", "trim"):
        entry[ddir] = directions.pop(ddir, direction())
    entry.update(directions)
    return entry


def fio_doc(*jobs: dict[str, Any], key: str = "jobs") -> bytes:
    return json.dumps({"fio version": "fio-3.33", key: list(jobs)}).encode()


def parse_fio(data: bytes) -> ParseResult:
    return parse("fio-json", data)
