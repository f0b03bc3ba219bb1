"""``results_document``: a campaign's runs as ``reprogate.results/v1`` — statuses
and drift mapped, every value with its source, only judgeable metrics, a fixed
order, and the same number of queries for 2 and 12 runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from accounts.models import Organisation
from artifacts.models import Bundle
from benchmarks.models import Campaign, Run, RunMetric
from gates.lib.engine.validate import results_problems
from gates.selectors.results import STATUS, results_document, run_drift, run_status
from procurement.models import Rfp
from tests.artifacts.ingest_support import (
    upload_rfp,  # noqa: F401 (fixture rfp)
)
from tests.benchmarks.runner.support import accepted_bundle, finish, make_pool, start

pytestmark = pytest.mark.django_db


@pytest.fixture
def bundle(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> Bundle:
    return accepted_bundle(tmp_path / "bundle", rfp, vendor_a_org, vendor_a)


@pytest.fixture
def make_campaign(bundle: Bundle, buyer_org: Organisation, labops: Any) -> Any:
    """A campaign of the bundle (scenarios cold-c1 and warm-c1) with this many
    repetitions; nothing is sent to a broker inside the test's transaction."""
    pools = iter(range(100))

    def make(repetitions: int = 1) -> Campaign:
        lab = buyer_org.engages.get(kind=Organisation.Kind.LAB)
        pool = make_pool(lab, name=f"pool-{next(pools)}")
        return start(bundle, pool, labops, repetitions=repetitions)

    return make


def runs(campaign: Campaign) -> dict[tuple[str, int], Run]:
    return {(r.scenario_name, r.repetition): r for r in campaign.runs.all()}


TTFT = {"name": "ttft_ms", "stat": "p99", "value": 41.5, "unit": "ms"}


def test_document_has_the_contract_shape_and_passes_the_engine(
    make_campaign: Any,
) -> None:
    campaign = make_campaign(repetitions=1)
    run = runs(campaign)[("cold-c1", 1)]
    finish(run, metrics=[{**TTFT, "source_key": "metrics[0].value"}])

    document = results_document(campaign=campaign)

    assert document["schema"] == "reprogate.results/v1"
    assert results_problems(document) == []
    first = document["runs"][0]
    assert first == {
        "id": str(run.public_id),
        "scenario": "cold-c1",
        "repetition": 1,
        "status": "succeeded",
        "drift": "none",
        "metrics": [
            {
                "name": "ttft_ms",
                "stat": "p99",
                "value": 41.5,
                "unit": "ms",
                "source": {"file": "metrics.json", "key": "metrics[0].value"},
            }
        ],
    }


def test_a_run_without_metrics_is_listed_with_none(make_campaign: Any) -> None:
    campaign = make_campaign(repetitions=1)
    finish(runs(campaign)[("warm-c1", 1)])  # succeeded, parsed nothing

    document = results_document(campaign=campaign)

    warm = [r for r in document["runs"] if r["scenario"] == "warm-c1"]
    assert warm[0]["status"] == "succeeded"
    assert warm[0]["metrics"] == []
    assert results_problems(document) == []


@pytest.mark.parametrize(
    ("state", "status"),
    [
        (Run.State.SUCCEEDED, "succeeded"),
        (Run.State.FAILED, "failed"),
        (Run.State.TIMED_OUT, "failed"),
        (Run.State.CANCELLED, "cancelled"),
        (Run.State.QUEUED, "pending"),
        (Run.State.PREPARING, "pending"),
        (Run.State.RUNNING, "pending"),
        (Run.State.PARSING, "pending"),
    ],
)
def test_run_states_map_to_result_statuses(
    make_campaign: Any, state: str, status: str
) -> None:
    campaign = make_campaign(repetitions=1)
    run = runs(campaign)[("cold-c1", 1)]
    Run.objects.filter(pk=run.pk).update(state=state)

    document = results_document(campaign=campaign)

    by_id = {r["id"]: r for r in document["runs"]}
    assert by_id[str(run.public_id)]["status"] == status
    assert results_problems(document) == []


def test_every_run_state_has_a_status_and_only_success_is_succeeded() -> None:
    assert set(STATUS) == set(Run.State.values)
    assert [s for s in Run.State.values if run_status(s) == "succeeded"] == [
        Run.State.SUCCEEDED
    ]
    assert run_status("no-such-state") == "failed"


def test_a_failed_run_keeps_its_metrics_and_says_failed(make_campaign: Any) -> None:
    campaign = make_campaign(repetitions=1)
    run = finish(runs(campaign)[("cold-c1", 1)], metrics=[TTFT])
    Run.objects.filter(pk=run.pk).update(state=Run.State.FAILED)

    (first,) = [
        r
        for r in results_document(campaign=campaign)["runs"]
        if r["id"] == str(run.public_id)
    ]

    assert first["status"] == "failed"
    assert [m["name"] for m in first["metrics"]] == ["ttft_ms"]


def drift(*severities: str) -> list[dict[str, Any]]:
    return [
        {
            "field": f"f{i}",
            "declared": "a",
            "captured": "b",
            "severity": s,
            "message": "",
        }
        for i, s in enumerate(severities)
    ]


@pytest.mark.parametrize(
    ("entries", "level"),
    [
        ([], "none"),
        (drift("info"), "none"),
        (drift("info", "minor"), "minor"),
        (drift("minor", "major", "info"), "major"),
        (drift("catastrophic"), "none"),
        ([{"field": "x"}, "not an entry"], "none"),
        ("not a list", "none"),
    ],
)
def test_drift_is_the_most_severe_entry(entries: Any, level: str) -> None:
    assert run_drift(entries) == level


