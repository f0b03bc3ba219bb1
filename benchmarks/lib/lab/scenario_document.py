"""The runner artefact ``scenario.json``: what a scenario driver measured and
did (``benchmarks.lib.lab.scenarios``), written by the agent and read by the
server, which joins its metrics and series to the run's with
``method: "scenario"`` (so gate criteria can name them):

    {"schema": "reprogate.scenario/v1", "kind": "failover",
     "metrics": [{"name": "failover_recovery_s", "stat": "mean", "value": 1.2,
                  "unit": "s", "key": "series throughput: ..."}],
     "series": [{"name": "throughput", "unit": "MiB/s", "points": [[0, 410.0]]}],
     "record": {"actions": [...], "phases": [...]}}

Metrics and series are checked as strictly as a harness's ``reprogate-metrics``
output (names, units, stats, finite numbers)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

from benchmarks.lib.parsers import Metric, Series, parse

SCHEMA: Final = "reprogate.scenario/v1"
KEYS: Final = frozenset({"schema", "kind", "metrics", "series", "record"})
METHOD: Final = "scenario"
MAX_KEY_CHARS: Final = 300


class ScenarioDocumentError(ValueError):
    """``scenario.json`` is not a scenario document."""


@dataclass(frozen=True)
class ScenarioDocument:
    kind: str
    metrics: list[Metric] = field(default_factory=list)
    series: list[Series] = field(default_factory=list)
    record: dict[str, Any] = field(default_factory=dict)


def encode(
    kind: str,
    metrics: list[dict[str, Any]],
    series: list[dict[str, Any]],
    record: Mapping[str, Any],
) -> bytes:
    document = {
        "schema": SCHEMA,
        "kind": kind,
        "metrics": metrics,
        "series": series,
        "record": dict(record),
    }
    return json.dumps(document, sort_keys=True, allow_nan=False).encode("utf-8")


def decode(data: bytes) -> ScenarioDocument:
    """The document, its metrics marked ``method: "scenario"``; any problem
    raises ``ScenarioDocumentError`` naming where it is."""
    try:
        doc = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError) as error:
        raise ScenarioDocumentError(f"not JSON: {error}") from None
    if not isinstance(doc, dict):
        raise ScenarioDocumentError("must be a JSON object")
    unknown = sorted(set(doc) - KEYS)
    if unknown:
        raise ScenarioDocumentError(f"{unknown[0]}: unknown key")
    if doc.get("schema") != SCHEMA:
        raise ScenarioDocumentError(f"schema: must be {SCHEMA!r}")
    kind, record = doc.get("kind"), doc.get("record", {})
    if not (isinstance(kind, str) and 0 < len(kind) <= 32):
        raise ScenarioDocumentError("kind: must be a scenario kind's name")
    if not isinstance(record, dict):
        raise ScenarioDocumentError("record: must be an object")
    metrics, series = doc.get("metrics", []), doc.get("series", [])
    if not isinstance(metrics, list) or not isinstance(series, list):
        raise ScenarioDocumentError("metrics, series: must be arrays")
    keys = [_key(item, f"metrics[{i}]") for i, item in enumerate(metrics)]
    plain = {
        "metrics": [
            {k: v for k, v in item.items() if k != "key"}
            if isinstance(item, dict)
            else item
            for item in metrics
        ],
        "series": series,
    }
    result = parse("reprogate-metrics", json.dumps(plain).encode("utf-8"))
    if not result.ok:
        raise ScenarioDocumentError("; ".join(str(p) for p in result.problems[:5]))
    return ScenarioDocument(
        kind=kind,
        metrics=[
            replace(m, method=METHOD, source_key=key or m.source_key)
            for m, key in zip(result.metrics, keys, strict=True)
        ],
        series=[replace(s, source_key=f"scenario {kind}") for s in result.series],
        record=record,
    )


def _key(item: Any, where: str) -> str:
    key = item.get("key", "") if isinstance(item, dict) else ""
    if not isinstance(key, str) or len(key) > MAX_KEY_CHARS:
        raise ScenarioDocumentError(
            f"{where}.key: must be text of at most {MAX_KEY_CHARS} characters"
        )
    return key


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")
