"""Anti-gaming checks recorded on real runs (the lab agent in process, a real
harness in the sandbox): the lab-issued seed reaches the harness, a
seed_sensitive scenario is re-run with another seed and a harness that ignores
it is flagged, a working set that fits in host memory is flagged, a cold-cache
run records the page cache's sizes; the run page and the API show them."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from artifacts.storage.blobs import blob_open
from benchmarks import conf
from benchmarks.lib.sandbox.capabilities import DROP_CACHES
from benchmarks.models import Campaign, LabPool, Run, RunOutput
from benchmarks.services.pools import host_register
from benchmarks.services.reaper import run_reap
from benchmarks.services.runs import run_claim, run_report
from tests.benchmarks.in_process_agent import execute_in_process
from tests.benchmarks.runner.support import (
    GOOD_HARNESS,
    accepted_bundle,
    runs_of,
    start,
    worker,
)

pytestmark = pytest.mark.django_db

# Outputs that depend on REPROGATE_SEED (the seed itself is one of the values).
SEEDED_HARNESS = b"""#!/bin/sh
set -eu
echo "seed: ${REPROGATE_SEED:-none}"
cat > "$REPROGATE_OUTPUT_DIR/metrics.json" <<JSON
{"metrics": [{"name": "ttft_ms", "stat": "p99", "value": 41.5, "unit": "ms"},
             {"name": "sampled_requests", "stat": "max", "value": $REPROGATE_SEED,
              "unit": "1"}]}