def test_drift_of_each_run_is_in_the_document(make_campaign: Any) -> None:
    campaign = make_campaign(repetitions=1)
    cold, warm = runs(campaign)[("cold-c1", 1)], runs(campaign)[("warm-c1", 1)]
    Run.objects.filter(pk=cold.pk).update(drift=drift("minor", "major"))
    Run.objects.filter(pk=warm.pk).update(drift=drift("info"))

    document = results_document(campaign=campaign)

    assert {r["scenario"]: r["drift"] for r in document["runs"]} == {
        "cold-c1": "major",
        "warm-c1": "none",
    }


def test_runs_and_metrics_come_in_a_fixed_order(make_campaign: Any) -> None:
    campaign = make_campaign(repetitions=3)
    for run in campaign.runs.all():
        finish(
            run,
            metrics=[
                {**TTFT, "stat": "p50", "source_key": "b"},
                {"name": "read_iops", "stat": "mean", "value": 9.0, "unit": "IO/s"},
                {**TTFT, "source_key": "a"},
            ],
        )

    document = results_document(campaign=campaign)

    keys = [(r["scenario"], r["repetition"]) for r in document["runs"]]
    assert keys == [(s, n) for s in ("cold-c1", "warm-c1") for n in (1, 2, 3)]
    assert [(m["name"], m["stat"]) for m in document["runs"][0]["metrics"]] == [
        ("read_iops", "mean"),
        ("ttft_ms", "p50"),
        ("ttft_ms", "p99"),
    ]
    assert document == results_document(campaign=campaign)


def test_only_the_current_attempts_metrics_count(make_campaign: Any) -> None:
    campaign = make_campaign(repetitions=1)
    run = finish(runs(campaign)[("cold-c1", 1)], metrics=[TTFT])
    RunMetric.objects.create(  # left by an earlier attempt the reaper gave up on
        run=run, attempt=run.attempt + 1, name="ttft_ms", stat="p50", value=1.0,
        unit="ms", source_path="metrics.json", source_key="old", method="tool",
    )  # fmt: skip

    (first,) = [
        r
        for r in results_document(campaign=campaign)["runs"]
        if r["id"] == str(run.public_id)
    ]

    assert [(m["stat"], m["value"]) for m in first["metrics"]] == [("p99", 41.5)]


def test_metrics_a_gate_cannot_judge_are_left_out(make_campaign: Any) -> None:
    campaign = make_campaign(repetitions=1)
    run = finish(
        runs(campaign)[("cold-c1", 1)],
        metrics=[
            TTFT,
            {"name": "requests", "stat": "total", "value": 64, "unit": "count"},
            {**TTFT, "stat": "p99.999"},
            {**TTFT, "name": "TTFT-ms"},
            {**TTFT, "stat": "p50", "scenario": "warm-c1"},  # another scenario
            {**TTFT, "stat": "p90", "value": float("inf")},
            {**TTFT, "stat": "p95", "value": float("-inf")},
        ],
    )

    document = results_document(campaign=campaign)

    (first,) = [r for r in document["runs"] if r["id"] == str(run.public_id)]
    assert [(m["name"], m["stat"]) for m in first["metrics"]] == [("ttft_ms", "p99")]
    assert results_problems(document) == []


def test_one_value_per_metric_and_stat(make_campaign: Any) -> None:
    campaign = make_campaign(repetitions=1)
    iops = {"name": "read_iops", "stat": "mean", "unit": "IO/s"}
    run = finish(
        runs(campaign)[("cold-c1", 1)],
        metrics=[
            # fio's jobs: the unscoped aggregate is the run's value
            {**iops, "value": 10.0, "scope": "job-1", "source_path": "fio.json"},
            {**iops, "value": 30.0, "source_path": "fio.json", "source_key": "agg"},
            {**iops, "value": 20.0, "scope": "job-2", "source_path": "fio.json"},
            # two jobs and no aggregate: ambiguous, left out
            {**TTFT, "value": 1.0, "scope": "job-1"},
            {**TTFT, "value": 2.0, "scope": "job-2"},
            # the same value twice: kept once
            {**TTFT, "stat": "p50", "value": 5.0, "source_key": "b"},
            {**TTFT, "stat": "p50", "value": 5.0, "source_key": "a"},
        ],
    )

    document = results_document(campaign=campaign)

    (first,) = [r for r in document["runs"] if r["id"] == str(run.public_id)]
    assert [
        (m["name"], m["stat"], m["value"], m["source"]) for m in first["metrics"]
    ] == [
        ("read_iops", "mean", 30.0, {"file": "fio.json", "key": "agg"}),
        ("ttft_ms", "p50", 5.0, {"file": "metrics.json", "key": "a"}),
    ]
    assert results_problems(document) == []


def _metrics_for_all(campaign: Campaign) -> None:
    for run in campaign.runs.all():
        finish(run, metrics=[TTFT, {**TTFT, "stat": "p50", "value": 20.0}])


def test_query_count_is_the_same_for_2_and_12_runs(
    make_campaign: Any, django_assert_num_queries: Any
) -> None:
    small, large = make_campaign(repetitions=1), make_campaign(repetitions=6)
    _metrics_for_all(small)
    _metrics_for_all(large)
    assert small.runs.count() == 2
    assert large.runs.count() == 12

    with django_assert_num_queries(2):
        two = results_document(campaign=small)
    with django_assert_num_queries(2):
        twelve = results_document(campaign=large)

    assert len(two["runs"]) == 2
    assert len(twelve["runs"]) == 12
    assert all(len(r["metrics"]) == 2 for r in twelve["runs"])
