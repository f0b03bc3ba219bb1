"""``results_document`` carries a run's flagged anti-gaming checks (``checks``,
the flagged ids) and leaves the key out where none is flagged, so a stop-loss
``check_flagged`` halts a gate on the server's own documents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from accounts.models import Organisation
from artifacts.models import Bundle
from benchmarks.models import Run
from gates.lib.engine import evaluate_plan
from gates.lib.engine.validate import results_problems
from gates.selectors.results import results_document
from procurement.models import Rfp
from tests.artifacts.ingest_support import (
    upload_rfp,  # noqa: F401 (fixture rfp)
)
from tests.benchmarks.runner.support import accepted_bundle, finish, make_pool, start
from tests.gates.engine.support import criterion, plan

pytestmark = pytest.mark.django_db

TTFT = {"name": "ttft_ms", "stat": "p99", "value": 41.5, "unit": "ms"}


def _check(check_id: str, flagged: bool, applicable: bool = True) -> dict[str, Any]:
    return {"id": check_id, "applicable": applicable, "flagged": flagged,
            "detail": "…", "values": {}}  # fmt: skip


@pytest.fixture
def campaign_runs(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation,
    buyer_org: Organisation, labops: Any,
) -> dict[str, Run]:  # fmt: skip
    bundle: Bundle = accepted_bundle(tmp_path / "b", rfp, vendor_a_org, vendor_a)
    pool = make_pool(buyer_org.engages.get(kind=Organisation.Kind.LAB))
    campaign = start(bundle, pool, labops)
    return {r.scenario_name: r for r in campaign.runs.all()}


def test_flagged_checks_are_listed_and_unflagged_ones_left_out(
    campaign_runs: dict[str, Run],
) -> None:
    cold, warm = campaign_runs["cold-c1"], campaign_runs["warm-c1"]
    for run in (cold, warm):
        finish(run, metrics=[{**TTFT, "source_key": "metrics[0].value"}])
    Run.objects.filter(pk=cold.pk).update(checks=[
        _check("seed_ignored", True), _check("cold_cache_unproven", False),
        _check("working_set_fits_in_memory", True),
    ])  # fmt: skip
    Run.objects.filter(pk=warm.pk).update(
        checks=[_check("seed_ignored", False, applicable=False)]
    )

    document = results_document(campaign=cold.campaign)

    by_scenario = {r["scenario"]: r for r in document["runs"]}
    assert by_scenario["cold-c1"]["checks"] == [
        "seed_ignored", "working_set_fits_in_memory",
    ]  # fmt: skip
    assert "checks" not in by_scenario["warm-c1"]
    assert results_problems(document) == []


def test_a_flagged_run_halts_a_gate_with_check_flagged(
    campaign_runs: dict[str, Run],
) -> None:
    run = campaign_runs["cold-c1"]
    finish(run, metrics=[{**TTFT, "source_key": "metrics[0].value"}])
    Run.objects.filter(pk=run.pk).update(checks=[_check("cold_cache_unproven", True)])
    stop = {"id": "cold", "check_flagged": "cold_cache_unproven"}
    gate_plan = plan(criterion(scenario="cold-c1", min_runs=1), stop_loss=[stop])

    (evaluation,) = evaluate_plan(gate_plan, results_document(campaign=run.campaign))

    assert evaluation["verdict"] == "HALTED"
    assert evaluation["stop_loss"][0]["runs"] == [str(run.public_id)]
