"""The ``warmup`` driver: the page cache dropped before the harness, the
harness's ``model_load_s`` and its ``cache_hit_rate`` series recorded, and
``warmup_s`` the time the series first reaches 90 % of its final plateau. A
whole warm-up run with the example harness: tests/agent/test_warmup_run.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.lib.lab.scenarios import warmup
from tests.benchmarks.scenarios.test_failover import FakeContext, series


def test_warmup_is_the_first_point_at_90_pct_of_the_plateau() -> None:
    # t = 1..10; the last quarter (t >= 7.75) is 0.8, 0.82, 0.8 -> plateau 0.8
    values = [0.0, 0.1, 0.3, 0.5, 0.7, 0.71, 0.75, 0.8, 0.82, 0.8]

    found, how = warmup.warmup_s(series("cache_hit_rate", values))

    assert found == 7.0  # 0.71 at t=6 is under 0.72; 0.75 at t=7 is the first
    assert "plateau 0.8" in how


def test_a_series_that_stays_at_zero_has_no_warmup() -> None:
    found, why = warmup.warmup_s(series("cache_hit_rate", [0, 0, 0]))

    assert found is None
    assert "no plateau" in why


def test_the_driver_records_the_load_the_series_and_the_page_cache(
    tmp_path: Path,
) -> None:
    document = {
        "metrics": [{"name": "model_load_s", "stat": "mean", "value": 2.5,
                     "unit": "s"}],
        "series": [{"name": "cache_hit_rate", "unit": "ratio",
                    "points": [[1, 0.1], [2, 0.5], [3, 0.9], [4, 0.92]]}],
    }  # fmt: skip
    context = FakeContext(tmp_path, {}, document, seconds=0.05)

    outcome = warmup.drive(context)

    found = {m["name"]: m["value"] for m in outcome.metrics}
    assert found == {"model_load_s": 2.5, "warmup_s": 3.0}
    (hits,) = outcome.series
    assert hits["name"] == "warmup_cache_hit_rate"
    assert hits["points"][-1] == [4.0, 0.92]
    assert outcome.record["page_cache"]["dropped"] is False  # the fake's answer
    assert outcome.record["notes"] == []


def test_what_the_harness_did_not_report_is_said(tmp_path: Path) -> None:
    context = FakeContext(tmp_path, {}, {"metrics": []}, seconds=0.05)

    outcome = warmup.drive(context)

    assert outcome.metrics == []
    assert outcome.record["notes"] == [
        "the harness reported no model_load_s metric",
        "the harness reported no 'cache_hit_rate' series",
    ]
    assert outcome.failure is None


@pytest.mark.parametrize("stat", ["p50", "max"])
def test_a_load_time_under_another_stat_is_taken(tmp_path: Path, stat: str) -> None:
    document = {
        "metrics": [{"name": "model_load_s", "stat": stat, "value": 1.5, "unit": "s"}]
    }
    outcome = warmup.drive(FakeContext(tmp_path, {}, document, seconds=0.05))

    assert outcome.metrics[0]["value"] == 1.5