JSON
"""
# The same bytes whatever the seed (it is printed, never used).
IGNORING_HARNESS = SEEDED_HARNESS.replace(b"$REPROGATE_SEED,", b"7,")


def _scenario(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "cache": "warm", "concurrency": 1, "batch_size": 1,
            "duration_s": 1, **fields}  # fmt: skip


@pytest.fixture
def campaign_of(
    tmp_path: Path, rfp: Any, vendor_a: Any, vendor_a_org: Any, pool: LabPool,
    labops: Any,
) -> Any:  # fmt: skip
    def build(harness: bytes, *scenarios: dict[str, Any]) -> Campaign:
        bundle = accepted_bundle(
            tmp_path / "b", rfp, vendor_a_org, vendor_a, harness=harness,
            scenarios=list(scenarios),
        )  # fmt: skip
        return start(bundle, pool, labops)

    return build


def _check(run: Run, check_id: str) -> dict[str, Any]:
    return next(c for c in run.checks if c["id"] == check_id)


def test_a_harness_that_ignores_the_seed_is_flagged(campaign_of: Any) -> None:
    campaign = campaign_of(IGNORING_HARNESS, _scenario("s", seed_sensitive=True))

    outcome, run = execute_in_process(runs_of(campaign)[0])

    assert outcome == Run.State.SUCCEEDED, run.reason
    assert f"seed: {run.seed}" in run.log_tail  # the lab's seed reached it
    check = _check(run, "seed_ignored")
    assert (check["applicable"], check["flagged"]) == (True, True)
    assert check["values"]["seed"] == run.seed
    assert check["values"]["second_seed"] not in (None, run.seed)
    # the re-run's outputs are compared, never stored as the run's
    assert list(RunOutput.objects.filter(run=run).values_list("path", flat=True)) == [
        "metrics.json"
    ]


def test_a_harness_that_uses_the_seed_is_not_flagged(campaign_of: Any) -> None:
    campaign = campaign_of(SEEDED_HARNESS, _scenario("s", seed_sensitive=True))

    outcome, run = execute_in_process(runs_of(campaign)[0])

    assert outcome == Run.State.SUCCEEDED, run.reason
    check = _check(run, "seed_ignored")
    assert (check["applicable"], check["flagged"]) == (True, False)
    digests = check["values"]["outputs"]["metrics.json"]
    assert digests["sha256"] != digests["second_sha256"]
    assert run.metrics.get(name="sampled_requests").value == float(run.seed)


def test_a_scenario_not_seed_sensitive_is_run_once(campaign_of: Any) -> None:
    campaign = campaign_of(IGNORING_HARNESS, _scenario("s"))

    _, run = execute_in_process(runs_of(campaign)[0])

    check = _check(run, "seed_ignored")
    assert (check["applicable"], check["flagged"]) == (False, False)
    assert [c["id"] for c in run.checks] == [
        "seed_ignored", "cold_cache_unproven", "working_set_fits_in_memory",
    ]  # fmt: skip


def test_a_working_set_that_fits_in_host_memory_is_flagged(campaign_of: Any) -> None:
    campaign = campaign_of(
        GOOD_HARNESS,
        _scenario("small", working_set_bytes=1 << 30),
        _scenario("large", working_set_bytes=1 << 62),
    )
    small, large = runs_of(campaign)

    _, small = execute_in_process(small)
    _, large = execute_in_process(large)

    memory = small.environment["memory"]["total_bytes"]
    check = _check(small, "working_set_fits_in_memory")
    assert check["flagged"] is True
    assert check["values"] == {
        "working_set_bytes": 1 << 30, "host_memory_bytes": memory, "factor": 5,
        "ratio": round((1 << 30) / memory, 3),
    }  # fmt: skip
    assert _check(large, "working_set_fits_in_memory")["flagged"] is False


@pytest.mark.skipif(
    not os.access(DROP_CACHES, os.W_OK),
    reason="dropping the page cache needs root outside a container",
)
def test_a_cold_cache_run_records_the_sizes_before_and_after_the_drop(
    campaign_of: Any, client_for: Any, buyer: Any
) -> None:
    campaign = campaign_of(GOOD_HARNESS, _scenario("c", cache="cold"))

    _, run = execute_in_process(runs_of(campaign)[0])
    page = client_for(buyer).get(reverse("benchmarks:run_detail", args=[run.public_id]))

    check = _check(run, "cold_cache_unproven")
    assert check["applicable"] is True
    values = check["values"]
    assert values["dropped"] is True
    assert run.cache_dropped is True
    assert isinstance(values["before_bytes"], int)
    assert isinstance(values["after_bytes"], int)
    proven = values["after_bytes"] <= max(values["before_bytes"] / 2, 64 << 20)
    assert check["flagged"] is not proven
    assert "before the drop" in page.content.decode().split("run-cache-sizes")[1]


@pytest.mark.skipif(
    os.access(DROP_CACHES, os.W_OK), reason="this host may drop the page cache"
)
def test_a_cold_cache_the_host_may_not_drop_is_flagged_unproven(
    campaign_of: Any,
) -> None:
    campaign = campaign_of(GOOD_HARNESS, _scenario("c", cache="cold"))

    _, run = execute_in_process(runs_of(campaign)[0])

    check = _check(run, "cold_cache_unproven")
    assert (check["applicable"], check["flagged"]) == (True, True)
    assert check["values"]["dropped"] is False
    assert isinstance(check["values"]["before_bytes"], int)


def test_the_run_page_and_api_show_the_seed_and_checks(
    campaign_of: Any, client_for: Any, buyer: Any
) -> None:
    campaign = campaign_of(
        IGNORING_HARNESS, _scenario("s", seed_sensitive=True, working_set_bytes=1)
    )
    _, run = execute_in_process(runs_of(campaign)[0])

    page = client_for(buyer).get(reverse("benchmarks:run_detail", args=[run.public_id]))
    api = client_for(buyer).get(f"/api/v1/runs/{run.public_id}/")

    body = page.content.decode()
    assert f"<code>{run.seed}</code>" in body
    assert 'data-check="seed_ignored" data-flagged="true"' in body
    assert 'data-check="working_set_fits_in_memory" data-flagged="true"' in body
    assert 'data-check="cold_cache_unproven" data-flagged="false"' in body
    assert "not applicable" in body
    assert "run-cache-sizes" not in body  # a warm scenario
    assert "Harness ignores the lab&#x27;s seed" in body
    assert api.status_code == 200
    assert api.json()["seed"] == run.seed
    assert api.json()["checks"] == run.checks


def test_a_seed_sensitive_run_has_twice_its_wall_limit_before_it_is_reaped(
    campaign_of: Any, pool: LabPool, clock: Any
) -> None:
    campaign = campaign_of(GOOD_HARNESS, _scenario("s", seed_sensitive=True))
    run = runs_of(campaign)[0]
    host = host_register(pool=pool, worker=worker())
    assert run_claim(run_id=run.pk, attempt=1, host=host) is not None
    once = run.wall_limit_s + conf.wall_grace_seconds()

    for _ in range(int(once / 100) + 1):  # past one harness's limit, beating
        clock.advance(seconds=100)
        run_report(run_id=run.pk, attempt=1)
    kept = run_reap()
    for _ in range(int(run.wall_limit_s / 100) + 1):  # past the second one's too
        clock.advance(seconds=100)
        run_report(run_id=run.pk, attempt=1)
    reaped = run_reap()

    assert kept.failed == []
    assert reaped.failed == [run.pk]
    assert (
        f"wall-clock limit {2 * run.wall_limit_s} s"
        in Run.objects.get(pk=run.pk).reason
    )


def test_the_host_signs_the_seed_and_checks_in_the_run_s_statement(
    campaign_of: Any,
) -> None:
    campaign = campaign_of(IGNORING_HARNESS, _scenario("s", seed_sensitive=True))
    _, run = execute_in_process(runs_of(campaign)[0])

    with blob_open(run.statement_blob) as stored:
        envelope = json.loads(stored.read())
    predicate = json.loads(base64.b64decode(envelope["payload"]))["predicate"]

    assert predicate["seed"] == run.seed
    assert predicate["checks"] == run.checks
    assert predicate["checks"][0]["flagged"] is True


def test_the_campaign_page_names_a_run_s_flagged_checks(
    campaign_of: Any, client_for: Any, buyer: Any
) -> None:
    campaign = campaign_of(GOOD_HARNESS, _scenario("a"), _scenario("b"))
    flagged, _ = runs_of(campaign)
    Run.objects.filter(pk=flagged.pk).update(checks=[
        {"id": "seed_ignored", "applicable": True, "flagged": True,
         "detail": "Same outputs.", "values": {}},
    ])  # fmt: skip

    page = client_for(buyer).get(
        reverse("benchmarks:campaign_detail", args=[campaign.public_id])
    )

    body = page.content.decode()
    assert body.count('data-testid="run-flagged"') == 1
    assert (
        '<span class="run-state drift-major" data-testid="run-flagged">'
        "seed_ignored</span>" in body
    )
