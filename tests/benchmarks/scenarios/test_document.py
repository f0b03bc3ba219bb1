"""``scenario.json``: what a driver measured, checked as strictly as a
harness's reprogate-metrics output, its metrics marked ``method: "scenario"``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchmarks.lib.lab.scenario_document import (
    ScenarioDocumentError,
    decode,
    encode,
)
from benchmarks.lib.lab.scenarios.base import metric


def test_a_document_reads_back_with_its_metrics_marked_scenario() -> None:
    data = encode(
        "failover",
        [metric("failover_recovery_s", "mean", 1.25, "s", "series throughput")],
        [{"name": "throughput", "unit": "MiB/s", "points": [[0.0, 10.0], [1, 9]]}],
        {"actions": [{"do": "error_window", "at_s": 3.0}]},
    )

    document = decode(data)

    assert document.kind == "failover"
    (m,) = document.metrics
    assert (m.name, m.stat, m.value, m.unit) == (
        "failover_recovery_s",
        "mean",
        1.25,
        "s",
    )
    assert m.method == "scenario"
    assert m.source_key == "series throughput"
    (s,) = document.series
    assert s.points == ((0.0, 10.0), (1.0, 9.0))
    assert document.record["actions"][0]["do"] == "error_window"


def _doc(**changes: Any) -> bytes:
    doc: dict[str, Any] = {
        "schema": "reprogate.scenario/v1", "kind": "warmup", "record": {},
        "metrics": [{"name": "model_load_s", "stat": "mean", "value": 2.0,
                     "unit": "s", "key": "harness"}],
        "series": [],
    }  # fmt: skip
    doc.update(changes)
    return json.dumps(doc).encode()


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"{", "not JSON"),
        (b"[]", "must be a JSON object"),
        (_doc(schema="reprogate.scenario/v9"), "schema: must be"),
        (_doc(extra=1), "extra: unknown key"),
        (_doc(kind=""), "kind:"),
        (_doc(record=[]), "record: must be an object"),
        (_doc(metrics={}), "must be arrays"),
        (
            _doc(
                metrics=[
                    {
                        "name": "model_load_s",
                        "stat": "mean",
                        "value": 1,
                        "unit": "ms",
                        "key": "",
                    }
                ]
            ),
            "metrics[0].unit",
        ),
        (
            _doc(metrics=[{"name": "x", "stat": "p42.0", "value": 1, "unit": "s"}]),
            "metrics[0].stat",
        ),
        (
            _doc(
                metrics=[
                    {"name": "x", "stat": "mean", "value": 1, "unit": "s", "key": 5}
                ]
            ),
            "metrics[0].key",
        ),
        (
            _doc(series=[{"name": "t", "unit": "x", "points": [[1, 1], [0, 1]]}]),
            "series[0]",
        ),
        (_doc().replace(b"2.0", b"NaN"), "not JSON"),
    ],
)
def test_a_bad_document_is_refused_naming_where(data: bytes, says: str) -> None:
    with pytest.raises(ScenarioDocumentError) as refused:
        decode(data)

    assert says in str(refused.value)
